"""core.contact.calibration on synthetic stretches whose answer is known in closed form:
the refusals, the envelope's coefficients, the friction band and the settling rule at rest,
the file round trip (issue 33)."""
from __future__ import annotations

import numpy as np
import pytest

from manip_dynamics.core.contact.calibration import (ContactCalibration, MotionThresholds,
                                                     calibrate_contact, calibration_file_beside,
                                                     load_calibration, save_calibration)
from manip_dynamics.core.errors import InputError

NAMES = ("a", "b")
K = 50.0


def stretch(seconds=20.0, rate=100.0, seed=0):
    """t (N,), qd (N, 2): joint a swings at 1 rad/s amplitude (period 4 s), b at 0.5."""
    t = np.arange(0.0, seconds, 1.0 / rate)
    qd = np.column_stack([np.sin(2 * np.pi * t / 4), 0.5 * np.cos(2 * np.pi * t / 3)])
    return t, qd


def test_the_calibration_refuses_a_short_a_still_and_a_contact_stretch():
    t, qd = stretch()
    r = 0.1 * np.random.default_rng(1).standard_normal(qd.shape)
    with pytest.raises(InputError, match="too short: 4.99 s"):
        calibrate_contact(t[:500], qd[:500], r[:500], NAMES, K)
    with pytest.raises(InputError, match="too still .* on 0% of the samples"):
        calibrate_contact(t, 1e-3 * qd, r, NAMES, K)
    pushed = r.copy()
    pushed[800:850, 1] += 5.0                   # 0.5 s held 50 spreads away: a push
    with pytest.raises(InputError, match="looks like contact: joint 'b' .* for 0.49 s from 8.00"):
        calibrate_contact(t, qd, pushed, NAMES, K)
    spike = r.copy()
    spike[800:810, 1] += 5.0                    # 0.1 s: shorter than a push, accepted
    cal = calibrate_contact(t, qd, spike, NAMES, K)
    assert cal.constant[1] == pytest.approx(2.0 * np.abs(spike[10:, 1] - cal.bias[1]).max())


def test_the_envelope_recovers_a_threshold_linear_in_the_speed():
    """r = +-(0.5 + 1 v) alternating on joint a (v the arm's speed envelope as the runtime
    forms it), so |r - bias| <= 0.5 + |bias| + v with equality on every other sample:
    the smallest covering envelope is rest 0.5 + |bias|, speed 1, accel = band = 0 (rest
    above its floor, a tenth of the peak 1.5)."""
    t, qd = stretch()
    zero = (0.0, 0.0)
    base = ContactCalibration(NAMES, (K, K), zero, (1.0, 1.0), zero, zero, zero, zero)
    features, _ = MotionThresholds.replay(base, t, qd, np.zeros_like(qd))
    v = features[:, 1, 0]
    sign = np.where(np.arange(t.size) % 2, 1.0, -1.0)
    r = np.column_stack([sign * (0.5 + 1.0 * v), 0.05 * sign])
    cal = calibrate_contact(t, qd, r, NAMES, K)
    b = abs(cal.bias[0])
    assert 0 < b < 0.02
    assert (cal.rest[0], cal.speed[0]) == pytest.approx((0.5 + b, 1.0), rel=1e-6)
    assert (cal.accel[0], cal.band[0]) == pytest.approx((0.0, 0.0), abs=1e-6)
    assert cal.rest[1] == pytest.approx(0.05 + abs(cal.bias[1]), rel=1e-6)


def test_the_friction_band_holds_after_a_stop_and_the_settling_rule_takes_the_held_torque():
    """A joint slides, stops (u = 1: stiction holds an unknown torque) and then creeps at
    1e-3 rad/s (below rest_speed: at rest for the settling rule; above the standstill, so
    no standstill level), the residual settles at 7 N m: after `settle` s at rest with a
    steady residual the bias is 7 and u = 0."""
    cal = ContactCalibration(NAMES, (K, K), (0.0, 0.0), (9.0, 9.0), (1.0, 1.0), (0.0, 0.0),
                             (0.0, 0.0), (10.0, 10.0), margin=1.0, settle=1.0)
    th = MotionThresholds(cal)
    t = np.arange(0.0, 3.0, 0.01)
    qd = np.where(t < 0.5, 0.3, 1e-3)
    enter = []
    for k, tk in enumerate(t):
        enter.append(th.enter(tk, (qd[k], 0.0))[0])
        th.settle_bias(tk, np.array([7.0 if tk >= 0.5 else 0.0, 0.0]), np.array([qd[k], 0.0]))
    enter = np.array(enter)
    stop = int(np.searchsorted(t, 0.5))
    assert enter[stop] == pytest.approx(1.0 + 10.0)           # the band at the stop
    settled = int(np.searchsorted(t, 1.5 - 1e-9))             # window from 0.5 s, 1 s long
    assert (enter[stop:settled + 1] == pytest.approx(11.0))
    assert th.settled == 2 and th.bias == pytest.approx([7.0, 0.0]) and th.levelled == 0
    assert enter[-1] == pytest.approx(1.0)                    # at rest: rest only


