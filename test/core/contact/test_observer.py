"""The momentum observer, the tip wrench, contact detection and the contact point
(manip_dynamics.core.contact.observer / contact; derivations: docs/math.md section 8).

References, all independent of the code under test:

* closed forms on the general planar 2R arm (``Planar2R`` of test_closed_forms, the
  seed-004 coefficients checked there against Pinocchio) for two motions on which the
  observer's exact update must be exact to round-off: the arm held still, and joint 1
  spinning at constant speed with q2 fixed (then dM/dt = 0, so C qd + C^T qd = 0 and
  beta = -tau_ext: a wrong transpose or sign breaks it);
* an RK4-integrated 2R plant (closed-form M, c, g) under a constant external torque;
* MuJoCo 4.0 running example-robot-data's Panda (fingers fixed), a force pushed on a link
  by ``xfrc_applied`` / ``mj_applyFT``, the true external joint torques from ``mj_applyFT``
  (J^T F in MuJoCo's own kinematics);
* plain linear algebra for the wrench (r = J^T F by construction) and, as the
  alternative inverse, the dynamically consistent Lambda J M^-1 r from the model's
  effective_inertia.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from manip_dynamics import InputError, RobotModel
from manip_dynamics.core.contact.detector import (ContactDetector, arm_topology, contact_point,
                                         link_segment, most_distal, tip_wrench)
from manip_dynamics.core.contact.observer import MomentumObserver, exact_step

from .. import urdf_factory as uf
from ..dynamics.test_closed_forms import G0, GRAVITY, Planar2R
from ..dynamics.test_pinocchio import PANDA

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

ARM = dict(m1=1.3, m2=0.8, l1=0.6, l2=0.45, c1=(0.25, 0.03), c2=(0.2, -0.04), I1=0.02, I2=0.01)
TAU_EXT = np.array([1.5, -0.7])
GAINS = np.array([20.0, 35.0])                  # per joint, 1/s


@pytest.fixture(scope="module")
def arm():
    """(RobotModel, closed form) of the general 2R arm in the vertical x-y plane."""
    p = ARM
    xml = uf.planar_2r(p["m1"], p["m2"], p["l1"], p["l2"], p["c1"], p["c2"],
                       uf.planar_inertia(p["I1"]), uf.planar_inertia(p["I2"]))
    return RobotModel.from_urdf_string(xml, gravity=GRAVITY), Planar2R(**p)


def first_order(t, gains=GAINS, tau=TAU_EXT):
    """r(t) = (1 - exp(-K_O t)) tau_ext, t (N,) -> (N, n)."""
    return -np.expm1(-np.outer(t, gains)) * tau


def random_times(seed, count, low=1e-4, high=0.04):
    rng = np.random.default_rng(seed)
    return np.concatenate(([0.0], np.cumsum(rng.uniform(low, high, count))))


# =================================================================== exact closed forms
@pytest.mark.parametrize("effort", ["total", "minus_gravity"])
def test_held_arm_follows_first_order_response_exactly_at_any_steps(arm, effort):
    """Arm at rest, tau_m = g(q) - tau_ext: r(t_k) = (1 - exp(-K_O t_k)) tau_ext to
    round-off, with random steps up to 40 ms (K_O h up to 1.4; forward Euler would be
    wrong by O(K_O h)), per-joint gains."""
    model, cf = arm
    q = np.array([0.4, -1.1])
    tau_m = cf.g(q) - TAU_EXT
    reported = tau_m - cf.g(q) if effort == "minus_gravity" else tau_m
    obs = MomentumObserver(model, GAINS, effort=effort)
    t = random_times(1, 200)
    r = np.array([obs.update(tk, q, np.zeros(2), reported).residual for tk in t])
    np.testing.assert_allclose(r, first_order(t), rtol=0, atol=1e-12)


def test_spinning_arm_follows_first_order_response_exactly(arm):
    """q1 = w t, q2 fixed, in gravity: tau_m = c + g - tau_ext (closed forms). p is constant
    and beta = c + C^T qd - tau_ext = dM/dt qd - tau_ext = -tau_ext, so r is exact at any
    steps; using C instead of C^T would leave 2 c (not zero at q2 = 0.9) in r."""
    model, cf = arm
    w, q2 = 2.5, 0.9
    t = random_times(2, 300, high=0.02)
    obs = MomentumObserver(model, GAINS)
    rows = []
    for tk in t:
        q, qd = np.array([0.3 + w * tk, q2]), np.array([w, 0.0])
        rows.append(obs.update(tk, q, qd, cf.c(q, qd) + cf.g(q) - TAU_EXT).residual)
    assert abs(cf.c(np.array([0.0, q2]), np.array([w, 0.0]))[1]) > 0.3
    np.testing.assert_allclose(np.array(rows), first_order(t), rtol=0, atol=1e-11)


def swinging(t):
    return np.array([0.5 * math.sin(3 * t), 0.8 * math.cos(2 * t)])


def simulate_2r(cf, h, duration=1.0, tau_ext=lambda q: TAU_EXT, ref=swinging):
    """RK4 plant M qdd + c + g = tau_m + tau_ext(q) with tau_m = g + PD toward ref(t);
    -> (t, q, qd, tau_m, tau_ext) sampled every h."""
    def control(t, x):
        return cf.g(x[:2]) + 40.0 * (ref(t) - x[:2]) - 6.0 * x[2:]

    def f(t, x):
        qdd = np.linalg.solve(cf.M(x[:2]), control(t, x) + tau_ext(x[:2])
                              - cf.c(x[:2], x[2:]) - cf.g(x[:2]))
        return np.concatenate([x[2:], qdd])

    x, out = np.array([0.2, 0.5, 1.0, -0.5]), []
    steps = int(round(duration / h))
    for k in range(steps + 1):
        t = k * h
        out.append((t, x[:2].copy(), x[2:].copy(), control(t, x), tau_ext(x[:2])))
        k1 = f(t, x)
        k2 = f(t + h / 2, x + h / 2 * k1)
        k3 = f(t + h / 2, x + h / 2 * k2)
        k4 = f(t + h, x + h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return tuple(np.array(a) for a in zip(*out))


def test_moving_plant_residual_converges_at_second_order(arm):
    """RK4 2R plant swinging through +-0.8 rad under a constant tau_ext: the only error
    left is the trapezoid rule for the integral of beta (A2), O(h^2); halving h quarters
    it. At 1 ms it is below 2% of tau_ext during the violent first milliseconds (the PD
    starting from qd = (1, -0.5), the largest accelerations) and below 1e-4 after 0.3 s."""
    model, cf = arm
    errors = []
    for h in (4e-3, 2e-3, 1e-3):
        t, q, qd, tau, _ = simulate_2r(cf, h)
        r = MomentumObserver(model, GAINS).run(t, q, qd, tau)
        errors.append(np.abs(r - first_order(t)).max())
    assert errors[0] / errors[1] > 3.5 and errors[1] / errors[2] > 3.5, errors
    assert errors[2] < 0.02 * np.abs(TAU_EXT).max(), errors
    assert np.abs(r - first_order(t))[t > 0.3].max() < 1e-4 * np.abs(TAU_EXT).max()


def simulate_2r_held(cf, H, substeps=20, duration=1.0):
    """The plant of simulate_2r under a digital controller: tau_m = g + PD computed at each
    sample t_k = k H and HELD over (t_k, t_{k+1}] (zero-order hold), RK4 with H / substeps.
    -> (t, q, qd, reported tau) with reported tau_{k+1} = the torque held over the period
    ending at t_{k+1} (as arm_simulator publishes effort; 0 at t_0)."""
    def f(x, tau):
        qdd = np.linalg.solve(cf.M(x[:2]), tau + TAU_EXT - cf.c(x[:2], x[2:]) - cf.g(x[:2]))
        return np.concatenate([x[2:], qdd])

    x, held, out, h = np.array([0.2, 0.5, 1.0, -0.5]), np.zeros(2), [], H / substeps
    for k in range(int(round(duration / H)) + 1):
        out.append((k * H, x[:2].copy(), x[2:].copy(), held.copy()))
        held = cf.g(x[:2]) + 40.0 * (swinging(k * H) - x[:2]) - 6.0 * x[2:]
        for _ in range(substeps):
            k1 = f(x, held)
            k2 = f(x + h / 2 * k1, held)
            k3 = f(x + h / 2 * k2, held)
            k4 = f(x + h * k3, held)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return tuple(np.array(a) for a in zip(*out))


def test_held_torque_timing_integrates_a_zero_order_hold_exactly(arm):
    """A 250 Hz zero-order-hold controller (the simulator's loop; the light 2R's PD is
    stable at this rate, not at 100 Hz): with timing="held" the
    torque's integral over each step is exact and only the trapezoid on C^T qd - g is left,
    O(H^2): r within 0.1% of tau_ext of the first-order response after 0.1 s (measured
    4e-4 N*m), where the trapezoid on the held torque ("sampled") is wrong by
    (tau_{k+1} - tau_k) / 2 per step, > 10x more (measured 0.12 N*m).
    update() and run() agree for "held" too."""
    model, cf = arm
    t, q, qd, tau = simulate_2r_held(cf, 0.004)
    late = t > 0.1
    errors = {}
    for timing in ("sampled", "held"):
        r = MomentumObserver(model, GAINS, timing=timing).run(t, q, qd, tau)
        errors[timing] = np.abs(r - first_order(t))[late].max()
    assert errors["held"] < 1e-3 * np.abs(TAU_EXT).max(), errors
    assert errors["sampled"] > 10 * errors["held"], errors
    obs = MomentumObserver(model, GAINS, timing="held")
    one_by_one = np.array([obs.update(*row).residual for row in zip(t, q, qd, tau)])
    np.testing.assert_allclose(one_by_one, MomentumObserver(model, GAINS, timing="held").run(
        t, q, qd, tau), rtol=0, atol=1e-12)


def test_moving_plant_pushed_at_the_tip_gives_back_the_force(arm):
    """RK4 2R plant with a constant in-plane force F at the tip, tau_ext = J(q)^T F
    (closed-form J), swinging for 1 s then settling on a fixed reference: r follows the
    ideally filtered J^T F (dr/dt = K_O (J^T F - r)) while moving, and once settled r =
    J^T F and the estimated tip force = F (to 0.1% and 0.2%: the arm is still settling)."""
    model, cf = arm
    F = np.array([6.0, -4.0, 0.0])
    ref = lambda t: swinging(min(t, 1.0))                      # noqa: E731
    t, q, qd, tau, truth = simulate_2r(cf, 1e-3, duration=2.5,
                                       tau_ext=lambda q: cf.J(q)[:3].T @ F, ref=ref)
    r = MomentumObserver(model, GAINS).run(t, q, qd, tau)
    ideal = np.zeros_like(truth)
    for k in range(1, len(t)):
        a = np.exp(-GAINS * (t[k] - t[k - 1]))
        ideal[k] = a * ideal[k - 1] + (1 - a) * 0.5 * (truth[k - 1] + truth[k])
    scale = np.abs(truth).max()
    late = t > 0.3                                              # after the PD transient
    assert np.abs(r[late] - ideal[late]).max() < 2e-3 * scale
    np.testing.assert_allclose(r[-1], truth[-1], atol=1e-3 * scale)   # (still settling)
    est = tip_wrench(model, q[-1], r[-1], "tip", linear_only=True)
    np.testing.assert_allclose(est.F, F, atol=2e-3 * np.abs(F).max())


def test_exact_step_is_the_solution_of_the_linear_ode():
    """One step against the ODE dr/dt = k (u - r) integrated by RK4 with 10^4 substeps, and
    its small-step limit: forward Euler."""
    k, h, r0, u = np.array([3.0, 80.0]), 0.05, np.array([0.4, -2.0]), np.array([1.0, 0.5])
    r = r0.copy()
    for _ in range(10000):
        d = h / 10000
        f = lambda x: k * (u - x)                               # noqa: E731
        a = f(r)
        b = f(r + d / 2 * a)
        c = f(r + d / 2 * b)
        r = r + d / 6 * (a + 2 * b + 2 * c + f(r + d * c))
    p0, p1 = np.zeros(2), u * h                                 # beta = 0: u = dp / h
    np.testing.assert_allclose(exact_step(r0, k, h, p0, p1, np.zeros(2), np.zeros(2)), r,
                               rtol=1e-12)
    tiny = 1e-7
    euler = r0 + k * tiny * (u - r0)
    np.testing.assert_allclose(exact_step(r0, k, tiny, p0, u * tiny, 0 * u, 0 * u), euler,
                               rtol=1e-6)


# =================================================================== stream rules
def held_samples(cf, count=50, dt=1e-3):
    q = np.array([0.4, -1.1])
    return [(k * dt, q, np.zeros(2), cf.g(q) - TAU_EXT) for k in range(count)]


@pytest.mark.parametrize("bad, culprit", [
    (dict(q=[0.4, float("nan")]), "q"),
    (dict(qd=[0.0, float("inf")]), "qd"),
    (dict(tau=[float("nan"), 0.0]), "joint2|joint1"),
    (dict(tau=[1.0, 2.0, 3.0]), "tau"),
    (dict(q=[0.4]), "q"),
    (dict(t=float("nan")), "t"),
    (dict(t="soon"), "t"),
    (dict(t=0.0), "stale"),
    (dict(t=0.049), "stale"),
])
def test_bad_sample_is_refused_and_never_integrated(arm, bad, culprit):
    model, cf = arm
    samples = held_samples(cf)
    obs, ref = MomentumObserver(model, GAINS), MomentumObserver(model, GAINS)
    for s in samples:
        obs.update(*s)
        ref.update(*s)
    before = obs.residual
    t, q, qd, tau = samples[-1]
    args = dict(t=t + 1e-3, q=q, qd=qd, tau=tau)
    args.update(bad)
    with pytest.raises(InputError, match=culprit):
        obs.update(args["t"], args["q"], args["qd"], args["tau"])
    np.testing.assert_array_equal(obs.residual, before)
    assert obs.time == samples[-1][0]
    good = (t + 2e-3, q, qd, tau)
    np.testing.assert_array_equal(obs.update(*good).residual, ref.update(*good).residual)


def spinning(cf, q1, t, w=2.5, q2=-1.1):
    """Sample of the spinning motion (closed form tau_m = c + g - tau_ext)."""
    q, qd = np.array([q1 + w * t, q2]), np.array([w, 0.0])
    return q, qd, cf.c(q, qd) + cf.g(q) - TAU_EXT


@pytest.mark.parametrize("policy", ["bridge", "reset", None])
def test_gap_never_spikes(arm, policy):
    """Held still, then 30 ms without samples, after which the arm spins at 2.5 rad/s.
    Integrating that step (policy None: max_dt above the gap) puts Delta p / h, momentum
    gained in an unseen transient, into r: a spike many times tau_ext. bridge holds r,
    reset sets it to 0; both restart the integral there, and r then follows tau_ext again,
    exactly (beta = -tau_ext on the spinning motion) and bounded by it."""
    model, cf = arm
    obs = MomentumObserver(model, GAINS, max_dt=0.02 if policy else 1.0,
                          gap=policy or "bridge")
    samples = held_samples(cf, 100)
    for s in samples:
        obs.update(*s)
    before = obs.residual
    start = samples[-1][0] + 0.03
    step = obs.update(start, *spinning(cf, 0.9, 0.0))
    if policy is None:
        assert step.event == "step" and np.abs(step.residual).max() > 10 * np.abs(TAU_EXT).max()
        return
    assert step.event == "gap_" + ("bridged" if policy == "bridge" else "reset")
    assert obs.gaps == 1
    np.testing.assert_array_equal(step.residual, before if policy == "bridge" else 0 * before)
    r0 = step.residual
    for k in range(1, 400):
        r = obs.update(start + k * 1e-3, *spinning(cf, 0.9, k * 1e-3)).residual
        expected = TAU_EXT + np.exp(-GAINS * k * 1e-3) * (r0 - TAU_EXT)
        np.testing.assert_allclose(r, expected, atol=1e-11)
        assert (np.abs(r) <= np.abs(TAU_EXT) + 1e-11).all()


def test_reset_zero_and_bias(arm):
    """A constant offset d on the torque sensor reads as r -> -d; zero() removes it, the
    residual then shows only the contact; reset() restarts at the next sample."""
    model, cf = arm
    q, d = np.array([0.4, -1.1]), np.array([0.3, -0.2])
    obs = MomentumObserver(model, GAINS)
    t = np.arange(0, 1.0, 1e-3)
    for tk in t:
        obs.update(tk, q, np.zeros(2), cf.g(q) + d)
    np.testing.assert_allclose(obs.residual, -d, atol=1e-7)
    obs.zero()
    assert np.abs(obs.residual).max() == 0.0
    for tk in t + 1.0:
        r = obs.update(tk, q, np.zeros(2), cf.g(q) + d - TAU_EXT).residual
    np.testing.assert_allclose(r, TAU_EXT, atol=1e-7)
    obs.reset()
    assert obs.update(5.0, q, np.zeros(2), cf.g(q)).event == "start"
    np.testing.assert_allclose(obs.residual, d, atol=1e-7)      # the bias is kept
    obs.reset(clear_bias=True)
    np.testing.assert_array_equal(obs.residual, np.zeros(2))


def test_run_equals_update_sequence_and_refuses_bad_batches(arm):
    model, cf = arm
    t, q, qd, tau, _ = simulate_2r(cf, 2e-3, duration=0.3)
    t = t.copy()
    t[80:] += 0.1                                               # one gap
    a = MomentumObserver(model, GAINS, max_dt=0.05)
    b = MomentumObserver(model, GAINS, max_dt=0.05)
    batch = a.run(t, q, qd, tau)
    one = np.array([b.update(*s).residual for s in zip(t, q, qd, tau)])
    np.testing.assert_allclose(batch, one, rtol=0, atol=1e-13)
    assert a.gaps == b.gaps == 1
    tau_bad = tau.copy()
    tau_bad[7, 1] = np.nan
    with pytest.raises(InputError, match=r"tau\[7, 1\]"):
        a.run(t + 10, q, qd, tau_bad)
    with pytest.raises(InputError, match="stale"):
        a.run(t, q, qd, tau)                                    # not after the last sample
    with pytest.raises(InputError, match="N >= 1"):
        a.run(t[:0], q[:0], qd[:0], tau[:0])
    with pytest.raises(InputError, match=r"q \(N, 2\)"):
        a.run(t + 10, q[:-1], qd, tau)
    assert a.time == t[-1]
    np.testing.assert_array_equal(a.residual, batch[-1])


@pytest.mark.parametrize("kw, culprit", [
    (dict(gains=0.0), "gains"), (dict(gains=[1.0, -1.0]), "gains"),
    (dict(gains=[1.0, 2.0, 3.0]), "gains"), (dict(gains=float("nan")), "gains"),
    (dict(gains=1.0, effort="external"), "effort"), (dict(gains=1.0, gap="skip"), "gap"),
    (dict(gains=1.0, max_dt=0), "max_dt"), (dict(gains=1.0, friction="yes"), "friction"),
])
def test_bad_configuration_is_refused(arm, kw, culprit):
    with pytest.raises(InputError, match=culprit):
        MomentumObserver(arm[0], **kw)


def test_friction_is_subtracted_when_asked():
    """A viscous joint (damping b) held at constant speed w: the motor supplies b w more;
    without friction modelling r reads -b w, with friction=True it reads 0."""
    b, w = 0.7, 1.3
    xml = uf.planar_2r(1.0, 0.5, 0.5, 0.4, (0.25, 0.0), (0.2, 0.0), damping=(b, b))
    model = RobotModel.from_urdf_string(xml, gravity=(0.0, 0.0, -G0))   # horizontal arm
    cf = Planar2R(1.0, 0.5, 0.5, 0.4, (0.25, 0.0), (0.2, 0.0), 0.0, 0.0)
    res = {}
    for friction in (False, True):
        obs = MomentumObserver(model, 30.0, friction=friction)
        for tk in np.arange(0, 1.0, 1e-3):
            q, qd = np.array([w * tk, 0.6]), np.array([w, 0.0])
            r = obs.update(tk, q, qd, cf.c(q, qd) + b * qd).residual
        res[friction] = r
    np.testing.assert_allclose(res[False], [-b * w, 0.0], atol=1e-9)
    np.testing.assert_allclose(res[True], [0.0, 0.0], atol=1e-9)


# =================================================================== tip wrench
def test_planar_tip_force_recovered_exactly_away_from_singularity(arm):
    model, cf = arm
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = np.array([rng.uniform(-3, 3), rng.choice([-1, 1]) * rng.uniform(0.5, 2.6)])
        f = np.array([*rng.normal(0, 10, 2), 0.0])
        r = cf.J(q)[:3].T @ f                                   # closed-form J^T F
        est = tip_wrench(model, q, r, "tip", linear_only=True)
        np.testing.assert_allclose(est.F, f, atol=1e-9 * np.abs(f).max())
        assert not est.damped


def test_planar_tip_force_at_and_near_the_stretched_singularity(arm):
    """At q2 = 0 both columns of J_v are l * t (t the unit tangent), so only t . f is seen:
    the estimate is exactly (t . f) t and the radial part is reported as 0. Near it the
    damped gain never exceeds 1/eps, the estimate moves continuously with q2, and it is
    the plain inverse again once sigma_min >= eps."""
    model, cf = arm
    eps, f = 0.05, np.array([4.0, -3.0, 0.0])
    q1 = 0.7
    tangent = np.array([-math.sin(q1), math.cos(q1), 0.0])
    est = tip_wrench(model, np.array([q1, 0.0]), cf.J(np.array([q1, 0.0]))[:3].T @ f, "tip",
                     threshold=eps, linear_only=True)
    np.testing.assert_allclose(est.F, (tangent @ f) * tangent, atol=1e-12)
    assert est.damped
    previous = est.F
    for q2 in np.geomspace(1e-8, 0.3, 60):
        q = np.array([q1, q2])
        r = cf.J(q)[:3].T @ f
        est = tip_wrench(model, q, r, "tip", threshold=eps, linear_only=True)
        assert np.linalg.norm(est.F) <= np.linalg.norm(r) / eps * (1 + 1e-12)
        assert np.linalg.norm(est.F - previous) < 1.0           # no jump along the sweep
        previous = est.F
        sig_min = cf.l1 * cf.l2 * abs(math.sin(q2)) / np.linalg.svd(cf.J(q)[:2],
                                                                     compute_uv=False)[0]
        if sig_min >= eps * 1.01:
            np.testing.assert_allclose(est.F, f, atol=1e-9)


@pytest.fixture(scope="module")
def panda():
    """example-robot-data's Panda with the fingers fixed: a 7-DOF serial arm."""
    with open(PANDA, encoding="utf-8") as fh:
        xml = fh.read()
    xml = re.sub(r'(<joint name="panda_finger_joint[12]" type=")prismatic', r"\1fixed", xml)
    return xml, RobotModel.from_urdf_string(xml)


