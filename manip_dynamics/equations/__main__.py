"""``python -m manip_dynamics.equations ARM.urdf [options]``: closed-form equations of motion.

Prints (or writes with ``--output``) M(q), the Christoffel symbols, C(q, qd) qd, g(q),
friction and J^T F of the chain root -> ``--tip`` as LaTeX (default), sympy expressions,
a Python module or a C file (g, M, C qd only). Progress of slow stages goes to stderr;
``--time-limit`` (default 300 s) stops a derivation that runs too long with a message naming
the stage. Exit status 0, or 2 with a one-line ``error:`` message (the project's errors:
URDFError for a tree or a broken description, UnsupportedJointError for a mimic joint,
InputError for too many joints, DerivationTimeout for the time limit).
"""
from __future__ import annotations

import argparse
import sys

import sympy as sp

from ..core.dynamics.description import add_arguments, load_description
from ..core.errors import ManipDynamicsError
from .chain import MAX_JOINTS
from .codegen import c_source, python_source
from .derive import derive
from .latex import latex_document


def sympy_text(eq):
    """The terms as sympy expressions (``sstr``), one ``name = ...`` per line."""
    lines = [f"# q = {list(eq.q)} ({', '.join(eq.chain.joint_names)}), qd = {list(eq.qd)}",
             f"M = {sp.sstr(eq.M)}", f"C = {sp.sstr(eq.C)}", f"Cqd = {sp.sstr(eq.Cqd)}",
             f"g = {sp.sstr(eq.g)}", f"tau_fr = {sp.sstr(eq.tau_fr)}",
             f"J = {sp.sstr(eq.J)}", f"JTF = {sp.sstr(eq.JTF)}"]
    if eq.parameters:
        lines.append("parameters = {" + ", ".join(
            f"{s.name!r}: {v!r}" for s, v in eq.parameters.items()) + "}")
    return "\n".join(lines) + "\n"


def _parser():
    p = argparse.ArgumentParser(prog="python -m manip_dynamics.equations", description=(
        "Closed-form equations of motion (M, Christoffel symbols, C qd, g, friction, J^T F) "
        "of a small serial arm from its URDF, with sympy."))
    p.add_argument("urdf", help="the arm's URDF or xacro file")
    p.add_argument("--tip", help="tip link (default: the leaf of the longest chain)")
    p.add_argument("--joints", nargs="+", metavar="JOINT",
                   help="the joints to keep as coordinates (others locked at q = 0)")
    p.add_argument("--format", choices=("latex", "sympy", "python", "c"), default="latex")
    p.add_argument("--simplify", action="store_true", help="trigsimp every entry (slower)")
    p.add_argument("--symbolic-parameters", action="store_true",
                   help="masses, centres of mass, inertias, link offsets, friction and "
                        "gravity as named symbols instead of the URDF's numbers")
    p.add_argument("--gravity", nargs=3, type=float, default=(0.0, 0.0, -9.81),
                   metavar=("GX", "GY", "GZ"), help="gravity in the root frame, m/s^2")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds (default 300)")
    p.add_argument("--max-joints", type=int, default=MAX_JOINTS,
                   help=f"refuse chains with more coordinates (default {MAX_JOINTS})")
    p.add_argument("--prefix", help="C function prefix (default: the robot's name)")
    p.add_argument("--output", "-o", help="write here instead of stdout")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_arguments(p, "file")   # --xacro-arg, --package-path (core/dynamics/description.py)
    return p


def _progress(stage, done, total, elapsed):
    at = f" {done}/{total}" if total else ""
    print(f"\r[{elapsed:6.1f} s] {stage}{at}\033[K", end="", file=sys.stderr, flush=True)


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        xml = load_description(args.urdf, args.xacro_arg, args.package_path)
        eq = derive(xml, simplify=args.simplify, time_limit=args.time_limit,
                    progress=None if args.quiet else _progress, tip=args.tip,
                    joints=args.joints, gravity=args.gravity,
                    symbolic_parameters=args.symbolic_parameters, max_joints=args.max_joints)
    except ManipDynamicsError as e:
        print(("" if args.quiet else "\n") + f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if not args.quiet:
            print(file=sys.stderr)
    render = {"latex": latex_document, "sympy": sympy_text, "python": python_source,
              "c": lambda e: c_source(e, args.prefix)}[args.format]
    text = render(eq)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