H, K40 = 1.0 / 64, 40.0       # (exact binary times: 5 / K40 = 0.125 s = 8 samples of H)


def _standstill_run(raw_a, qd_a, in_contact=None, settle=100.0):
    """MotionThresholds of a rest-1, band-10 calibration (K = 40, margin 1) fed joint a's
    raw residual and qd per sample (joint b still, r_b = 0), as the monitor does: enter,
    then settle_bias. -> (thresholds, enter (N,) of joint a, bias (N,) after each sample)."""
    zero = (0.0, 0.0)
    cal = ContactCalibration(NAMES, (K40, K40), zero, (9.0, 9.0), (1.0, 1.0), zero, zero,
                             (10.0, 10.0), margin=1.0, settle=settle)
    th = MotionThresholds(cal)
    enter, bias = [], []
    for k in range(len(raw_a)):
        qd = np.array([qd_a[k], 0.0])
        enter.append(th.enter(k * H, qd)[0])
        busy = bool(in_contact[k]) if in_contact is not None else False
        bias.append(th.settle_bias(k * H, np.array([raw_a[k], 0.0]), qd, busy)[0])
    return th, np.array(enter), np.array(bias)


def test_the_standstill_level_takes_the_held_torque_two_observer_times_after_the_stop():
    """Joint a slides at 0.3 rad/s until sample 32 (0.5 s), then stands still (qd = 0)
    with r = 7 +- 0.2 N m (alternating): the observer's response to the motion has
    decayed 5 / K_O = 0.125 s (8 samples) after the stop, the window of the next 8
    samples (40..48, r within rest = 1) is steady, so after sample 48 the bias is its
    mean and u = 0: the threshold is rest alone from sample 49 on, where the settling
    rule (settle 100 s here) would never have taken it. Once per standstill: a ramp of
    2 N m/s after it is not taken as a new level (only by the settling rule's band)."""
    n = 200
    k = np.arange(n)
    qd = np.where(k < 32, 0.3, 0.0)
    raw = np.where(k < 32, 0.0, 7.0 + 0.2 * (-1.0) ** k) + np.where(k > 100, 2.0 * H * (k - 100), 0)
    th, enter, bias = _standstill_run(raw, qd)
    assert th.levelled == 1 and th.settled == 0
    assert bias[47] == 0.0 and bias[48] == pytest.approx(raw[40:49].mean(), abs=1e-12)
    assert bias[-1] == bias[48]
    assert enter[48] == pytest.approx(1.0 + 10.0)             # the band until the level
    assert enter[49:] == pytest.approx(1.0)


def test_no_standstill_level_in_contact_nor_while_the_residual_moves():
    """The same stop, but the detector in contact up to sample 60: the standstill's clock
    starts at the first sample out of contact (level after sample 61 + 8 + 8 = 77). And a residual that moves by
    more than rest (1 N m) within the window restarts it: r steps by 1.5 N m at sample 44,
    so the window runs 44..52."""
    k = np.arange(120)
    qd = np.where(k < 32, 0.3, 0.0)
    th, _, bias = _standstill_run(np.where(k < 32, 0.0, 7.0), qd, in_contact=(k >= 32) & (k <= 60))
    assert th.levelled == 1 and bias[76] == 0.0 and bias[77] == pytest.approx(7.0)
    raw = np.where(k < 32, 0.0, np.where(k < 44, 7.0, 8.5))
    th, _, bias = _standstill_run(raw, qd)
    assert th.levelled == 1 and bias[51] == 0.0 and bias[52] == pytest.approx(8.5)


def test_a_driven_joint_releases_its_held_torque_a_yielding_one_keeps_it():
    """After the level (bias 7 N m on joint a, calibrated bias 0), joint a moves at 0.01
    rad/s, between rest_speed and move_speed: driven (its r - bias of the other sign than
    qd) it slides and holds no torque: the calibrated bias, 0, comes back at once; yielding
    (r - bias along qd: a push it gives way to) it keeps the level."""
    k = np.arange(80)
    for r_moving, kept in ((5.0, 0.0), (9.0, 7.0)):       # r - bias = -2 (driven), +2 (along)
        qd = np.where(k < 32, 0.3, np.where(k < 60, 0.0, -0.01))
        raw = np.where(k < 32, 0.0, np.where(k < 60, 7.0, r_moving))
        _, _, bias = _standstill_run(raw, -qd)             # (qd +0.01 from sample 60)
        assert bias[59] == pytest.approx(7.0) and bias[-1] == pytest.approx(kept)


