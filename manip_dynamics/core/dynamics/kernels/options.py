"""What every kernel shares: the numba options, the status codes of a state, the
bundle's flags, the thresholds of the condition-number rule, and zero vectors."""

import numpy as np

_JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")
_DRIVER = dict(_JIT, inline="always")   # small drivers over ws: no call boundary
_THREADS = dict(_JIT, parallel=True)     # the *_threads entry points: prange over chunks

# status of a state (batch_forward_dynamics, batch_bundle); BAD_INPUT: q or qd not finite
OK, NOT_POSITIVE_DEFINITE, OVERFLOW, BAD_INPUT = 0, 1, 2, 3

# batch_bundle's flags (or-ed): what to compute beyond M, J, A, Lambda and cond(A)
BIAS = 1            # g and c = C qd
OPERATIONAL = 2     # mu and p (implies BIAS)
EIGENVECTORS = 4    # the eigen-decomposition of A (inertia ellipsoid)
MOMENTUM = 8        # p = M qd and C^T qd (the momentum observer's terms; implies BIAS)

SINGULAR_COND = 1e12          # cond(A) above this: A is singular (pseudo-inverse Lambda)
EIGVALSH_MIN_RATIO = 1e-8     # batch_bundle: eigenvalues alone, not eigh, when smin > this * smax
EPS = 2.220446049250313e-16   # float64 machine epsilon
_ZERO3 = np.zeros(3)
_ZERO6 = np.zeros(6)
