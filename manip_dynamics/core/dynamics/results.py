"""What RobotModel returns: the DynamicsTerms, InertiaEllipsoid and MomentumTerms
records, and the named views of the per-state bundle's one output buffer."""
from __future__ import annotations

import functools
import math
from collections import namedtuple

from . import kernels as K

DynamicsTerms = namedtuple(
    "DynamicsTerms", "g c M J A Lambda condition_number singular")
DynamicsTerms.__doc__ = """Per-state bundle (see RobotModel.compute_all).

g (n,), c = C qd (n,), M (n, n), J (k, n), A = J M^-1 J^T (k, k), Lambda (k, k),
condition_number of A (lambda_max / lambda_min of its eigenvalues; +inf when numerically
singular: lambda_min <= k eps lambda_max, lambda_max <= 0, or A's Cholesky fails),
singular flag (cond > 1e12). k = 6, or 3 with linear_only.
Batched: every field gains a leading N axis."""

InertiaEllipsoid = namedtuple(
    "InertiaEllipsoid", "eigenvalues eigenvectors condition_number singular")
InertiaEllipsoid.__doc__ = """Eigen-decomposition of Lambda = A^-1.

eigenvalues (k,) ascending, +inf along singular directions (eigenvalue of A below
1e-12 of its largest); eigenvectors (k, k) columns, a proper rotation (det = +1);
condition_number of A; singular flag."""

MomentumTerms = namedtuple("MomentumTerms", "p ct")
MomentumTerms.__doc__ = """The momentum observer's per-state terms (see RobotModel.momentum_terms).

p = M(q) qd (n,), generalized momentum (kg m^2/s, or kg m/s for a prismatic joint);
ct = C(q, qd)^T qd (n,), N*m / N. Batched: a leading N axis on each."""


class _BundleResult:
    """Named views of K.batch_bundle's one output buffer: ``r.M``, ``r.Lambda``, ... (one
    property per field of K.bundle_layout) and ``r.singular``. Batched: (N, *shape) arrays;
    a single state (``r.single``): views of shape ``shape``, and scalars (as a[0] of a
    batch)."""

    __slots__ = ("_out", "_layout", "_N", "single", "_singular")

    def __init__(self, out, layout, N, single, singular):
        self._out, self._layout, self._N = out, layout, N
        self.single, self._singular = single, singular

    def _view(self, name):
        start, size, shape = self._layout[name]
        N, out = self._N, self._out
        if not self.single:
            return out[N * start:N * (start + size)].reshape((N, *shape))
        if not shape:
            return out[start]
        a = out[start:start + size]
        return a if len(shape) == 1 else a.reshape(shape)

    @property
    def singular(self):
        return self._singular[0] if self.single else self._singular

    def dynamics_terms(self):
        """DynamicsTerms of this run (compute_all's per-call path: no property frames; a
        single state slices the buffer directly)."""
        if self.single:
            out, layout = self._out, self._layout
            (a, b, _), (c, d, _), (e, f, sM), (g, h, sJ), (i, j, sA), (k, l, sL), (m, _, _) = \
                _single_slices(id(layout), layout)
            return DynamicsTerms(out[a:b], out[c:d], out[e:f].reshape(sM), out[g:h].reshape(sJ),
                                 out[i:j].reshape(sA), out[k:l].reshape(sL), out[m],
                                 self._singular[0])
        v = self._view
        return DynamicsTerms(v("g"), v("c"), v("M"), v("J"), v("A"), v("Lambda"),
                             v("condition_number"), self.singular)


_SINGLE_SLICES = {}


def _single_slices(key, layout):
    """(start, stop, shape) of g, c, M, J, A, Lambda, condition_number in a one-state buffer
    of this layout (cached per layout: _bundle_layout returns one dict per (n, k))."""
    try:
        return _SINGLE_SLICES[key]
    except KeyError:
        spans = tuple((layout[f][0], layout[f][0] + layout[f][1], layout[f][2])
                      for f in ("g", "c", "M", "J", "A", "Lambda", "condition_number"))
        _SINGLE_SLICES[key] = spans
        return spans


for _name, _ in K.bundle_layout(0, 0):     # r.g, r.c, r.M, ...: plain properties (fast)
    setattr(_BundleResult, _name, property(lambda self, _name=_name: self._view(_name),
                                           doc=f"the {_name} field of the bundle"))


@functools.lru_cache(maxsize=None)
def _bundle_layout(n, k):
    """-> ({name: (start, size, shape)} per state for K.bundle_layout(n, k), size of a state)."""
    layout, start = {}, 0
    for name, shape in K.bundle_layout(n, k):
        size = math.prod(shape)
        layout[name] = (start, size, shape)
        start += size
    return layout, start
