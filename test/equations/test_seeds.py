"""The tool's symbolic M, C qd (and C), g against closed forms derived by hand for the
seeds' worked examples (docs/equations.md sets them side by side with the seeds):

* seed 000, the RP arm, q = (theta, r), link 1's com at (a, b), the slider's at its origin;
* seed 001, the 2R arm with point masses at the link ends (Lynch & Park 8.9);
* seed 003, the 2R arm of uniform thin rods (corrected);
* seed 004, the 2R arm with the com on the link axis and the dynamic coefficients a1..a5.

Arms from the core tests' urdf_factory: planar in x-y, axes +z, gravity (0, -g0, 0). The
tool's parameter symbols (m_i, r_ci, l_i, I_izz, g_0) are substituted by the seeds' (e.g.
r_c1 -> L1/2 for a rod) and every entry of the difference must simplify to exactly 0.
Where a seed slips, the seed as written is shown to differ from the tool by exactly the
slip."""
from __future__ import annotations

import pytest
import sympy as sp

from core import urdf_factory as uf

from .arms import derived

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
GRAVITY = (0.0, -9.81, 0.0)


def S(name):
    return sp.Symbol(name, real=True)


q1, q2, qd1, qd2 = S("q_1"), S("q_2"), S("qd_1"), S("qd_2")
m1, m2, g0, l1, l2 = S("m_1"), S("m_2"), S("g_0"), S("l_1"), S("l_2")
c1, s1, c2, s2 = sp.cos(q1), sp.sin(q1), sp.cos(q2), sp.sin(q2)
c12, s12 = sp.cos(q1 + q2), sp.sin(q1 + q2)


def tool(xml, sub=None):
    eq = derived(xml, simplify=True, symbolic_parameters=True, gravity=GRAVITY)
    sub = sub or {}
    return eq, {k: getattr(eq, k).xreplace(sub) for k in ("M", "Cqd", "C", "g", "JTF")}


def assert_same(actual, expected):
    diff = (sp.Matrix(actual) - sp.Matrix(expected)).applyfunc(sp.simplify)
    assert diff == sp.zeros(*diff.shape), diff


def differs_by(actual, expected, slip):
    """actual - expected simplifies to exactly ``slip`` (a matrix)."""
    diff = (sp.Matrix(actual) - sp.Matrix(expected) - sp.Matrix(slip)).applyfunc(sp.simplify)
    return diff == sp.zeros(*diff.shape)


# ----------------------------------------------------------------- seed 000: RP arm
def test_seed_000_rp_arm():
    a, b, H1, H2, th, r, thd, rd = S("r_c1x"), S("r_c1y"), S("I_1zz"), S("I_2zz"), q1, q2, qd1, qd2
    eq, t = tool(uf.rp_arm(2.0, 1.5, (0.3, 0.05), 0.06, 0.01))
    assert [b_.kind for b_ in eq.chain.bodies] == ["revolute", "prismatic"]
    Hbar = H1 + m1 * (a ** 2 + b ** 2) + H2
    assert_same(t["M"], [[Hbar + m2 * r ** 2, 0], [0, m2]])
    assert_same(t["Cqd"], [2 * m2 * r * rd * thd, -m2 * r * thd ** 2])
    assert_same(t["C"], [[m2 * r * rd, m2 * r * thd], [-m2 * r * thd, 0]])
    g = [g0 * (m1 * (a * sp.cos(th) - b * sp.sin(th)) + m2 * r * sp.cos(th)), g0 * m2 * sp.sin(th)]
    assert_same(t["g"], g)
    # the seed's G = m g (r cos th, sin th) (m = m2) keeps only the slider: it misses
    # exactly link 1's m1 g0 (a cos th - b sin th)
    seed_G = [m2 * g0 * r * sp.cos(th), m2 * g0 * sp.sin(th)]
    assert differs_by(t["g"], seed_G, [g0 * m1 * (a * sp.cos(th) - b * sp.sin(th)), 0])
    # J^T F at the slider origin, F = (f_x, f_y, ..., n_z): J = [[-r s, c], [r c, s]], w = (0, 0, 1)
    fx, fy, nz = S("f_x"), S("f_y"), S("n_z")
    assert_same(t["JTF"], [-fx * r * sp.sin(th) + fy * r * sp.cos(th) + nz,
                           fx * sp.cos(th) + fy * sp.sin(th)])