def panda_states(model, count, seed):
    rng = np.random.default_rng(seed)
    lo, hi = np.array(model.position_lower), np.array(model.position_upper)
    return rng.uniform(lo + 0.3, hi - 0.3, (count, model.n))


def test_panda_tip_wrench_equals_the_applied_wrench_and_the_consistent_inverse(panda):
    """Away from singularities r = J^T F gives back F; the dynamically consistent
    J^{+T} r = Lambda J M^-1 r (Lambda from the model) gives the same F there, since
    Lambda J M^-1 J^T = I. Batched = per state."""
    _, model = panda
    tip = model.default_tip
    Q = panda_states(model, 12, 4)
    F = np.random.default_rng(5).normal(0, [20, 20, 20, 3, 3, 3], (12, 6))
    R = np.einsum("nij,ni->nj", model.jacobian(Q, tip), F)
    est = tip_wrench(model, Q, R, tip, threshold=0.01)
    for k in range(12):
        if est.sigma[k, -1] < 0.03:
            continue                                            # too close to singular
        np.testing.assert_allclose(est.F[k], F[k], atol=1e-8 * np.abs(F[k]).max())
        J, M = model.jacobian(Q[k], tip), model.mass_matrix(Q[k])
        consistent = model.effective_inertia(Q[k], tip) @ J @ np.linalg.solve(M, R[k])
        np.testing.assert_allclose(consistent, F[k], atol=1e-6 * np.abs(F[k]).max())
        np.testing.assert_allclose(tip_wrench(model, Q[k], R[k], tip, threshold=0.01).F,
                                   est.F[k], atol=1e-12 * np.abs(F[k]).max())