def test_a_joint_yielding_to_its_residual_does_not_arm_the_slow_friction():
    """From rest (nothing moved since the start), joint a creeps at +0.01 rad/s with r =
    +3 N m (along: it yields to a push), joint b at +0.01 with r = -3 (against: driven,
    its friction slides); then both stand still (qd 0). Friction opposes a yield, so the
    friction the model lacks cannot raise |r| above the push: no slow friction on a; on b
    coulomb (1 - 0 / 0.05) = 10 N m, from the sample after its move."""
    th = MotionThresholds(_rest_only(), coulomb=(10.0, 10.0))
    creep, still, r = np.array([0.01, 0.01]), np.zeros(2), np.array([3.0, -3.0])
    th.settle_bias(0.0, r, creep)                             # (the residual judged first)
    for k in range(1, 4):
        th.enter(0.01 * k, creep)
        th.settle_bias(0.01 * k, r, creep)
    assert th.enter(0.04, still) == pytest.approx([1.0, 1.0 + 10.0])


def test_a_sign_flicker_at_rest_opens_the_band_for_the_observers_response_only():
    cal = ContactCalibration(NAMES, (K, K), (0.0, 0.0), (9.0, 9.0), (1.0, 1.0), (0.0, 0.0),
                             (0.0, 0.0), (10.0, 10.0), margin=1.0, settle=100.0)
    th = MotionThresholds(cal)
    th._state.settled()                                       # (at rest, settled)
    enter = [th.enter(0.01 * k, (1e-4 if k == 5 else 0.0, 0.0))[0] for k in range(20)]
    assert enter[4] == 1.0 and enter[5] == 11.0
    assert enter[6] == pytest.approx(1.0 + 10.0)              # back to 0: a sign change again
    assert enter[7] == pytest.approx(1.0 + 10.0 * np.exp(-K * 0.01))


def test_the_calibration_file_reads_back_the_same_bits(tmp_path):
    t, qd = stretch()
    r = 0.3 * np.random.default_rng(2).standard_normal(qd.shape) + [0.1, -2.0]
    cal = calibrate_contact(t, qd, r, NAMES, K)
    path = save_calibration(calibration_file_beside(tmp_path / "arm.urdf.xacro"), cal)
    assert path.name == "arm.contact.yaml"
    assert load_calibration(path, NAMES) == cal
    with pytest.raises(InputError, match="joints a, b, the model has a, c"):
        load_calibration(path, ("a", "c"))
    path.write_text(path.read_text().replace("margin:", "margn:"))
    with pytest.raises(InputError, match="unknown key 'margn'"):
        load_calibration(path)


def _rest_only(settle=100.0):
    """A calibration whose learned threshold is margin x rest = 1 N m everywhere (no speed,
    accel or band): what enter adds on top is the known terms alone."""
    zero = (0.0, 0.0)
    return ContactCalibration(NAMES, (K, K), zero, (9.0, 9.0), (1.0, 1.0), zero, zero, zero,
                              margin=1.0, settle=settle)


def test_the_currents_lead_adds_its_step_times_the_observers_gain_and_decays_like_it():
    """The effort steps by 40 N m on joint a at sample 5 (qd unchanged: the current leads the
    velocity): the observer integrates it one sample early, an error of (1 - exp(-K h)) 40
    that decays by exp(-K h) per sample; enter carries exactly that (closed form)."""
    th = MotionThresholds(_rest_only())
    h, k_step = 0.01, 5
    enter = [th.enter(h * k, (0.3, 0.3), (40.0 if k >= k_step else 0.0, 2.0)).copy()
             for k in range(12)]
    enter = np.array(enter)
    lead = (1 - np.exp(-K * h)) * 40.0 * np.exp(-K * h) ** np.arange(12 - k_step)
    assert enter[:k_step, 0] == pytest.approx(1.0)
    assert enter[k_step:, 0] == pytest.approx(1.0 + lead)
    assert enter[:, 1] == pytest.approx(1.0)                  # a constant effort: no lead
    no_tau = th.enter(h * 12, (0.3, 0.3))[0]                   # no effort: d decays only
    assert no_tau == pytest.approx(1.0 + lead[-1] * np.exp(-K * h))


