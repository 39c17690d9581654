"""``python -m manip_dynamics.equations ARM.urdf [options]``: closed-form equations of motion.

Prints (or writes with ``--output``) M(q), the Christoffel symbols, C(q, qd) qd, g(q),
friction and J^T F of the chain root -> ``--tip`` as LaTeX (default), sympy expressions,
a Python module or a C file (g, M, C qd only). Progress of each stage (derivation and
printing) goes to stderr; ``--time-limit`` (default 300 s) covers the whole command, the
derivation and the printing, and stops it with a message naming the stage. Exit status 0,
or 2 with a one-line ``error:`` message (the project's errors: URDFError for a tree or a
broken description, UnsupportedJointError for a mimic joint, InputError for too many
joints, DerivationTimeout for the time limit; a time limit that is not a finite number > 0,
a gravity that is not finite, an --output in a folder that does not exist).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

from sympy.printing.str import StrPrinter

from ..core.dynamics.description import add_arguments, load_description
from ..core.errors import ManipDynamicsError
from .budget import Budget
from .chain import MAX_JOINTS
from .codegen import c_source, python_source
from .derive import derive
from .latex import latex_document


def sympy_text(eq, budget=None):
    """The terms as sympy expressions (``Matrix([[...], ...])``, sympy input), one ``name =
    ...`` per line; terms in each sum's own order (sorting every sum of an unsimplified arm
    was most of the printing time). budget: progress ``printing sympy`` and the limit."""
    budget = Budget() if budget is None else budget
    terms = (("M", eq.M), ("C", eq.C), ("Cqd", eq.Cqd), ("g", eq.g), ("tau_fr", eq.tau_fr),
             ("J", eq.J), ("JTF", eq.JTF))
    budget.begin("printing sympy", sum(len(A) for _, A in terms))
    printer = StrPrinter({"order": "none"})

    def entry(e):
        budget.tick()
        return printer.doprint(e)

    lines = [f"# q = {list(eq.q)} ({', '.join(eq.chain.joint_names)}), qd = {list(eq.qd)}"]
    for name, A in terms:
        rows = ", ".join("[" + ", ".join(entry(A[r, c]) for c in range(A.cols)) + "]"
                         for r in range(A.rows))
        lines.append(f"{name} = Matrix([{rows}])")
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
    p.add_argument("--time-limit", type=float, default=300.0,
                   help="seconds for the derivation and the printing (default 300)")
    p.add_argument("--max-joints", type=int, default=MAX_JOINTS,
                   help=f"refuse chains with more coordinates (default {MAX_JOINTS})")
    p.add_argument("--dynamics-file", metavar="ARM.dynamics.yaml", default=None,
                   help="a dynamics side file (docs/side_file.md): its armature (M + "
                        "diag(Ia)) and friction replace the URDF's (default: none)")
    p.add_argument("--prefix", help="C function prefix (default: the robot's name)")
    p.add_argument("--output", "-o", help="write here instead of stdout")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_arguments(p, "file")   # --xacro-arg, --package-path (core/dynamics/description.py)
    return p


class _Progress:
    """progress(stage, done, total, elapsed) on one stderr line, at most 5 updates a second
    within a stage (a printing stage has one step per entry)."""

    def __init__(self):
        self.stage, self.shown = None, 0.0

    def __call__(self, stage, done, total, elapsed):
        now = time.monotonic()
        if stage == self.stage and now - self.shown < 0.2 and done != total:
            return
        self.stage, self.shown = stage, now
        at = f" {done}/{total}" if total else ""
        print(f"\r[{elapsed:6.1f} s] {stage}{at}\033[K", end="", file=sys.stderr, flush=True)


def _argument_error(args):
    """The one-line message of an argument the parser accepts but the tool cannot use."""
    if not (math.isfinite(args.time_limit) and args.time_limit > 0):
        return f"--time-limit: must be a finite number of seconds > 0, got {args.time_limit:g}"
    if not all(math.isfinite(g) for g in args.gravity):
        return ("--gravity: must be three finite numbers (m/s^2), got "
                + " ".join(f"{g:g}" for g in args.gravity))
    if args.output:
        folder = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(folder):
            return f"--output: folder '{folder}' does not exist (for '{args.output}')"
    return None


def _render(args, eq, budget):
    if args.format == "latex":
        return latex_document(eq, budget=budget)
    if args.format == "sympy":
        return sympy_text(eq, budget=budget)
    if args.format == "python":
        return python_source(eq, budget=budget)
    return c_source(eq, args.prefix, budget=budget)


def _write(path, text):
    if not path:
        sys.stdout.write(text)
        return None
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        return f"--output: cannot write '{path}': {e.strerror}"
    return None


def main(argv=None):
    """The command line (module docstring); returns the exit status."""
    args = _parser().parse_args(argv)
    problem = _argument_error(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        xml = load_description(args.urdf, args.xacro_arg, args.package_path)
        with Budget(args.time_limit, None if args.quiet else _Progress()) as budget:
            eq = derive(xml, simplify=args.simplify, budget=budget, tip=args.tip,
                        joints=args.joints, gravity=args.gravity,
                        symbolic_parameters=args.symbolic_parameters, max_joints=args.max_joints,
                        side_file=args.dynamics_file)
            text = _render(args, eq, budget)
            budget.step("done")
    except ManipDynamicsError as e:
        problem = str(e)
    finally:
        if not args.quiet:
            print(file=sys.stderr)
    problem = problem or _write(args.output, text)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