def test_panda_near_singularity_damped_estimate_stays_bounded(panda):
    """Arm stretched upright (q = 0 but q2 = 1e-5; q4 = 0 is outside the Panda's limits
    but kinematically valid): sigma_min ~ 1e-5. A 0.05 N*m torque error along the nearly invisible direction is
    amplified by 1/sigma_min by the exact inverses and by at most 1/eps by ours."""
    _, model = panda
    tip, eps = model.default_tip, 0.01
    q = np.array([0.0, 1e-5, 0.0, 0.0, 0.0, 0.0, 0.0])
    J = model.jacobian(q, tip)
    U, s, Vt = np.linalg.svd(J.T, full_matrices=False)
    assert s[-1] < 1e-4
    noise = 0.05 * U[:, -1]                                     # torque error, N*m
    est = tip_wrench(model, q, noise, tip, threshold=eps)
    assert est.damped and np.linalg.norm(est.F) <= 0.05 / eps * (1 + 1e-9)
    pinv = np.linalg.pinv(J.T, rcond=1e-15) @ noise
    consistent = model.effective_inertia(q, tip) @ J @ np.linalg.solve(model.mass_matrix(q),
                                                                         noise)
    assert np.linalg.norm(pinv) > 100 * np.linalg.norm(est.F)
    assert np.linalg.norm(consistent) > 100 * np.linalg.norm(est.F)


