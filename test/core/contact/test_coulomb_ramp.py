"""The observer's Coulomb ramp (MomentumObserver(slide_speed=v), issue 33): the friction it
subtracts is viscous qd + coulomb clip(qd / v, -1, 1), the same bits on the per-state
kernel path, and a velocity flickering between 0 and 1e-4 rad/s at rest no longer moves r
(with sign(qd) it jumps by coulomb (1 - exp(-K_O h)))."""
from __future__ import annotations

import numpy as np
import pytest

from manip_dynamics.core.contact.observer import MomentumObserver

from .test_observer_terms import feed, panda, reference_terms, stream  # noqa: F401 (fixture)

SLIDE = 0.05


def test_beta_subtracts_the_ramped_coulomb_term(panda):
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, (50, 7))
    qd = rng.uniform(-0.1, 0.1, (50, 7))          # half inside the ramp (|qd| < 0.05)
    tau = rng.normal(0, 10, (50, 7))
    obs = MomentumObserver(panda, 50.0, friction=True, slide_speed=SLIDE)
    _, beta = obs.momentum_and_beta(q, qd, tau)
    _, ct, g = reference_terms(panda, q, qd)
    s = np.clip(qd / SLIDE, -1.0, 1.0)
    expected = tau + ct - g - (panda.viscous * qd + panda.coulomb * s)
    np.testing.assert_allclose(beta, expected, rtol=0, atol=1e-12)


def test_the_kernel_path_gives_the_same_bits_with_the_ramp(panda):
    t, q, qd, tau = stream(panda, "recorded", seed=5)
    qd = 0.05 * qd                                  # most samples inside the ramp
    options = dict(friction=True, slide_speed=np.linspace(0.01, 0.07, 7))
    ref, new = MomentumObserver(panda, 40.0, **options), MomentumObserver(panda, 40.0, **options)
    a, b = feed(ref, new, t, q, qd, tau, lambda k: reference_terms(panda, q[k], qd[k]))
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * max(1.0, np.abs(a).max()))


def flicker_residual(model, slide):
    """r_1 over 10 samples 10 ms apart of an arm at rest, tau = g(q) (no contact), with
    qd_1 = 1e-4 rad/s on sample 5 only."""
    q = np.full(7, 0.3)
    g = model.gravity_torques(q)
    obs = MomentumObserver(model, 50.0, friction=True, slide_speed=slide)
    r = []
    for k in range(10):
        qd = np.zeros(7)
        qd[0] = 1e-4 if k == 5 else 0.0
        r.append(obs.update(0.01 * k, q, qd, g).residual[0])
    return np.array(r), model.mass_matrix(q)[0, 0]


@pytest.mark.parametrize("slide", [0.0, SLIDE])
def test_a_velocity_flicker_at_rest(panda, slide):
    """Closed form (the exact step, trapezoid): u = dp/h - (beta_k + beta_k+1) / 2 gets
    m = M_11 1e-4 / h and c / 2 (c = viscous 1e-4 + coulomb s, s = sign(1e-4) = 1 or the
    ramp's 1e-4 / v) on the step into sample 5, -m and c / 2 on the step out:
    r_5 = (1 - a)(c/2 + m), r_6 = a r_5 + (1 - a)(c/2 - m), a = exp(-0.5)."""
    r, M11 = flicker_residual(panda, slide)
    a, m = np.exp(-0.5), M11 * 1e-4 / 0.01
    s = 1.0 if slide == 0.0 else 1e-4 / slide
    c = panda.viscous[0] * 1e-4 + panda.coulomb[0] * s
    r5 = (1 - a) * (c / 2 + m)
    np.testing.assert_allclose(r[5:7], [r5, a * r5 + (1 - a) * (c / 2 - m)], rtol=1e-9)
    assert not r[:5].any()


def test_the_ramp_removes_most_of_the_flicker(panda):
    """The same flicker: with the ramp the peak |r_1| is below a twentieth of sign(qd)'s
    (what remains is the momentum M_11 qd the measured qd implies)."""
    with_sign = np.abs(flicker_residual(panda, 0.0)[0]).max()
    with_ramp = np.abs(flicker_residual(panda, SLIDE)[0]).max()
    print(with_sign, with_ramp)
    assert with_ramp < with_sign / 20
