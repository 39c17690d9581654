"""The kernels' own contracts: the bundle buffer layout, the condition-number rule, the
body table, and unknown joint types refused (not treated as prismatic)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from manip_dynamics import RobotModel
from manip_dynamics.core.dynamics import kernels as K
from manip_dynamics.core.dynamics.bodies import BODY, PRISMATIC, REVOLUTE, body_table

from .test_model_api import chain3


def test_bundle_views_mirror_bundle_layout():
    """The numba views (bundle_views) and the Python layout (bundle_layout) agree field by
    field: same names, same order, same blocks of one buffer."""
    N, n, k = 3, 4, 6
    width = sum(math.prod(shape) for _, shape in K.bundle_layout(n, k))
    out = np.arange(N * width, dtype=float)
    views = K.bundle_views(out, N, n, k)
    assert views._fields == tuple(name for name, _ in K.bundle_layout(n, k))
    start = 0
    for (name, shape), view in zip(K.bundle_layout(n, k), views):
        size = math.prod(shape)
        expected = out[N * start:N * (start + size)].reshape((N, *shape))
        np.testing.assert_array_equal(view, expected, err_msg=name)
        start += size


@pytest.mark.parametrize("w_min, w_max, k, chol_ok, expected", [
    (1.0, 4.0, 6, True, 4.0),                        # lambda_max / lambda_min
    (1e-3, 1.0, 3, True, 1e3),
    (6 * 2.220446049250313e-16, 1.0, 6, True, math.inf),   # w_min <= k eps w_max
    (7 * 2.220446049250313e-16, 1.0, 6, True, 1.0 / (7 * 2.220446049250313e-16)),
    (0.0, 0.0, 6, True, math.inf),                   # lambda_max <= 0
    (-1.0, -0.5, 3, True, math.inf),
    (1.0, 2.0, 6, False, math.inf),                  # Cholesky failed
    (-1e-20, 1.0, 6, True, math.inf),                # negative round-off
])
def test_condition_number_rule(w_min, w_max, k, chol_ok, expected):
    got = K.condition_number(w_min, w_max, k, chol_ok)
    if math.isinf(expected):
        assert got == math.inf
    else:
        assert got == pytest.approx(expected, rel=1e-15)


def test_condition_number_of_the_bundle_follows_the_rule():
    """compute_all's condition number is lambda_max / lambda_min of A from numpy, and +inf
    where J loses rank (A exactly singular)."""
    arm = RobotModel.from_urdf_string(chain3())
    rng = np.random.default_rng(3)
    for q in rng.uniform(-2, 2, size=(5, 3)):
        t = arm.compute_all(q, np.zeros(3), "tool", linear_only=True)
        w = np.linalg.eigvalsh(t.A)
        assert t.condition_number == pytest.approx(w[-1] / w[0], rel=1e-6)
    # 6 rows of a 3-dof arm: rank 3, A singular
    assert arm.compute_all(np.zeros(3), np.zeros(3), "tool").condition_number == math.inf


def test_spd_condition_number_is_the_same_rule():
    """spd_condition_number (the nodes' helper for M and any other SPD matrix) gives what the
    bundle gives for A: lambda_max / lambda_min from numpy when well conditioned, +inf for a
    numerically singular A -- never a round-off value such as 3e16, which depends on the BLAS
    kernel (the Panda's panda_link5 moves with 5 joints: its 6 x 6 A has rank 5)."""
    from manip_dynamics import robots
    panda = RobotModel.from_urdf_file(robots.path("panda"))
    q = np.array([0.1, -0.5, 0.2, -2.0, 0.3, 1.6, 0.7])
    t = panda.compute_all(q, np.zeros(7), "panda_link5")
    assert t.condition_number == math.inf and K.spd_condition_number(t.A) == math.inf
    t = panda.compute_all(q, np.zeros(7), "panda_link8")
    w = np.linalg.eigvalsh(t.A)
    assert K.spd_condition_number(t.A) == pytest.approx(t.condition_number, rel=1e-9)
    assert K.spd_condition_number(t.A) == pytest.approx(w[-1] / w[0], rel=1e-9)
    M = panda.mass_matrix(q)
    w = np.linalg.eigvalsh(M)
    assert K.spd_condition_number(M) == pytest.approx(w[-1] / w[0], rel=1e-12)
    # exactly and numerically singular, indefinite, zero: +inf
    v = np.array([1.0, 2.0, 3.0])
    for A in (np.outer(v, v), np.diag([1.0, 1.0, 1e-17]), np.diag([1.0, -1e-3, 2.0]),
              np.zeros((3, 3))):
        assert K.spd_condition_number(A) == math.inf
    assert K.spd_condition_number(np.diag([2.0, 1e-12, 1.0])) == pytest.approx(2e12)


def test_body_table_names_the_packed_columns():
    """body_table reads the parser's packed arrays into named fields, row by row."""
    arm = RobotModel.from_urdf_string(chain3())
    s = arm._s
    b = body_table(s, s.inert)
    assert b.dtype == BODY and not b.flags.writeable
    np.testing.assert_array_equal(b["parent"], s.topo[:, 0])
    np.testing.assert_array_equal(b["jtype"], s.topo[:, 1])
    np.testing.assert_array_equal(b["q_index"], s.topo[:, 2])
    np.testing.assert_array_equal(b["axis"], s.geom[:, 0:3])
    np.testing.assert_array_equal(b["R_tree"].reshape(-1, 9), s.geom[:, 3:12])
    np.testing.assert_array_equal(b["p_tree"], s.geom[:, 12:15])
    np.testing.assert_array_equal(b["mimic_multiplier"], s.geom[:, 15])
    np.testing.assert_array_equal(b["mimic_offset"], s.geom[:, 16])
    np.testing.assert_array_equal(b["mass"], s.inert[:, 0])
    np.testing.assert_array_equal(b["com"], s.inert[:, 1:4])
    np.testing.assert_array_equal(b["I_com"].reshape(-1, 9), s.inert[:, 4:13])
    assert set(b["jtype"]) <= {REVOLUTE, PRISMATIC}


def test_unknown_joint_type_is_refused_by_the_kernels():
    """A body whose jtype is neither REVOLUTE nor PRISMATIC raises instead of moving as a
    prismatic joint (the old fall-through)."""
    arm = RobotModel.from_urdf_string(chain3())
    bodies = arm._bodies.copy()
    bodies["jtype"][1] = 7
    with pytest.raises(ValueError, match="unknown joint type"):
        K.batch_mass(bodies, np.zeros((1, 3)), np.empty((1, 3, 3)))
    M = np.empty((1, 3, 3))
    K.batch_mass(arm._bodies, np.zeros((1, 3)), M)          # the valid table still works
    np.testing.assert_allclose(M[0], arm.mass_matrix(np.zeros(3)))


def test_gram_against_numpy_and_its_summation_order():
    """gram(Y, out): out[:k, :k] = Y Y^T within the dot-product bound m eps |Y| |Y|^T of
    numpy's, exactly symmetric, out beyond [:k, :k] untouched; and, as documented (the
    contact detector and the safety kernel rely on its bits), each entry is one running
    sum in index order: equal to the bit to plain Python floats added left to right."""
    rng = np.random.default_rng(7)
    for k, m in ((1, 1), (3, 1), (3, 7), (6, 6), (6, 9), (6, 29), (2, 43)):
        Y = rng.normal(size=(k, m)) * np.exp(rng.uniform(-5, 5, size=(k, m)))
        out = np.full((k + 1, k + 2), 7.0)
        K.gram(Y, out)
        G = out[:k, :k]
        bound = m * 2.2e-16 * (np.abs(Y) @ np.abs(Y).T)
        assert np.all(np.abs(G - Y @ Y.T) <= bound)
        assert np.array_equal(G, G.T)
        assert np.all(out[k:, :] == 7.0) and np.all(out[:, k:] == 7.0)
        for a in range(k):
            for b in range(k):
                acc = 0.0
                for j in range(m):
                    acc += float(Y[a, j]) * float(Y[b, j])
                assert G[a, b] == acc


def test_linear_algebra_helpers_against_numpy():
    """cholesky, the triangular solves and inverse_from_cholesky (Lambda = A^-1 in every
    bundle) against numpy for SPD matrices of sizes 1-43 (lengths around the four-way
    partial sums' unrolling), conditioned up to ~1e8: L L^T = A, the solves invert L and
    L^T, and the inverse is exactly symmetric and A X = I to the condition number's
    accuracy."""
    rng = np.random.default_rng(12)
    for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 29, 43):
        for _ in range(5):
            U, _ = np.linalg.qr(rng.normal(size=(n, n)))
            w = np.exp(rng.uniform(-9, 9, size=n))
            A = U @ np.diag(w) @ U.T
            A = 0.5 * (A + A.T)
            L = np.empty((n, n))
            assert K.cholesky(A, L)
            assert np.array_equal(L, np.tril(L))
            np.testing.assert_allclose(L @ L.T, A, rtol=0, atol=64 * n * 2.2e-16 * w.max())
            b = rng.normal(size=n)
            x = b.copy()
            K.solve_lower(L, x)
            np.testing.assert_allclose(L @ x, b, rtol=1e-9, atol=1e-9 * np.abs(b).max())
            y = b.copy()
            K.solve_upper_t(L, y)
            np.testing.assert_allclose(L.T @ y, b, rtol=1e-9, atol=1e-9 * np.abs(b).max())
            X = np.empty((n, n))
            K.inverse_from_cholesky(L, np.empty((n, n)), X)
            assert np.array_equal(X, X.T)
            cond = w.max() / w.min()
            np.testing.assert_allclose(A @ X, np.eye(n), rtol=0, atol=64 * n * 2.2e-16 * cond)
            np.testing.assert_allclose(X, np.linalg.inv(A), rtol=0,
                                       atol=64 * n * 2.2e-16 * cond / w.min())
    assert not K.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]), np.empty((2, 2)))  # indefinite