# =================================================================== detection
def test_hysteresis_enter_and_leave(arm):
    model, _ = arm
    det = ContactDetector(model, enter=[1.0, 2.0], leave=[0.5, 0.4])
    seq = [([0.9, 1.9], False, ""), ([1.1, 0.0], True, "enter"), ([0.6, 0.0], True, ""),
           ([0.4, 0.45], True, ""), ([0.4, 0.3], False, "leave"), ([0.9, 1.99], False, ""),
           ([0.0, -2.1], True, "enter")]
    for k, (r, inside, event) in enumerate(seq):
        s = det.update(0.1 * k, r)
        assert (s.in_contact, s.event) == (inside, event), k
        assert s.residual_norm == pytest.approx(np.linalg.norm(r))
        if inside:
            assert s.detection_time == pytest.approx(0.1 if k < 4 else 0.6)
    assert s.joint == 1 and s.link == "link2"
    with pytest.raises(InputError, match="leave"):
        ContactDetector(model, enter=1.0, leave=[0.5, 1.5])
    with pytest.raises(InputError, match="r must"):
        det.update(1.0, [np.nan, 0.0])


def test_panda_topology_and_isolation_of_each_link(panda):
    """r = J_L(p)^T f for a force at a point p of link L off its joint's axis isolates L
    (a force through the axis, e.g. at the origin of a Panda link frame, leaves that joint's
    residual at 0 and isolates the link before); the topology names each joint's child
    link."""
    _, model = panda
    topo = arm_topology(model)
    assert topo.joint_link == tuple(f"panda_link{i}" for i in range(1, 8))
    assert topo.frame_joint["panda_hand_tcp"] == 6 and topo.frame_joint["panda_link0"] == -1
    det = ContactDetector(model, enter=0.2)
    q = panda_states(model, 1, 6)[0]
    rng = np.random.default_rng(7)
    for j in range(1, 7):
        link = topo.joint_link[j]
        f = rng.normal(0, 30, 3)
        X = model.frame_pose(q, link)
        lever = X[:3, :3] @ np.array([0.05, 0.05, 0.0])        # off the joint axis (z)
        J = model.jacobian(q, link)
        r = (J[:3] - np.cross(lever, J[3:].T).T).T @ f           # force at origin + lever
        det.reset()
        state = det.update(0.0, r)
        assert state.in_contact and state.link == link and state.joint == j


