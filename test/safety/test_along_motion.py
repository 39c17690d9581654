"""safety.along_motion: a sampled motion's ratios per point over time, the retiming, and
the standard's shortcut beside the configuration-dependent value.

References:
* stretched point-mass 2R arm (seed 001) swinging about joint 1 with q2 = 0: along its
  motion (the tangent) the tip feels exactly m2 and the elbow m1 (docs/safety.md, "Closed
  forms": a^T M^-1 a with a = (l1 + l2, l2) is 1/m2, with a = (l1, 0) it is l1^2 M22 / det M
  = 1/m1), speeds (l1 + l2)|qd1| and l1|qd1|; the limit written out from the table's hands
  and fingers values (m_H 0.6 kg, k 75 N/mm, F_T = 2 x 140 N);
* bent point-mass 2R arm on a motion moving both joints: the seed's J and M written out,
  m = 1 / (u^T J M^-1 J^T u) along u = J qd / |J qd|;
* SafetyMonitor.assess sample by sample (Panda), and the retiming property (ratios / s)
  recomputed from qd / s, for check_trajectory's s and for the motion at its limit s*.
"""
import math
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "core"))
import urdf_factory as uf  # noqa: E402

from manip_dynamics import InputError, RobotModel  # noqa: E402
from manip_dynamics.robots import path as robot_path  # noqa: E402
from manip_dynamics.safety import (BodyModel, MonitoredPoint, SafetyMonitor,  # noqa: E402
                                   default_points, safety_along_motion)

L1, L2 = 0.6, 0.45
M_H, K_H, F_T = 0.6, 75e3, 280.0          # hands and fingers, ISO/TS 15066 Tables A.2, A.3


def v_max_hand(m):
    """F_T / sqrt(mu k), mu = (1/m_H + 1/m)^-1, written out."""
    return F_T / np.sqrt(K_H / (1.0 / M_H + 1.0 / np.asarray(m, dtype=float)))


def swing(K=201, A=1.0, w=math.pi):
    """q1 = A (1 - cos w t) (starts at rest, as the demo's reference), q2 = 0."""
    t = np.linspace(0.0, 2.0, K)
    q = np.stack([A * (1 - np.cos(w * t)), np.zeros(K)], axis=1)
    qd = np.stack([A * w * np.sin(w * t), np.zeros(K)], axis=1)
    return t, q, qd


