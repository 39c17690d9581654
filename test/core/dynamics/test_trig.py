"""sin and cos of a joint angle from one argument reduction (core/dynamics/kernels/trig.py), which
every kinematics pass uses: against libm (numpy's sin and cos, correctly rounded in practice),
exact values and identities."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from manip_dynamics.core.dynamics.kernels.trig import REDUCTION_LIMIT, sin_cos


@njit(cache=False)
def _sin_cos_of(x, s, c):
    for i in range(x.shape[0]):
        s[i], c[i] = sin_cos(x[i])


def sin_cos_array(x):
    x = np.asarray(x, dtype=float)
    s, c = np.empty_like(x), np.empty_like(x)
    _sin_cos_of(x, s, c)
    return s, c


@pytest.mark.parametrize("span, ulps", [(np.pi / 4, 1), (7.0, 2), (100.0, 2),
                                        (REDUCTION_LIMIT, 2)])
def test_within_a_few_ulp_of_libm(span, ulps):
    x = np.random.default_rng(3).uniform(-span, span, 1_000_000)
    s, c = sin_cos_array(x)
    for ours, ref in ((s, np.sin(x)), (c, np.cos(x))):
        err_ulp = np.abs(ours - ref) / np.spacing(np.abs(ref))
        assert err_ulp.max() <= ulps, err_ulp.max()


def test_near_the_quadrant_boundaries():
    """Angles next to k pi / 4 and k pi / 2 (where the reduction changes quadrant or the
    reduced angle is ~0): within 2 ulp of libm, or 1e-16 absolute for the tiny values."""
    k = np.arange(-400, 401)
    base = np.concatenate([k * np.pi / 4, k * np.pi / 2])
    x = np.concatenate([np.nextafter(base, np.inf), base, np.nextafter(base, -np.inf)])
    s, c = sin_cos_array(x)
    for ours, ref in ((s, np.sin(x)), (c, np.cos(x))):
        assert np.all(np.abs(ours - ref) <= np.maximum(2 * np.spacing(np.abs(ref)), 1e-16))


def test_exact_values_and_identity():
    s, c = sin_cos_array([0.0, 1e-300, 5e-324])
    assert list(s) == [0.0, 1e-300, 5e-324] and list(c) == [1.0, 1.0, 1.0]
    x = np.random.default_rng(4).uniform(-50, 50, 100_000)
    s, c = sin_cos_array(x)
    np.testing.assert_allclose(s * s + c * c, 1.0, rtol=0, atol=4 * np.finfo(float).eps)
    s2, c2 = sin_cos_array(-x)
    assert np.array_equal(s2, -s) and np.array_equal(c2, c)      # odd and even


def test_beyond_the_reduction_range_and_non_finite_angles_are_libms():
    x = np.array([REDUCTION_LIMIT * 1.5, -1e20, 1e300])
    s, c = sin_cos_array(x)
    assert np.array_equal(s, np.sin(x)) and np.array_equal(c, np.cos(x))
    s, c = sin_cos_array([np.inf, -np.inf, np.nan])
    assert np.isnan(s).all() and np.isnan(c).all()