def test_most_distal_on_a_branching_tree():
    """On a tree, an active joint with an active descendant is not the most distal."""
    model = RobotModel.from_urdf_string(uf.random_tree(seed=3, with_mimic=False))
    topo = arm_topology(model)
    n = model.n
    for j in range(n):
        ancestors = topo.moves[topo.joint_link[j]]
        assert most_distal(topo, ancestors) == j                 # the path root -> j
    assert most_distal(topo, np.zeros(n, bool)) == -1


# =================================================================== contact point
@pytest.mark.parametrize("link, s", [("panda_link4", 0.3), ("panda_link6", 0.7),
                                     ("panda_link7", 0.55), ("panda_link2", 0.8)])
def test_panda_contact_point_recovered_on_the_link(panda, link, s):
    """A single force at a known point of the link's segment: the point (to 1e-4 of the
    segment) and the force come back, with a zero misfit. link2 has 2 moving joints:
    not identifiable (None)."""
    _, model = panda
    topo = arm_topology(model)
    q = panda_states(model, 1, 8)[0]
    a, b = link_segment(model, topo, q, link)
    p = a + s * (b - a)
    o = model.frame_pose(q, link)[:3, 3]
    J = model.jacobian(q, link)
    Jp = J[:3] - np.cross(p - o, J[3:].T).T                     # linear Jacobian at p
    f = np.array([12.0, -20.0, 7.0])
    r = Jp.T @ f
    est = contact_point(model, q, r, link, topo)
    if link == "panda_link2":
        assert est is None
        return
    length = np.linalg.norm(b - a)
    assert length > 0.05
    assert np.linalg.norm(est.point - p) < 2e-4 * length
    np.testing.assert_allclose(est.force, f, rtol=0, atol=2e-2)
    assert est.fit < 1e-3