def test_the_slow_friction_is_the_coulomb_gap_of_a_joint_that_moved_until_the_arm_settles():
    """Joint a moves at 0.3 rad/s, then creeps at 0.01 rad/s, then stands: its friction is
    between stiction and the ramp's coulomb x 0.01 / 0.05, so enter adds coulomb (1 - 0.2),
    then coulomb at rest, until the arm settles (settle 0.5 s: then 0). Joint b never moved
    faster than rest_speed: nothing added."""
    th = MotionThresholds(_rest_only(settle=0.5), coulomb=(10.0, 10.0))
    t = np.arange(0.0, 2.0, 0.01)
    qd_a = np.where(t < 0.3, 0.3, np.where(t < 0.6, 0.01, 0.0))
    enter = []
    for k, tk in enumerate(t):
        qd = np.array([qd_a[k], 1e-3])
        enter.append(th.enter(tk, qd).copy())
        th.settle_bias(tk, np.zeros(2), qd)
    enter = np.array(enter)
    creep, still = int(np.searchsorted(t, 0.45)), int(np.searchsorted(t, 0.8))
    assert enter[10, 0] == pytest.approx(1.0)                 # 0.3 rad/s: sliding, known
    assert enter[creep, 0] == pytest.approx(1.0 + 10.0 * (1 - 0.01 / 0.05))
    assert enter[still, 0] == pytest.approx(1.0 + 10.0)
    assert th.settled >= 1 and enter[-1, 0] == pytest.approx(1.0)
    assert enter[:, 1] == pytest.approx(1.0)
    with pytest.raises(InputError, match="coulomb must be 2 finite numbers >= 0"):
        MotionThresholds(_rest_only(), coulomb=(1.0, -1.0))


def test_the_slow_friction_is_dropped_while_the_joint_moves_along_its_last_residual():
    """Both joints moved, then creep at +0.01 rad/s (s = 1 - 0.01 / 0.05 = 0.8). Friction
    dissipates: the friction the model lacks shows in r against qd (joint a: r = -3 N m),
    so enter adds coulomb x 0.8 there; joint b's r = +3 N m is along qd (a torque doing
    work on the joint, e.g. a push it yields to), which no friction explains: nothing
    added. The sign test uses the residual the last settle_bias was given (the node sets
    the thresholds before its observer step), and flips with it. At a standstill (qd at
    the log's 1e-4 rad/s resolution, below SIGN_SPEED x rest_speed = 2e-4) stiction holds
    either sign: coulomb x (1 - 1e-4 / 0.05) on both."""
    th = MotionThresholds(_rest_only(), coulomb=(10.0, 10.0))
    creep = np.array([0.01, 0.01])
    th.enter(0.0, (0.3, 0.3))                                 # (moved)
    th.settle_bias(0.0, np.array([-3.0, 3.0]), np.array([0.3, 0.3]))
    enter = th.enter(0.01, creep).copy()
    assert enter == pytest.approx([1.0 + 10.0 * 0.8, 1.0])
    th.settle_bias(0.01, np.array([3.0, -3.0]), creep)        # the residuals swap signs
    assert th.enter(0.02, creep) == pytest.approx([1.0, 1.0 + 10.0 * 0.8])
    th.settle_bias(0.02, np.array([3.0, -3.0]), creep)
    flicker = np.array([1e-4, -1e-4])                          # r along qd's sign on both
    assert th.enter(0.03, flicker) == pytest.approx([1.0 + 10.0 * (1 - 1e-4 / 0.05)] * 2)


def test_a_residual_relaxing_by_more_than_rest_is_not_taken_as_the_level():
    """At rest the residual relaxes by 2.5 N m/s for 1.2 s (a drive's current after a
    stop), then holds at 3 N m. rest = 1 N m, margin 2: the steadiness band is rest (1 N m
    within settle = 0.5 s: the window restarts every 0.4 s of the relaxation), so nothing
    settles before the level holds, and the settled bias leaves |r - bias| <= rest, half
    the enter threshold at rest. (A band of margin x rest, 2 N m, took the relaxation as
    the level: settled at 0.5 s, bias 0.63 N m, and again at 1.01 s.)"""
    zero = (0.0, 0.0)
    cal = ContactCalibration(NAMES, (K, K), zero, (9.0, 9.0), (1.0, 1.0), zero, zero, zero,
                             margin=2.0, settle=0.5)
    th = MotionThresholds(cal)
    t = np.arange(0.0, 2.5, 0.01)
    raw = 3.0 * np.minimum(t / 1.2, 1.0)
    creep = np.array([1e-3, 0.0])                # (at rest, no standstill level)
    settled_at, bias = [], []
    for k, tk in enumerate(t):
        th.enter(tk, creep)
        n = th.settled
        bias.append(th.settle_bias(tk, np.array([raw[k], 0.0]), creep)[0])
        if th.settled > n:
            settled_at.append(tk)
    assert settled_at and min(settled_at) >= 1.2
    assert abs(raw[-1] - bias[-1]) <= 1.0
