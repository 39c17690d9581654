"""Derivatives and matrix products of the derivation's expressions: the same expressions
``sp.diff(expr, x)`` and ``A * B`` give (``==``, the same Floats), several times faster.

``sp.diff`` builds a ``Derivative`` at every node of the tree (Add, Mul, cos, ...): each asks
the assumptions system whether the node's derivative ``is_zero`` (for a sum of Float-weighted
sines and cosines a walk over every term's sign and finiteness) and ``replace``s unevaluated
derivatives in it (another walk), which is most of its time. :func:`derivative` applies the
same rules sympy's ``_eval_derivative`` methods apply, in the same order, with the same
constructors (so the same Float sums and the same canonical form): Add ``d(sum a) = sum da``;
Mul the Leibniz rule ``d(a b c) = da b c + a db c + a b dc`` (sympy's
``_eval_derivative_n_times`` with n = 1); sin, cos ``f'(u) du``; Pow ``b^e (de log b + db
e / b)``; an atom 1 or 0; anything else goes to ``sp.diff``. A subtree without x is 0 at once,
and each (subtree, x) is differentiated once per ``memo``, so subexpressions shared between
entries (the Jacobians' in M) are not differentiated again.

A sympy matrix product (``sdm_matmul_exraw``) first multiplies every entry of A by zero to
find infinities (0 * oo = nan), which asks each large entry ``is_finite`` through the
assumptions system (C qd: most of the product's time). :func:`matmul` sums the same products
in the same order (k ascending, zero entries skipped, ``Add(*terms)``) without that check:
the derivation's entries are finite (Floats, real symbols, sin, cos, sums and products).

Both are tested against ``sp.diff`` and ``A * B`` on chains of every kind
(test/equations/test_algebra.py).
"""
from __future__ import annotations

import sympy as sp
from sympy import Add, Mul, Pow, S


def derivative(expr, x, memo):
    """d expr / d x (sympy expression, x a Symbol), equal (``==``) to ``sp.diff(expr, x)``.
    memo: a dict kept across calls of one derivation ((subtree, x) -> derivative, and
    (subtree, None) -> its free symbols)."""
    key = (expr, x)
    d = memo.get(key)
    if d is None:
        d = memo[key] = _rule(expr, x, memo) if x in _free(expr, memo) else S.Zero
    return d


def _free(expr, memo):
    """expr.free_symbols, each subtree's once per memo (under the key (expr, None)):
    ``free_symbols`` itself walks the whole subtree at every node. (The union of the args':
    with bound variables, as in an Integral, a superset, which only sends that subtree to
    ``sp.diff``.)"""
    key = (expr, None)
    free = memo.get(key)
    if free is None:
        free = memo[key] = (frozenset().union(*[_free(a, memo) for a in expr.args])
                            if expr.args else frozenset(expr.free_symbols))
    return free


def _rule(expr, x, memo):
    """One step of the chain rule at the root of ``expr`` (which contains x)."""
    if expr == x:
        return S.One
    if isinstance(expr, Add):
        return Add(*[derivative(a, x, memo) for a in expr.args])
    if isinstance(expr, Mul):
        args = expr.args
        return Add(*[Mul(*[derivative(a, x, memo) if k == i else a for k, a in enumerate(args)])
                     for i in range(len(args))])
    if isinstance(expr, (sp.sin, sp.cos)):
        du = derivative(expr.args[0], x, memo)
        return Add() if du.is_zero else Add(expr.fdiff(1) * du)
    if isinstance(expr, Pow):
        db, de = derivative(expr.base, x, memo), derivative(expr.exp, x, memo)
        return expr * (de * sp.log(expr.base) + db * expr.exp / expr.base)
    return sp.diff(expr, x)


def jacobian(v, q, memo):
    """(len(v), len(q)) matrix of d v_r / d q_c, as ``sp.Matrix(v).jacobian(q)``."""
    return sp.Matrix(len(v), len(q), lambda r, c: derivative(v[r], q[c], memo))


def matmul(A, B):
    """A B of sympy matrices (r, m) and (m, c) with finite entries: the entries ``A * B``
    gives, ``C_ij = Add(A_i0 B_0j, A_i1 B_1j, ...)`` over the k where both are nonzero (0
    where none is, or where the sum is a zero number)."""
    if A.cols != B.rows:
        raise sp.ShapeError(f"matmul: {A.shape} times {B.shape}")
    rows = [list(A.row(i)) for i in range(A.rows)]
    cols = [list(B.col(j)) for j in range(B.cols)]
    entries = []
    for a in rows:
        for b in cols:
            s = Add(*[x * y for x, y in zip(a, b) if x and y])
            entries.append(s if s else S.Zero)
    return sp.Matrix(A.rows, B.cols, entries)