def test_contact_point_on_the_last_link_lies_on_the_line_of_action(panda):
    """With 7 joints the 6-D wrench at the link origin is identified: a single force at p
    has moment m = (p - o) x f, so p lies on {o + f x m / |f|^2 + l f}."""
    _, model = panda
    topo = arm_topology(model)
    q = panda_states(model, 1, 9)[0]
    link = "panda_link7"
    a, b = link_segment(model, topo, q, link)
    p = a + 0.4 * (b - a)
    f = np.array([-5.0, 18.0, 9.0])
    o = model.frame_pose(q, link)[:3, 3]
    r = model.jacobian(q, link).T @ np.concatenate([f, np.cross(p - o, f)])
    F = tip_wrench(model, q, r, link, threshold=1e-3).F
    foot = o + np.cross(F[:3], F[3:]) / (F[:3] @ F[:3])
    est = contact_point(model, q, r, link, topo)
    d = est.point - foot
    assert np.linalg.norm(d - (d @ f) / (f @ f) * f) < 1e-4     # on the line
    assert np.linalg.norm(est.point - p) < 1e-4


# =================================================================== MuJoCo plant
import mujoco  # noqa: E402  (requirements.txt: missing, this file fails, never skips)

DT = 1e-3
K_O = 50.0
HOLD_Q = np.array([0.0, -0.4, 0.0, -2.0, 0.0, 1.6, 0.8])
KP = np.array([600, 600, 600, 600, 250, 150, 50.0])
KD = np.sqrt(KP)


def panda_spec(xml, damping):
    """MjSpec of the URDF (collisions stripped, fusestatic off, no inertia from geometry,
    one motor per joint, 1 kHz); URDF damping kept or zeroed."""
    spec = mujoco.MjSpec.from_string(re.sub(r"<collision>.*?</collision>", "", xml,
                                            flags=re.S))
    spec.compiler.fusestatic = False
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    for j in spec.joints:
        if not damping:
            j.damping = [0.0, 0.0, 0.0]
        act = spec.add_actuator()
        act.target, act.trntype, act.gear = j.name, mujoco.mjtTrn.mjTRN_JOINT, [1, 0, 0, 0, 0, 0]
    spec.option.timestep = DT
    return spec


def mujoco_panda(xml, damping):
    """The Panda's MuJoCo model, RK4 at 1 kHz."""
    spec = panda_spec(xml, damping)
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    return spec.compile()


def control(model, q, qd, ref_q, ref_qd):
    """tau = g(q) (ours) + PD, saturated at the URDF effort limits (as MuJoCo's actuators
    are: the applied torque is then the commanded one)."""
    limit = np.asarray(model.effort_limits)
    return np.clip(model.gravity_torques(q) + KP * (ref_q - q) + KD * (ref_qd - qd),
                   -limit, limit)


def reference(t, moving):
    if not moving:
        return HOLD_Q, np.zeros(7)
    w = np.array([1.0, 0.8, 1.2, 0.9, 1.5, 1.1, 1.3])
    return HOLD_Q + 0.3 * np.sin(w * t), 0.3 * w * np.cos(w * t)


def run_plant(xml, model, body, wrench, point_local=None, moving=False, t_on=0.7,
              duration=2.0, damping=False):
    """Gravity compensation with OUR g(q) + PD (hold or track); from t_on a wrench
    [f; m] (world axes) on ``body`` at its COM (or at point_local in the body frame).
    -> dict of (N,) t, (N, 7) q, qd, tau (applied), truth (true external joint torques)."""
    m = mujoco_panda(xml, damping)
    d = mujoco.MjData(m)
    assert tuple(m.joint(i).name for i in range(m.njnt)) == model.joint_names
    b = m.body(body).id
    ref_q, ref_qd = reference(0.0, moving)
    d.qpos[:], d.qvel[:] = ref_q, ref_qd
    rows = []
    while d.time < duration - DT / 2:
        q, qd = d.qpos.copy(), d.qvel.copy()
        ref_q, ref_qd = reference(d.time, moving)
        tau = control(model, q, qd, ref_q, ref_qd)
        d.ctrl[:] = tau
        truth = np.zeros(7)
        d.qfrc_applied[:] = 0.0
        if d.time >= t_on - DT / 2:
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)                              # cdof, used by mj_applyFT
            point = d.xipos[b] if point_local is None else \
                d.xpos[b] + d.xmat[b].reshape(3, 3) @ point_local
            mujoco.mj_applyFT(m, d, wrench[:3], wrench[3:], point, b, truth)
            d.qfrc_applied[:] = truth
        rows.append((d.time, q, qd, tau, truth))
        mujoco.mj_step(m, d)
    return dict(zip(("t", "q", "qd", "tau", "truth"), (np.array(a) for a in zip(*rows))))


def filtered(t, truth, gains=K_O):
    """The ideal observer output: truth through dr/dt = K (truth - r), exact per step for
    a truth held over each step (the applied force is constant; its joint image is not
    while the arm moves)."""
    r = np.zeros_like(truth)
    for k in range(1, len(t)):
        a = math.exp(-gains * (t[k] - t[k - 1]))
        r[k] = a * r[k - 1] + (1 - a) * 0.5 * (truth[k - 1] + truth[k])
    return r


PUSH = np.array([10.0, -15.0, 8.0, 0.0, 0.0, 0.0])            # at the COM of link 5
HAND_PUSH = (np.array([20.0, -30.0, 16.0, 0.0, 0.0, 0.0]), np.array([0.0, 0.08, 0.06]))
LINK6_PUSH = (np.array([-15.0, 10.0, 8.0, 0.0, 0.0, 0.0]), np.array([0.1, 0.1, 0.0]))
ENTER, LEAVE = 1.0, 0.5                                         # N*m, every joint


def check_contact_run(model, run, link, t_on, enter=ENTER, leave=LEAVE, tau_meas=None,
                      friction=False):
    """Observer + detector on a plant run: -> (residuals, states, steady relative error)."""
    obs = MomentumObserver(model, K_O, friction=friction)
    r = obs.run(run["t"], run["q"], run["qd"], run["tau"] if tau_meas is None else tau_meas)
    det = ContactDetector(model, enter=enter, leave=leave)
    states = [det.update(tk, rk) for tk, rk in zip(run["t"], r)]
    free = run["t"] < t_on - DT / 2
    assert not any(s.in_contact for s, f in zip(states, free) if f), "false detection"
    first = next(s for s in states if s.in_contact)
    assert first.detection_time - t_on <= 3.0 / K_O
    assert states[-1].link == link
    truth = run["truth"][-1]
    return r, states, np.abs(r[-1] - truth).max() / np.abs(truth).max()


