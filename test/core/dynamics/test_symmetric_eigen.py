"""Eigenvalues of small symmetric matrices without LAPACK
(core/dynamics/kernels/symmetric_eigen.py), the source of cond(A) in every bundle: against numpy's
eigvalsh (LAPACK) and closed forms.

Backward stability means |w_i - w_i(ref)| of order eps ||A||_2 for every eigenvalue (not a
relative accuracy for the small ones): the bound checked is 8 k eps ||A||_2.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from manip_dynamics.core.dynamics.kernels.symmetric_eigen import (symmetric_eigenvalues,
                                                                  tridiagonal_eigenvalues,
                                                                  tridiagonalize)

EPS = np.finfo(float).eps


def eigenvalues(A):
    k = A.shape[0]
    w = np.full(k, np.nan)
    before = A.copy()
    assert symmetric_eigenvalues(A, np.empty((k, k)), w, np.empty(k), np.empty(k), np.empty(k))
    assert np.array_equal(A, before)                     # A is read only
    return w


def assert_backward_stable(A, w, ref):
    k = A.shape[0]
    scale = max(np.max(np.abs(ref)), np.finfo(float).tiny)
    assert np.all(np.diff(w) >= 0), w                    # ascending
    assert np.max(np.abs(w - ref)) <= 8 * k * EPS * scale, (w, ref)


def _matrices(rng, count):
    """Symmetric test matrices of sizes 1-8: SPD with rows scaled over 1e-7..1e7,
    prescribed spectra over 30 decades (nearly singular), indefinite, repeated eigenvalues,
    diagonal and zero."""
    for t in range(count):
        k = 1 + t % 8
        kind = t % 5
        if kind == 0:
            B = rng.normal(size=(k, k)) * np.exp(rng.uniform(-16, 16, size=k))[:, None]
            yield B @ B.T
        elif kind == 1:
            U, _ = np.linalg.qr(rng.normal(size=(k, k)))
            A = U @ np.diag(np.exp(rng.uniform(-60, 10, size=k))) @ U.T
            yield 0.5 * (A + A.T)
        elif kind == 2:
            A = rng.normal(size=(k, k))
            yield A + A.T
        elif kind == 3:
            U, _ = np.linalg.qr(rng.normal(size=(k, k)))
            A = U @ np.diag(rng.integers(0, 3, size=k).astype(float)) @ U.T
            yield 0.5 * (A + A.T)
        else:
            yield np.diag(rng.normal(size=k)) if t % 2 else np.zeros((k, k))


def test_against_lapack_eigvalsh():
    rng = np.random.default_rng(5)
    for A in _matrices(rng, 4000):
        assert_backward_stable(A, eigenvalues(A), np.linalg.eigvalsh(A))


def test_prescribed_spectrum_is_recovered():
    """Q diag(lambda) Q^T with a random orthogonal Q: the lambdas, sorted (to eps ||A||)."""
    rng = np.random.default_rng(6)
    for k in (3, 6):
        for _ in range(200):
            lam = rng.uniform(0.01, 100.0, size=k)
            Q, _ = np.linalg.qr(rng.normal(size=(k, k)))
            A = Q @ np.diag(lam) @ Q.T
            A = 0.5 * (A + A.T)
            assert_backward_stable(A, eigenvalues(A), np.sort(lam))


@pytest.mark.parametrize("a, b, c", [(2.0, 1.0, 2.0), (1.0, 0.0, 3.0), (0.0, 1e-3, 1e3),
                                     (-1.0, 2.0, 5.0)])
def test_two_by_two_closed_form(a, b, c):
    """[[a, b], [b, c]]: (a + c) / 2 -+ sqrt(((a - c) / 2)^2 + b^2)."""
    r = math.sqrt(((a - c) / 2) ** 2 + b * b)
    ref = np.array([(a + c) / 2 - r, (a + c) / 2 + r])
    A = np.array([[a, b], [b, c]])
    assert_backward_stable(A, eigenvalues(A), ref)


def test_tridiagonal_form_has_the_same_spectrum_and_trace():
    """Step 1 alone: T from tridiagonalize has A's eigenvalues (numpy on T) and trace."""
    rng = np.random.default_rng(7)
    for k in range(1, 9):
        B = rng.normal(size=(k, k))
        A = B + B.T
        W = A.copy()
        d, e = np.empty(k), np.empty(k)
        tridiagonalize(W, d, e, np.empty(k), np.empty(k))
        T = np.diag(d) + np.diag(e[:k - 1], 1) + np.diag(e[:k - 1], -1)
        assert_backward_stable(A, np.linalg.eigvalsh(T), np.linalg.eigvalsh(A))
        assert d.sum() == pytest.approx(np.trace(A), abs=8 * k * EPS * np.abs(A).sum())


def test_tridiagonal_eigenvalues_of_the_second_difference_matrix():
    """tridiag(-1, 2, -1) of size k: 2 - 2 cos(j pi / (k + 1)), j = 1..k (closed form)."""
    for k in (1, 2, 5, 6, 12):
        d, e = np.full(k, 2.0), np.full(k, -1.0)
        assert tridiagonal_eigenvalues(d, e)
        ref = 2.0 - 2.0 * np.cos(np.arange(1, k + 1) * np.pi / (k + 1))
        np.testing.assert_allclose(d, np.sort(ref), rtol=0, atol=8 * k * EPS * 4)
