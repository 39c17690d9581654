"""URDF strings and numeric helpers for the equations tests.

``random_chain(n, seed)``: a serial chain of n moving joints (revolute, continuous,
prismatic), each with either an axis along +-x/y/z or a random unit axis, a random joint
origin (offset and rpy), a random body (mass, rotated inertial frame, products of inertia),
every other joint followed by a massive link on a fixed joint (merged by the core's parser),
and a massless tool frame at the end. Built with the core tests' ``urdf_factory``.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from core import urdf_factory as uf
from manip_dynamics.equations import derive

KINDS = ("revolute", "continuous", "prismatic")


def _axis(rng, general):
    if general == "planar":
        return np.array([0.0, 0.0, rng.choice((-1.0, 1.0))])
    if not general or rng.random() < 0.5:
        a = np.zeros(3)
        a[rng.integers(3)] = rng.choice((-1.0, 1.0))
        return a
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def _inertial(rng):
    return uf.inertial_xml(rng.uniform(0.3, 2.0), rng.uniform(-0.2, 0.2, 3),
                           rng.uniform(-math.pi, math.pi, 3), uf.random_inertia(rng))


def _rpy(rng, general):
    if general == "planar":
        return (0.0, 0.0, rng.uniform(-math.pi, math.pi))
    if general:
        return rng.uniform(-math.pi, math.pi, 3) if rng.random() < 0.7 else (0, 0, 0)
    return rng.integers(-1, 3, 3) * (math.pi / 2)


def random_chain(n, seed=0, kinds=KINDS, friction=False, general=True):
    """URDF of a random serial chain with n coordinates (see the module docstring).
    general=False: joint axes along +-x/y/z and joint-origin rpy multiples of pi/2 (how real
    arms are described), only the offsets and the bodies random. general="planar": every
    axis +-z, joint origins yawed only (offsets still 3D, bodies still 3D); a prismatic
    joint then slides along z."""
    rng = np.random.default_rng(seed)
    parts, parent = [uf.link_xml("base")], "base"
    for i in range(1, n + 1):
        kind = kinds[rng.integers(len(kinds))]
        link = f"link{i}"
        parts.append(uf.link_xml(link, _inertial(rng)))
        parts.append(uf.joint_xml(
            f"j{i}", kind, parent, link, xyz=rng.uniform(-0.4, 0.4, 3),
            rpy=_rpy(rng, general), axis=_axis(rng, general),
            damping=rng.uniform(0, 0.5) if friction else 0.0,
            friction=rng.uniform(0, 0.3) if friction else 0.0))
        parent = link
        if i % 2 == 0:                      # a massive link on a fixed joint: merged
            parts.append(uf.link_xml(f"welded{i}", _inertial(rng)))
            parts.append(uf.joint_xml(f"weld{i}", "fixed", link, f"welded{i}",
                                      xyz=rng.uniform(-0.3, 0.3, 3),
                                      rpy=rng.uniform(-math.pi, math.pi, 3)))
    parts.append(uf.link_xml("tool"))
    parts.append(uf.joint_xml("tool_joint", "fixed", parent, "tool",
                              xyz=rng.uniform(-0.3, 0.3, 3), rpy=rng.uniform(-1, 1, 3)))
    return uf.robot_xml(f"chain{n}", parts)


def evaluator(eq, *exprs):
    """f(q, qd, F) -> list of numpy arrays, one per sympy matrix in exprs (numeric equations:
    no parameter symbols left). Sums are printed in their own order, not sorted (lambdify's
    default printer sorts every sum's terms: 2.5 times the time on the 6-joint chains, the
    same numbers to round-off)."""
    args = list(eq.q) + list(eq.qd) + list(eq.F)
    fns = [sp.lambdify(args, sp.Matrix(e).tolist(), modules="math", printer=PythonCodePrinter(
        {"fully_qualified_modules": False, "inline": True, "allow_unknown_functions": True,
         "order": "none"})) for e in exprs]

    def call(q, qd=None, F=None):
        qd = np.zeros(len(q)) if qd is None else qd
        F = np.zeros(6) if F is None else F
        vals = [float(x) for x in (*q, *qd, *F)]
        return [np.array(f(*vals), dtype=float) for f in fns]

    return call


def assert_close(actual, expected, tol=1e-12, what=""):
    """|actual - expected| <= tol * max(1, |expected|_max), element-wise."""
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    err = float(np.abs(actual - expected).max(initial=0.0))
    assert err <= tol * scale, f"{what}: max error {err:.3e} > {tol:g} * {scale:.3g}"


@functools.lru_cache(maxsize=None)
def derived(xml, **options):
    """derive(xml, **options), once per test session (the tests share the derivations)."""
    return derive(xml, **options)