@pytest.fixture(scope="module")
def held_runs(panda):
    xml, model = panda
    return {"panda_link5": run_plant(xml, model, "panda_link5", PUSH),
            "panda_hand": run_plant(xml, model, "panda_hand", HAND_PUSH[0],
                                    point_local=HAND_PUSH[1])}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("body, link", [("panda_link5", "panda_link5"),
                                        ("panda_hand", "panda_link7")])
def test_mujoco_held_arm_pushed_on_a_link(panda, held_runs, body, link):
    """Gravity compensation, a push on a link (20 N at link 5's COM, 40 N on the hand off
    joint 7's axis): residual = MuJoCo's J^T F to 1% (here ~1e-5), detected within 3/K_O,
    right link, no false detection before the push."""
    _, model = panda
    run = held_runs[body]
    _, _, error = check_contact_run(model, run, link, 0.7)
    assert error < 0.01, error


@pytest.mark.timeout(300)
def test_mujoco_tip_wrench_from_a_push_on_the_hand(panda, held_runs):
    """The push f at the point c of the hand equals, at the tip frame origin p_tip, the
    wrench [f; (c - p_tip) x f]: estimated within 2%."""
    xml, model = panda
    run = held_runs["panda_hand"]
    obs = MomentumObserver(model, K_O)
    r = obs.run(run["t"], run["q"], run["qd"], run["tau"])[-1]
    q = run["q"][-1]
    m = mujoco_panda(xml, False)
    d = mujoco.MjData(m)
    d.qpos[:] = q
    mujoco.mj_kinematics(m, d)
    b = m.body("panda_hand").id
    c = d.xpos[b] + d.xmat[b].reshape(3, 3) @ HAND_PUSH[1]
    tip = model.default_tip
    p_tip = model.frame_pose(q, tip)[:3, 3]
    f = HAND_PUSH[0][:3]
    expected = np.concatenate([f, np.cross(c - p_tip, f)])
    est = tip_wrench(model, q, r, tip, threshold=0.01)
    assert not est.damped
    assert np.linalg.norm(est.F[:3] - expected[:3]) < 0.02 * np.linalg.norm(expected[:3])
    assert np.linalg.norm(est.F[3:] - expected[3:]) < 0.02 * np.linalg.norm(expected[3:])


@pytest.fixture(scope="module")
def tracking_runs(panda):
    xml, model = panda
    return {damping: run_plant(xml, model, "panda_link6", LINK6_PUSH[0],
                               point_local=LINK6_PUSH[1], moving=True, t_on=1.5,
                               duration=2.5, damping=damping)
            for damping in (False, True)}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("damping", [False, True])
def test_mujoco_tracking_then_pushed(panda, tracking_runs, damping):
    """Tracking a 7-joint sinusoid: no false detection over 1.5 s; after the push on link 6
    the residual equals the ideally filtered truth to 1% of the applied torque (the
    discretisation error), the raw truth to 2% (the filter's lag behind a moving J^T F),
    detection within 3/K_O, link 6 isolated. damping: MuJoCo's URDF damping on and the
    observer's friction model (the URDF's viscous term) on."""
    _, model = panda
    run = tracking_runs[damping]
    r, _, _ = check_contact_run(model, run, "panda_link6", 1.5, friction=damping)
    scale = np.abs(run["truth"][-1]).max()
    late = run["t"] > 2.0
    ideal = filtered(run["t"], run["truth"])
    assert np.abs(r[late] - ideal[late]).max() < 0.01 * scale
    assert np.abs(r[late] - run["truth"][late]).max() < 0.02 * scale
    free = run["t"] < 1.5
    assert np.abs(r[free]).max() < 0.05 * ENTER                 # margin of the thresholds


@pytest.mark.timeout(300)
def test_mujoco_one_percent_torque_noise(panda, tracking_runs):
    """Measured torque with 1% multiplicative Gaussian noise (sigma_i = 0.01 |tau_i| per
    sample): with enter = 1.0 and leave = 0.5 N*m on every joint, no false detection while
    tracking, and the push is still detected within 3/K_O on link 6."""
    _, model = panda
    run = tracking_runs[False]
    rng = np.random.default_rng(11)
    noisy = run["tau"] * (1 + 0.01 * rng.standard_normal(run["tau"].shape))
    r, _, error = check_contact_run(model, run, "panda_link6", 1.5, tau_meas=noisy)
    free = run["t"] < 1.5
    assert np.abs(r[free]).max() < 0.5 * ENTER                  # margin of the thresholds
    assert error < 0.05


