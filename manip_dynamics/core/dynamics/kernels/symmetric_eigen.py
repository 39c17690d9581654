"""Eigenvalues of a small symmetric matrix without LAPACK (numba kernels).

The bundle needs cond(A) of A = J M^-1 J^T (k x k, k = 3 or 6) for every state: its extreme
eigenvalues. ``np.linalg.eigvalsh`` in a numba kernel copies A, queries and allocates a
LAPACK workspace and runs dsyevd, whose tridiagonal reduction makes a few dozen level-2
BLAS calls of a 6x6 matrix: about 2.1 us per call, half of a UR5 compute_all. The same two
classical steps written out for a k x k matrix cost a fraction of that, allocate nothing
and do not depend on the BLAS kernel of the machine:

1. Householder tridiagonalisation (Golub & Van Loan, Matrix Computations, 4th ed., 8.3.1):
   for j = 0 .. k-3, the reflector P = I - beta v v^T (beta = 2 / v^T v) that maps the
   column below the diagonal, x = A[j+1:, j], to alpha e_1 with alpha = -sign(x_0) ||x||
   (v = x - alpha e_1, no cancellation); the trailing block becomes P A22 P, computed as
   A22 - v w^T - w v^T with p = beta A22 v, w = p - (beta / 2)(v^T p) v.
   The tridiagonal T = Q^T A Q has the same eigenvalues: diagonal d, off-diagonal e.
2. Implicit symmetric QR steps with the Wilkinson shift (ibid. 8.3.3-8.3.5): the shift mu is
   the eigenvalue of the trailing 2x2 block [[d_{m-1}, e_{m-1}], [e_{m-1}, d_m]] nearer to
   d_m, mu = d_m - e_{m-1}^2 / (delta + sign(delta) hypot(delta, e_{m-1})),
   delta = (d_{m-1} - d_m) / 2; a Givens rotation G(i, i+1) makes the first column of
   T - mu I a multiple of e_1 and further rotations chase the bulge down, T <- G^T T G.
   An off-diagonal entry with |e_i| <= eps (|d_i| + |d_{i+1}|) is set to zero (deflation);
   the iteration ends when every e_i is zero.

Backward stable: the eigenvalues are those of A + E with ||E||_2 of order eps ||A||_2, the
accuracy of LAPACK's dsyevd (checked against numpy in test/core/dynamics/test_symmetric_eigen.py).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")
EPS = 2.220446049250313e-16   # float64 machine epsilon
MAX_QR_STEPS_PER_EIGENVALUE = 30   # the Wilkinson-shifted QR converges in 2-3 steps each


@njit(**_JIT)
def tridiagonalize(W, d, e, v, p):
    """W (k, k) symmetric (overwritten: its lower triangle is used as the working matrix)
    -> d (k) diagonal and e (k; e[:k-1] used) off-diagonal of T = Q^T W Q (step 1 above).
    v, p: scratch (k)."""
    k = W.shape[0]
    for j in range(k - 2):
        x0 = W[j + 1, j]
        sigma = 0.0
        for i in range(j + 2, k):
            sigma += W[i, j] * W[i, j]
        d[j] = W[j, j]
        if sigma == 0.0:                 # the column is already e_1-shaped
            e[j] = x0
            continue
        alpha = -math.copysign(math.sqrt(x0 * x0 + sigma), x0)
        e[j] = alpha
        v[j + 1] = x0 - alpha
        for i in range(j + 2, k):
            v[i] = W[i, j]
        beta = 2.0 / (v[j + 1] * v[j + 1] + sigma)
        # p = beta A22 v (A22 = W[j+1:, j+1:], symmetric: read from the lower triangle)
        vp = 0.0
        for r in range(j + 1, k):
            acc = 0.0
            for c in range(j + 1, k):
                acc += (W[r, c] if c <= r else W[c, r]) * v[c]
            p[r] = beta * acc
            vp += v[r] * p[r]
        half = 0.5 * beta * vp
        for r in range(j + 1, k):
            p[r] -= half * v[r]          # w = p - (beta / 2)(v^T p) v
        for r in range(j + 1, k):
            for c in range(j + 1, r + 1):
                W[r, c] -= v[r] * p[c] + p[r] * v[c]
    if k >= 2:
        d[k - 2] = W[k - 2, k - 2]
        e[k - 2] = W[k - 1, k - 2]
    if k >= 1:
        d[k - 1] = W[k - 1, k - 1]


@njit(**dict(_JIT, inline="always"))
def _negligible(d, e, i):
    """e_i is below the deflation threshold eps (|d_i| + |d_{i+1}|)."""
    return abs(e[i]) <= EPS * (abs(d[i]) + abs(d[i + 1]))


@njit(**_JIT)
def tridiagonal_eigenvalues(d, e):
    """Eigenvalues of the symmetric tridiagonal (d (k), e[:k-1]) into d, ascending (step 2
    above; e is destroyed). Returns False if the iteration did not converge within
    MAX_QR_STEPS_PER_EIGENVALUE * k steps (d then unspecified; never seen)."""
    k = d.shape[0]
    hi = k - 1
    steps = 0
    while hi > 0:
        if _negligible(d, e, hi - 1):
            e[hi - 1] = 0.0
            hi -= 1
            continue
        steps += 1
        if steps > MAX_QR_STEPS_PER_EIGENVALUE * k:
            return False
        lo = hi - 1                      # the unreduced block lo..hi
        while lo > 0 and not _negligible(d, e, lo - 1):
            lo -= 1
        if lo > 0:
            e[lo - 1] = 0.0
        delta = 0.5 * (d[hi - 1] - d[hi])
        b = e[hi - 1]
        mu = d[hi] - b * b / (delta + math.copysign(math.sqrt(delta * delta + b * b), delta))
        if lo == hi - 1:                 # a 2x2 block: mu and the trace give both eigenvalues
            d[lo] = d[lo] + d[hi] - mu
            d[hi] = mu
            e[lo] = 0.0
            hi -= 2
            continue
        x = d[lo] - mu
        z = e[lo]
        for i in range(lo, hi):
            # G(i, i+1) with c x - s z = r, s x + c z = 0: zeroes z (the bulge)
            r = math.sqrt(x * x + z * z)   # (A's entries are far from 1e154: no overflow)
            if r == 0.0:
                c, s = 1.0, 0.0
            else:
                inv = 1.0 / r
                c = x * inv
                s = -z * inv
            if i > lo:
                e[i - 1] = r
            a, bb, cc = d[i], e[i], d[i + 1]
            d[i] = c * c * a - 2.0 * c * s * bb + s * s * cc
            d[i + 1] = s * s * a + 2.0 * c * s * bb + c * c * cc
            e[i] = c * s * (a - cc) + (c * c - s * s) * bb
            if i < hi - 1:
                z = -s * e[i + 1]            # the new bulge at (i, i+2)
                e[i + 1] = c * e[i + 1]
                x = e[i]
    for i in range(1, k):                 # insertion sort: k <= 6
        w = d[i]
        j = i - 1
        while j >= 0 and d[j] > w:
            d[j + 1] = d[j]
            j -= 1
        d[j + 1] = w
    return True


@njit(**_JIT)
def symmetric_eigenvalues(A, W, w, e, v, p):
    """w (k) = the eigenvalues of the symmetric A (k, k), ascending (A is not changed).
    W (k, k), e, v, p (k): scratch. Returns False if the QR iteration did not converge (the
    caller falls back to LAPACK)."""
    k = A.shape[0]
    for r in range(k):
        for c in range(r + 1):
            W[r, c] = A[r, c]
    tridiagonalize(W, w, e, v, p)
    return tridiagonal_eigenvalues(w, e)
