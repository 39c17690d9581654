"""Argument checks of the identification entry points (regressor, identification, payload):
each raises InputError naming the argument, its expected shape and the first bad entry.

``array(name, x, shape)``: a finite float array of ``shape`` (None: any length there);
``scalar(name, x, low, high)``: a finite real in [low, high]; ``count(name, x, low)``: an
integer >= low. Numeric conversion (no bools, strings, ragged lists) is
:func:`manip_dynamics.core.dynamics.checks._as_float`'s.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..dynamics.checks import _as_float
from ..errors import InputError


def _shape_text(shape):
    dims = ["N" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def array(name, x, shape):
    """x as a float array of ``shape`` (tuple; None entries: any size), every entry finite."""
    a = _as_float(x, name)
    if a.ndim != len(shape) or any(d is not None and d != s for d, s in zip(shape, a.shape)):
        raise InputError(f"{name} must have shape {_shape_text(shape)}, got {a.shape}")
    if not np.isfinite(a).all():
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
        raise InputError(f"{name}[{', '.join(map(str, idx))}] is {a[idx]}")
    return a


def scalar(name, x, low=-np.inf, high=np.inf):
    """x as a finite float in [low, high]."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise InputError(f"{name} must be a real number, got {x!r}")
    v = float(x)
    if not (np.isfinite(v) and low <= v <= high):
        raise InputError(f"{name} must be finite and in [{low:g}, {high:g}], got {v!r}")
    return v


def count(name, x, low=0):
    """x as an int >= low (Python or numpy integer, not bool)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < low:
        raise InputError(f"{name} must be an integer >= {low}, got {x!r}")
    return int(x)


def rows(name, x, n, count=None):
    """x (n,) or (N, n) as a finite (N, n) float array (N = count if given)."""
    a = _as_float(x, name)
    if a.ndim == 1:
        a = a[None]
    return array(name, a if a.ndim == 2 else x, (count, n))