# =================================================================== README example
def test_readme_contact_example_runs_and_says_true():
    """The README's "Contact awareness (core)" block runs, and its comments hold."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    with open(os.path.join(root, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    section = text[text.index("### Contact awareness (core)"):]
    code = section[section.index("```python\n") + 10:section.index("```\n", 10)]
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    model, q, F, r = scope["model"], scope["q"], scope["F"], scope["r"]
    np.testing.assert_allclose(r, model.jacobian(q, "panda_link8").T @ F,
                               atol=1e-4 * np.abs(F).max())
    np.testing.assert_allclose(scope["wrench"], F, atol=1e-4 * np.abs(F).max())
    assert scope["state"].link == "panda_link6" and scope["state"].in_contact


def test_contact_api_refuses_bad_arguments(panda):
    _, model = panda
    q = np.zeros(7)
    with pytest.raises(InputError, match="threshold"):
        tip_wrench(model, q, np.zeros(7), model.default_tip, threshold=0.0)
    with pytest.raises(InputError, match="r must"):
        tip_wrench(model, q, np.zeros(6), model.default_tip)
    with pytest.raises(InputError, match=r"r\[2\]"):
        tip_wrench(model, q, [0, 0, np.nan, 0, 0, 0, 0], model.default_tip)
    with pytest.raises(InputError, match="unknown link 'nowhere'"):
        contact_point(model, q, np.ones(7), "nowhere")
    with pytest.raises(InputError, match="samples"):
        contact_point(model, q, np.ones(7), "panda_link7", samples=2)


# =================================================================== MuJoCo: real collisions
# A capsule on one link (contype 2) and a box in the world (conaffinity 2): they collide,
# the arm never collides with itself. (body, capsule endpoints in the body frame, radius,
# place along the capsule where the box is put, the link our model must isolate)
COLLIDERS = {
    "hand": ("panda_hand", ([0.0, -0.1, 0.06], [0.0, 0.1, 0.06]), 0.03, 0.5, "panda_link7"),
    "forearm": ("panda_link4", ([0.0, 0.0, 0.0], [-0.0825, 0.384, 0.0]), 0.04, 0.7,
                "panda_link4"),
}


def collision_plant(xml, body, ends, radius, along):
    """Panda + a capsule on ``body`` + a 10 cm box that the capsule's point ``along`` meets
    when joint 1 turns from 0 towards 0.8 rad (placed 0.2 rad ahead of where that point is
    at q1 = 0.35). implicitfast: contact forces are held over each step, so the true
    external torque of a step is efc_J^T efc_force over the contact rows."""
    spec = panda_spec(xml, damping=False)
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    geom = spec.body(body).add_geom()
    geom.type, geom.size = mujoco.mjtGeom.mjGEOM_CAPSULE, [radius, 0.0, 0.0]
    geom.fromto = np.r_[ends[0], ends[1]]
    geom.contype, geom.conaffinity = 2, 0
    m = spec.compile()
    d = mujoco.MjData(m)
    d.qpos[:] = HOLD_Q
    d.qpos[0] = 0.35
    mujoco.mj_forward(m, d)
    b = m.body(body).id
    c = d.xpos[b] + d.xmat[b].reshape(3, 3) @ ((1 - along) * np.array(ends[0]) +
                                               along * np.array(ends[1]))
    angle, rho = math.atan2(c[1], c[0]) + 0.2, math.hypot(c[0], c[1])
    box = spec.worldbody.add_geom()
    box.type, box.size = mujoco.mjtGeom.mjGEOM_BOX, [0.05, 0.05, 0.05]
    box.pos = [rho * math.cos(angle), rho * math.sin(angle), c[2]]
    box.contype, box.conaffinity = 0, 2
    return spec.compile()


def run_collision(xml, model, name, duration=3.0):
    """Joint 1 ramps 0 -> 0.8 rad in 2 s (the others held) into the box. -> dict of t, q,
    qd, tau, truth (N, 7), and the last contact point and capsule axis (root frame)."""
    body, ends, radius, along, _ = COLLIDERS[name]
    m = collision_plant(xml, body, ends, radius, along)
    d = mujoco.MjData(m)
    d.qpos[:] = HOLD_Q
    contact_rows = int(mujoco.mjtConstraint.mjCNSTR_CONTACT_FRICTIONLESS)
    rows = []
    while d.time < duration - DT / 2:
        t, q, qd = d.time, d.qpos.copy(), d.qvel.copy()
        ref_q, ref_qd = HOLD_Q.copy(), np.zeros(7)
        ref_q[0], ref_qd[0] = 0.4 * min(t, 2.0), (0.4 if t < 2.0 else 0.0)
        tau = control(model, q, qd, ref_q, ref_qd)
        d.ctrl[:] = tau
        mujoco.mj_step(m, d)                   # efc_* now: the forces of this step
        sel = d.efc_type[:d.nefc] >= contact_rows
        J = d.efc_J[:d.nefc * m.nv].reshape(d.nefc, m.nv)[sel]
        rows.append((t, q, qd, tau, J.T @ d.efc_force[:d.nefc][sel]))
    run = dict(zip(("t", "q", "qd", "tau", "truth"), (np.array(a) for a in zip(*rows))))
    b = m.body(body).id
    R, x = d.xmat[b].reshape(3, 3), d.xpos[b]
    run["axis"] = np.array([x + R @ np.array(ends[0]), x + R @ np.array(ends[1])])
    run["contact"] = d.contact[0].pos.copy() if d.ncon else None
    return run


@pytest.fixture(scope="module")
def collision_runs(panda):
    xml, model = panda
    return {name: run_collision(xml, model, name) for name in COLLIDERS}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(COLLIDERS))
def test_mujoco_collision_detected_isolated_and_located(panda, collision_runs, name):
    """A real collision (MuJoCo contact between a link's capsule and a box): no detection
    before the first contact force, detection within 3/K_O of it, the isolated link is
    never beyond the one that hit and is that one once the arm presses; the pressing
    arm's residual equals the true contact torque to 1%; the contact point estimated on
    the capsule's axis is within 1.5 cm of the true contact point's projection on it
    (capsule radius 3-4 cm; friction moves the force's line off the axis)."""
    _, model = panda
    run, link = collision_runs[name], COLLIDERS[name][4]
    topo = arm_topology(model)
    hit = np.flatnonzero(np.abs(run["truth"]).max(axis=1) > 0)
    assert hit.size, "the arm never reached the box"
    t_hit = run["t"][hit[0]]
    r = MomentumObserver(model, K_O).run(run["t"], run["q"], run["qd"], run["tau"])
    det = ContactDetector(model, enter=ENTER, leave=LEAVE)
    states = [det.update(tk, rk) for tk, rk in zip(run["t"], r)]
    assert not any(s.in_contact for s, tk in zip(states, run["t"]) if tk < t_hit)
    first = next(s for s in states if s.in_contact)
    assert first.detection_time - t_hit <= 3.0 / K_O
    deepest = topo.joint_link.index(link)
    assert all(s.joint <= deepest for s in states)
    assert states[-1].link == link and states[-1].in_contact
    truth = run["truth"][-1]
    assert np.abs(r[-1] - truth).max() < 0.01 * np.abs(truth).max()
    est = contact_point(model, run["q"][-1], r[-1], link, topo, segment=run["axis"])
    a, b = run["axis"]
    s = np.clip((run["contact"] - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0)
    assert np.linalg.norm(est.point - (a + s * (b - a))) < 0.015