# ----------------------------------------------------------------- seed 001: point masses
def test_seed_001_point_masses():
    L1, L2 = l1, l2
    eq, t = tool(uf.point_mass_2r(1.5, 0.8, 0.6, 0.45), {S("r_c1"): l1, S("r_c2"): l2})
    assert_same(t["M"], [[m1 * L1 ** 2 + m2 * (L1 ** 2 + 2 * L1 * L2 * c2 + L2 ** 2),
                          m2 * (L1 * L2 * c2 + L2 ** 2)],
                         [m2 * (L1 * L2 * c2 + L2 ** 2), m2 * L2 ** 2]])
    assert_same(t["Cqd"], [-m2 * L1 * L2 * s2 * (2 * qd1 * qd2 + qd2 ** 2),
                           m2 * L1 * L2 * qd1 ** 2 * s2])
    assert_same(t["g"], [(m1 + m2) * L1 * g0 * c1 + m2 * g0 * L2 * c12, m2 * g0 * L2 * c12])
    fx, fy, nz = S("f_x"), S("f_y"), S("n_z")
    J = sp.Matrix([[-L1 * s1 - L2 * s12, -L2 * s12], [L1 * c1 + L2 * c12, L2 * c12]])
    assert_same(t["JTF"], J.T * sp.Matrix([fx, fy]) + sp.Matrix([nz, nz]))


# ----------------------------------------------------------------- seed 003: rods
def test_seed_003_rods():
    L1, L2 = l1, S("L_2")
    sub = {S("r_c1"): L1 / 2, S("r_c2"): L2 / 2, S("I_1zz"): m1 * L1 ** 2 / 12,
           S("I_2zz"): m2 * L2 ** 2 / 12}
    eq, t = tool(uf.rod_2r(1.5, 0.8, 0.6, 0.45), sub)
    M = [[m1 * L1 ** 2 / 3 + m2 * (L1 ** 2 + L1 * L2 * c2 + L2 ** 2 / 3),
          m2 * (L1 * L2 * c2 / 2 + L2 ** 2 / 3)],
         [m2 * (L1 * L2 * c2 / 2 + L2 ** 2 / 3), m2 * L2 ** 2 / 3]]
    V = [-m2 * L1 * L2 * s2 * (qd1 * qd2 + qd2 ** 2 / 2), m2 * L1 * L2 * s2 * qd1 ** 2 / 2]
    G = [g0 * ((m1 / 2 + m2) * L1 * c1 + m2 * L2 * c12 / 2), g0 * m2 * L2 * c12 / 2]
    assert_same(t["M"], M)
    assert_same(t["Cqd"], V)
    assert_same(t["g"], G)
    # the seed as written: V1 = -m2 L1 L2 s2 (qd1 qd2 - 1/2 qd2^2) and G1 with s12
    seed_V = [-m2 * L1 * L2 * s2 * (qd1 * qd2 - qd2 ** 2 / 2), V[1]]
    assert differs_by(t["Cqd"], seed_V, [-m2 * L1 * L2 * s2 * qd2 ** 2, 0])
    seed_G1 = g0 * (m1 / 2 * L1 * c1 + m2 * L1 * c1 + m2 * L2 * s12 / 2)
    assert not differs_by(t["g"][0:1, :], [seed_G1], [0])


# ----------------------------------------------------------------- seed 004: a1..a5
def test_seed_004_dynamic_coefficients():
    d1, d2, I1, I2 = S("r_c1"), S("r_c2"), S("I_1zz"), S("I_2zz")
    xml = uf.planar_2r(1.5, 0.8, 0.6, 0.45, (0.25, 0.0), (0.2, 0.0),
                       uf.planar_inertia(0.04), uf.planar_inertia(0.02))
    eq, t = tool(xml)
    a1 = I1 + m1 * d1 ** 2 + I2 + m2 * d2 ** 2 + m2 * l1 ** 2
    a2, a3 = m2 * l1 * d2, I2 + m2 * d2 ** 2
    a4, a5 = g0 * (m1 * d1 + m2 * l1), g0 * m2 * d2
    assert_same(t["M"], [[a1 + 2 * a2 * c2, a3 + a2 * c2], [a3 + a2 * c2, a3]])
    assert_same(t["Cqd"], [-a2 * s2 * (qd2 ** 2 + 2 * qd1 * qd2), a2 * s2 * qd1 ** 2])
    assert_same(t["C"], [[-a2 * s2 * qd2, -a2 * s2 * (qd1 + qd2)], [a2 * s2 * qd1, 0]])
    assert_same(t["g"], [a4 * c1 + a5 * c12, a5 * c12])
    # the seed's "a2 = m2 l1^2 d2" is not the coefficient of 2 c2 in m11
    assert not differs_by(t["M"][0:1, 0:1], [[a1 + 2 * m2 * l1 ** 2 * d2 * c2]], [[0]])
