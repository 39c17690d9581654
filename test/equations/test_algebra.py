"""manip_dynamics.equations.algebra against sympy's own operations: ``derivative`` is the
expression ``sp.diff`` gives, ``matmul`` the one ``A * B`` gives (``==``: the same tree, the
same Floats), and the derivation's Christoffel symbols are the textbook formula written out
here with ``sp.diff``, on chains with general, axis-aligned and parallel axes, numbers and
symbolic parameters, simplified (powers) or not."""
from __future__ import annotations

import pathlib

import pytest
import sympy as sp

from manip_dynamics.equations import derive
from manip_dynamics.equations.algebra import derivative, matmul

from .arms import derived, random_chain

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROBOTS = pathlib.Path(__file__).resolve().parents[2] / "manip_dynamics" / "robots"


def _equations(case):
    if case == "2r-symbolic-simplified":                  # trigsimp'd M: powers, products
        return derived((ROBOTS / "planar_2r.urdf").read_text(), simplify=True,
                       symbolic_parameters=True)
    if case == "3-general-symbolic":
        return derive(random_chain(3, seed=3, general=True), symbolic_parameters=True)
    if case == "3-axis-aligned":
        return derive(random_chain(3, seed=5, general=False))
    return derive(random_chain(4, seed=4, general="planar"))     # merged parallel axes


CASES = ("2r-symbolic-simplified", "3-general-symbolic", "3-axis-aligned", "4-planar")


@pytest.mark.parametrize("case", CASES)
def test_christoffel_symbols_are_the_direct_formula(case):
    """c_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) with sp.diff, entry by entry (M_ij
    of the upper triangle, as the derivation: the triangles are equal in value, not always in
    form), and C qd = C @ qd, J^T F as sympy's products: the same expressions."""
    eq = _equations(case)
    q, n = eq.q, eq.n

    def dM(i, j, k):
        return sp.diff(eq.M[min(i, j), max(i, j)], q[k])

    for i in range(n):
        for j in range(n):
            for k in range(n):
                ref = (dM(i, j, k) + dM(i, k, j) - dM(j, k, i)) / 2
                assert eq.christoffel[i][j][k] == ref, (case, i, j, k)
    assert any(c != 0 for plane in eq.christoffel for row in plane for c in row)
    if not eq.simplified:                                   # (simplify rewrites C qd)
        assert eq.Cqd == eq.C * sp.Matrix(eq.qd)
    assert eq.JTF == eq.J.T * eq.F


def _expressions(eq):
    """Entries of M, J, C of ``eq`` and a few shapes the derivation does not make (the
    fallback to sp.diff: tanh, Piecewise, exp; a symbol in an exponent)."""
    x, y = eq.q[0], eq.qd[0]
    yield from eq.M
    yield from eq.J
    yield from eq.C
    yield sp.tanh(x * y) * sp.cos(x) ** 3 / (2 + sp.sin(x))
    yield sp.Piecewise((sp.cos(2 * x), y > 0), (x ** 2, True)) + sp.exp(-x) * y
    yield sp.Float(1.5) ** x * sp.sin(x) ** -2 + sp.sqrt(1 + x ** 2)


@pytest.mark.parametrize("case", CASES)
def test_derivative_is_sp_diff(case):
    """derivative(e, q_k) == sp.diff(e, q_k) for every expression and every q_k, with one memo
    shared by them all (as in a derivation), and 0 for a q_k the expression lacks."""
    eq = _equations(case)
    memo = {}
    checked = 0
    for e in _expressions(eq):
        for x in eq.q + eq.qd[:1]:
            assert derivative(e, x, memo) == sp.diff(e, x), (case, e, x)
            checked += e.has(x)
    assert checked > 10
    assert derivative(sp.cos(eq.q[0]), sp.Symbol("elsewhere"), memo) is sp.S.Zero


def test_matmul_is_the_sympy_product():
    """matmul(A, B) == A * B: the derivation's big matrices, integers, Float zeros, a row
    whose products cancel to zero, empty shapes; a shape mismatch is refused."""
    eq = _equations("3-general-symbolic")
    x, y = sp.symbols("x y", real=True)
    pairs = [(eq.M, eq.M), (eq.C, sp.Matrix(eq.qd)), (eq.J.T, eq.F), (eq.J, eq.J.T),
             (sp.eye(3), sp.Matrix([[1, 2], [3, 4], [5, 6]])),
             (sp.Matrix([[x, -x, 0], [sp.Float(0.0), 2.5 * y, sp.cos(x)]]),
              sp.Matrix([[1, y], [1, 0], [sp.sin(x), 3]])),
             (sp.zeros(2, 0), sp.zeros(0, 3)), (sp.zeros(0, 2), sp.ones(2, 2))]
    for A, B in pairs:
        C = matmul(A, B)
        assert C.shape == (A.rows, B.cols)
        assert C == A * B, (A, B)
    assert matmul(*pairs[5])[0, 0] is sp.S.Zero
    with pytest.raises(sp.ShapeError):
        matmul(eq.M, eq.J)
