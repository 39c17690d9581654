"""Dense linear algebra of small matrices without LAPACK: finiteness, Gram matrices,
Cholesky and its triangular solves, damped inverse gains, and the condition-number rule of
the package."""

import numpy as np
from numba import njit

from .options import EPS, _DRIVER, _JIT

# ------------------------------------------------------------------ dense helpers
@njit(**_JIT)
def all_finite(a):
    """True if every entry of the 1-D or 2-D array a is finite (x * 0 is NaN for inf/NaN).
    An and of comparisons, not a sum: a running float sum is a chain of dependent additions
    (0.65 us for a 29 x 29 M; the and vectorises: 0.03 us)."""
    ok = True
    for x in a.flat:                 # (flat, not ravel: no reshape call per check)
        ok &= x * 0.0 == 0.0
    return ok


@njit(**_JIT)
def damped_inverse_gain(s, d):
    """s / (s^2 + d^2) for an eigenvalue s >= 0 and damping d > 0, written 1 / (s + d (d / s))
    so that d^2 never underflows to 0 (s = 0 -> 0; a non-finite gain -> 0)."""
    if s <= 0.0:
        return 0.0
    e = 1.0 / (s + d * (d / s))
    return e if e * 0.0 == 0.0 else 0.0


@njit(**_DRIVER)
def gram(Y, out):
    """out[:k, :k] = Y Y^T of Y (k, m): out[a, b] = sum_j Y[a, j] Y[b, j], one running sum
    in index order j = 0 .. m-1 (no partial sums: callers rely on these exact bits); the
    lower triangle is computed and mirrored, so out is exactly symmetric. out (>= k, >= k)
    keeps whatever lies outside [:k, :k]."""
    k, m = Y.shape
    for a in range(k):
        for b in range(a + 1):
            acc = 0.0
            for j in range(m):
                acc += Y[a, j] * Y[b, j]
            out[a, b] = acc
            out[b, a] = acc


# The dot products below keep four partial sums: one running sum is a chain of dependent
# additions (about 4 cycles each), which bounded a 29-joint Cholesky and its solves, not
# the arithmetic. Same order on every machine (no fastmath): the same bits everywhere.
@njit(**_DRIVER)
def _dot(a, b, m):
    """sum_{k < m} a[k] b[k] of two 1-D arrays (rows, columns or vectors)."""
    s0 = s1 = s2 = s3 = 0.0
    k = 0
    while k + 4 <= m:
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
        k += 4
    while k < m:
        s0 += a[k] * b[k]
        k += 1
    return (s0 + s1) + (s2 + s3)


@njit(**_JIT)
def cholesky(A, L):
    """A = L L^T (lower). Returns False if A is not (numerically) positive definite."""
    n = A.shape[0]
    L[:, :] = 0.0
    scale = 0.0
    for i in range(n):
        scale = max(scale, abs(A[i, i]))
    for j in range(n):
        d = A[j, j] - _dot(L[j], L[j], j)
        if not (d > 1e-14 * scale) or scale == 0.0:
            return False
        d = np.sqrt(d)
        L[j, j] = d
        for i in range(j + 1, n):
            L[i, j] = (A[i, j] - _dot(L[i], L[j], j)) / d
    return True


@njit(**_JIT)
def solve_lower(L, b):
    """b <- L^-1 b."""
    n = L.shape[0]
    for i in range(n):
        b[i] = (b[i] - _dot(L[i], b, i)) / L[i, i]


@njit(**_JIT)
def solve_upper_t(L, b):
    """b <- L^-T b."""
    n = L.shape[0]
    for i in range(n - 1, -1, -1):
        b[i] = (b[i] - _dot(L[i + 1:, i], b[i + 1:], n - i - 1)) / L[i, i]


@njit(**_JIT)
def cho_solve(L, b):
    """b <- (L L^T)^-1 b by two triangular solves."""
    solve_lower(L, b)
    solve_upper_t(L, b)


@njit(**_JIT)
def condition_number(w_min, w_max, k, cholesky_ok):
    """cond = w_max / w_min of a symmetric (k, k) matrix with extreme eigenvalues w_min, w_max;
    +inf (numerically singular) when w_min <= k * eps * w_max, or w_max <= 0, or its
    Cholesky factorisation failed (cholesky_ok False)."""
    if not cholesky_ok or not (w_max > 0.0) or not (w_min > k * EPS * w_max):
        return np.inf
    return w_max / w_min


def spd_condition_number(A):
    """cond(A) of a symmetric positive (semi-)definite (k, k) matrix by the rule of
    :func:`condition_number` (the one every result of the package follows): eigenvalues
    by eigvalsh, +inf when w_min <= k * eps * w_max or the Cholesky factorisation fails.
    The same value on every CPU / BLAS kernel: a singular A gives +inf, never a 1e16 that
    depends on the round-off of one kernel. Plain Python (callers outside the kernels)."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    k = A.shape[0]
    if k == 0:
        return 1.0
    w = np.linalg.eigvalsh(A)
    return float(condition_number(w[0], w[k - 1], k, cholesky(A, np.empty((k, k)))))