@pytest.mark.parametrize("m1, m2, unsafe", [(1.0, 3.0, 1.0), (4.0, 1.0, 0.0)])
def test_stretched_2r_swing_against_closed_form(m1, m2, unsafe):
    model = RobotModel.from_urdf_string(uf.point_mass_2r(m1, m2, L1, L2))
    region = BodyModel.load()["hands_fingers"]
    t, q, qd = swing()
    res = safety_along_motion(model, region, t, q, qd)
    assert res.labels == ("link1", "link2", "tip")
    w1 = np.abs(qd[:, 0])
    moving = w1 > 0
    assert not moving[0] and moving[1:].all()
    # link1's origin is on joint 1's axis: it never moves
    assert (res.speed[:, 0] == 0).all() and (res.ratio[:, 0] == 0).all()
    np.testing.assert_allclose(res.speed[:, 1], L1 * w1, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(res.speed[:, 2], (L1 + L2) * w1, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(res.effective_mass[moving, 1], m1, rtol=1e-9)
    np.testing.assert_allclose(res.effective_mass[moving, 2], m2, rtol=1e-9)
    rho = np.stack([L1 * w1 / v_max_hand(m1), (L1 + L2) * w1 / v_max_hand(m2)], axis=1)
    np.testing.assert_allclose(res.ratio[:, 1:], rho, rtol=1e-9, atol=1e-15)
    s = max(1.0, rho.max())
    assert s > 1 and res.scale == pytest.approx(s, rel=1e-9)
    np.testing.assert_allclose(res.t_retimed, t * s, rtol=1e-9)
    governing = 1 + np.argmax(rho, axis=1)
    assert (res.worst[moving] == governing[moving]).all()
    m_gov = np.where(governing == 1, m1, m2)
    # the shortcut: m_R = (m1 + m2) / 2 (no payload), its v_max over the governing point's
    assert res.simplified_mass == pytest.approx((m1 + m2) / 2, rel=1e-12)
    assert res.simplified_v_max == pytest.approx(v_max_hand((m1 + m2) / 2), rel=1e-12)
    np.testing.assert_allclose(res.shortcut_ratio[moving],
                               v_max_hand((m1 + m2) / 2) / v_max_hand(m_gov[moving]),
                               rtol=1e-9)
    assert np.isnan(res.shortcut_ratio[0]) and not res.moving[0] and res.moving[1:].all()
    assert res.unsafe_fraction == unsafe


def closed_form_2r(m1, m2, q, qd):
    """Per sample: speeds (2,), effective masses (2,) of [elbow, tip] along their motion,
    from the seed's J and M written out."""
    q1, q2 = q
    s1, c1, s12, c12, c2 = (math.sin(q1), math.cos(q1), math.sin(q1 + q2),
                            math.cos(q1 + q2), math.cos(q2))
    J_tip = np.array([[-L1 * s1 - L2 * s12, -L2 * s12], [L1 * c1 + L2 * c12, L2 * c12]])
    J_elbow = np.array([[-L1 * s1, 0.0], [L1 * c1, 0.0]])
    M = np.array([[m1 * L1 ** 2 + m2 * (L1 ** 2 + 2 * L1 * L2 * c2 + L2 ** 2),
                   m2 * (L1 * L2 * c2 + L2 ** 2)],
                  [m2 * (L1 * L2 * c2 + L2 ** 2), m2 * L2 ** 2]])
    speed, mass = [], []
    for J in (J_elbow, J_tip):
        v = J @ qd
        u = v / np.linalg.norm(v)
        speed.append(np.linalg.norm(v))
        mass.append(1.0 / (u @ J @ np.linalg.solve(M, J.T) @ u))
    return np.array(speed), np.array(mass)


def test_bent_2r_motion_against_closed_form_J_and_M():
    m1, m2 = 2.5, 1.5
    model = RobotModel.from_urdf_string(uf.point_mass_2r(m1, m2, L1, L2))
    region = BodyModel.load()["hands_fingers"]
    t = np.linspace(0.0, 3.0, 121)
    q = np.stack([0.8 * np.sin(1.3 * t), 0.4 + 1.5 * np.sin(0.9 * t + 0.3)], axis=1)
    qd = np.stack([0.8 * 1.3 * np.cos(1.3 * t), 1.5 * 0.9 * np.cos(0.9 * t + 0.3)], axis=1)
    points = [MonitoredPoint("link2", (0.0, 0.0, 0.0), "elbow"),
              MonitoredPoint("tip", (0.0, 0.0, 0.0), "tip")]
    res = safety_along_motion(model, region, t, q, qd, points=points)
    ref = [closed_form_2r(m1, m2, q[k], qd[k]) for k in range(len(t))]
    speed = np.array([r[0] for r in ref])
    mass = np.array([r[1] for r in ref])
    np.testing.assert_allclose(res.speed, speed, rtol=1e-10)
    np.testing.assert_allclose(res.effective_mass, mass, rtol=1e-8)
    rho = speed / v_max_hand(mass)
    np.testing.assert_allclose(res.ratio, rho, rtol=1e-8)
    gov = np.argmax(rho, axis=1)
    assert (res.worst == gov).all()
    c = v_max_hand((m1 + m2) / 2) / v_max_hand(mass[np.arange(len(t)), gov])
    np.testing.assert_allclose(res.shortcut_ratio, c, rtol=1e-8)
    np.testing.assert_allclose(res.governing("effective_mass"), mass[np.arange(len(t)), gov],
                               rtol=1e-8)
    # the tip's mass along this motion changes with q2 and the direction: the shortcut is
    # unsafe on part of it and conservative on the rest
    assert 0.05 < np.mean(c > 1) < 0.95
    assert res.unsafe_fraction == pytest.approx(np.mean(c > 1), abs=1e-15)


@pytest.fixture(scope="module")
def panda():
    model = RobotModel.from_urdf_file(robot_path("panda"))
    return model, default_points(model), BodyModel.load()["hands_fingers"]


def panda_motion(K=15, speed=2.0, seed=5):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.4, K)
    q = np.linspace(np.zeros(7), rng.uniform(-1, 1, 7), K)
    return t, q, rng.uniform(-speed, speed, (K, 7))


def test_every_sample_equals_the_monitors_assessment(panda):
    model, points, region = panda
    t, q, qd = panda_motion()
    qd[4] = 0.0                                # one sample at rest
    res = safety_along_motion(model, region, t, q, qd, points=points)
    mon = SafetyMonitor(model, points, region)
    for k in range(len(t)):
        s = mon.assess(q[k], qd[k])
        np.testing.assert_array_equal(res.ratio[k], s.ratio)
        np.testing.assert_array_equal(res.v_max[k], s.v_max)
        np.testing.assert_array_equal(res.effective_mass[k], s.motion.effective_mass)
        np.testing.assert_array_equal(res.speed[k], s.motion.speed)
        assert res.worst[k] == s.worst
        if k == 4:
            assert not res.moving[k] and np.isnan(res.shortcut_ratio[k])
        else:
            assert res.shortcut_ratio[k] == s.simplified_v_max / s.v_max[s.worst]
    assert res.worst_ratio == max(mon.assess(q[k], qd[k]).ratio.max() for k in range(len(t)))
    assert res.ratio[res.worst_sample].max() == res.worst_ratio


@pytest.mark.parametrize("speed", [2.0, 0.02])
def test_retimed_ratios_are_the_ratios_over_s(panda, speed):
    model, points, region = panda
    t, q, qd = panda_motion(speed=speed)
    res = safety_along_motion(model, region, t, q, qd, points=points)
    if speed > 1:
        assert res.scale > 1 and res.ratio_retimed.max() == pytest.approx(1.0, rel=1e-12)
    else:                                      # slow enough already: nothing to retime
        assert res.scale == 1.0 and res.worst_ratio < 1
    np.testing.assert_allclose(res.ratio_retimed, res.ratio / res.scale, rtol=1e-12)
    np.testing.assert_allclose(res.t_retimed, t * res.scale, rtol=1e-15)
    # at its limit (s* = the worst ratio, a speed-up when the motion is slow): max ratio 1
    assert res.limit_scale == res.worst_ratio
    np.testing.assert_allclose(res.ratio_at_limit, res.ratio / res.limit_scale, rtol=1e-12)
    assert res.ratio_at_limit.max() == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(res.t_at_limit, t * res.limit_scale, rtol=1e-15)


@pytest.mark.parametrize("t, q, qd, match", [
    (np.zeros(0), np.zeros((0, 7)), np.zeros((0, 7)), "q has no waypoints"),
    (np.zeros(3), np.zeros(7), np.zeros(7), r"q must have shape \(K, 7\), got \(7,\)"),
    (np.zeros(3), np.zeros((3, 6)), np.zeros((3, 6)), r"q must have shape \(K, 7\)"),
    ([0, 1, 2], np.zeros((3, 7)), np.zeros((2, 7)), r"qd must have shape \(3, 7\)"),
    ([0, 1], np.zeros((3, 7)), np.zeros((3, 7)), r"^t must be 3 finite non-decreasing"),
    ([0, 2, 1], np.zeros((3, 7)), np.zeros((3, 7)), "^t must be 3 finite non-decreasing"),
    ([0, np.nan, 1], np.zeros((3, 7)), np.zeros((3, 7)), "^t must be 3 finite"),
    ([0, 1, 2], np.full((3, 7), np.nan), np.zeros((3, 7)), r"q\[0\]\[0\] is nan"),
    ([0, 1, 2], np.zeros((3, 7)), np.where(np.eye(3, 7) > 0, np.inf, 0.0)[[2, 0, 1]],
     r"qd\[0\]\[2\] is inf"),
])
def test_bad_motion_names_the_argument(panda, t, q, qd, match):
    model, points, region = panda
    with pytest.raises(InputError, match=match):
        safety_along_motion(model, region, t, q, qd, points=points)
