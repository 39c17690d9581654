"""Argument checks and conversions of the public entry points: numbers, reals, flags,
3-vectors and unit directions, each raising InputError naming the argument; and the
allocation-free finiteness test of a float array."""
from __future__ import annotations

import numbers

import numpy as np
from numba import njit

from ..errors import InputError


def _as_float(x, name):
    """x as a float64 array. Integers are accepted; bools, complex numbers, strings, None and
    ragged lists are not (InputError naming ``name``)."""
    if type(x) is np.ndarray and x.dtype == np.float64:
        return x                                        # fast path
    try:
        a = np.asarray(x)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be numeric, got a ragged or invalid "
                         f"{type(x).__name__}") from None
    kind = a.dtype.kind
    if kind in "iuf":
        return a.astype(float, copy=False)
    if kind == "O" and a.size and all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                                      for v in a.flat):
        return a.astype(float)                          # e.g. a list mixing int and np.float64
    what = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "bytes"}.get(kind)
    if what is None:
        bad = next((v for v in a.flat if not isinstance(v, numbers.Real) or isinstance(v, bool)),
                   x)
        what = f"{type(bad).__name__} ({bad!r})"
    raise InputError(f"{name} must be numeric, got {what}")


def _all_finite(a):
    """np.isfinite(a).all() of a float64 array without a temporary and without BLAS (a
    multithreaded OpenBLAS dot product stalled for 16-24 ms on a loaded 2-core machine:
    docs/realtime.md). One pass of ``_sum_of_differences``: 0 if every entry is finite."""
    return _sum_of_differences(a.reshape(-1)) == 0.0


@njit(cache=True, nogil=True, fastmath=False)
def _sum_of_differences(flat):
    """sum(x - x) over a 1-D float array: 0.0 if every x is finite, NaN otherwise
    (inf - inf and NaN - NaN are NaN); branch-free, so the loop vectorises."""
    acc = 0.0
    for i in range(flat.shape[0]):
        acc += flat[i] - flat[i]
    return acc


def _real(x, name):
    """A finite or infinite real scalar (not bool, not an array) -> float; InputError otherwise."""
    if type(x) is float or type(x) is int:
        return float(x)                                 # fast path (bool is not int here)
    a = _as_float(x, name)
    if a.ndim != 0:
        raise InputError(f"{name} must be a scalar, got shape {a.shape}")
    return float(a)


_NP_BOOL = (np.False_, np.True_)


def _flag(x, name):
    """A boolean option: bool, numpy bool or the integers 0 / 1 -> bool; InputError otherwise."""
    if x is False or x is True:
        return x                                        # fast path
    if isinstance(x, (bool, np.bool_)) or (isinstance(x, (int, np.integer)) and x in (0, 1)):
        return bool(x)
    raise InputError(f"{name} must be a bool, got {x!r}")


def _vector3(x, name):
    a = _as_float(x, name)
    if a.shape != (3,) or not np.isfinite(a).all():
        raise InputError(f"{name} must be a finite (3,) vector, got {x!r}")
    a = a.copy()
    a.setflags(write=False)
    return a


def _unit_direction(u, name):
    """u as a finite unit (3,) or (6,) float vector (InputError naming ``name`` otherwise)."""
    u = _as_float(u, name)
    if u.shape not in ((3,), (6,)) or not np.isfinite(u).all():
        raise InputError(f"{name} must be a finite (3,) or (6,) direction, got shape {u.shape}")
    big = np.abs(u).max()
    if big == 0:
        raise InputError(f"{name} must be a non-zero direction")
    u = u / big                      # scale first: |u| of 1e300 entries must not overflow
    return u / np.linalg.norm(u)
