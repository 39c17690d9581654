"""rules/contact_monitor.py without ROS: what the node's observer integrates and when it
starts over. The arm is held at rest with tau_m = g(q) - tau_ext, so the residual is
exactly r(t) = (1 - exp(-K_O (t - t_0))) tau_ext at every accepted sample whatever the
steps (the core's closed form, test/core/contact/test_observer.py): any integrated bad sample,
any missed restart or any spike would move r off it."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from manip_dynamics import InputError, RobotModel, robots
from manip_dynamics.rules.contact_monitor import ContactMonitor, ObserverOptions, per_joint

Q = np.array([0.4, -0.9])
TAU_EXT = np.array([1.5, -0.7])
K_O = 40.0


@pytest.fixture(scope="module")
def model():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobotModel.from_urdf_file(robots.path("planar_2r"))


def held(model):
    return model.gravity_torques(Q) - TAU_EXT


def expected(t):
    return -math.expm1(-K_O * t) * TAU_EXT


def monitor(model, **kw):
    return ContactMonitor(model, ObserverOptions(gains=(K_O,), enter=(0.5,), **kw), "link2")


def test_bad_samples_are_skipped_and_change_nothing(model):
    m = monitor(model)
    tau, qd = held(model), np.zeros(2)
    for k in range(5):
        m.update(0.01 * k, Q, qd, tau)
    bad = [(0.05, Q, None, tau), (0.05, Q, qd, np.array([math.nan, 0.0])),
           (0.05, Q, qd, tau[:1]), (0.04, Q, qd, tau), (0.03, Q, qd, tau)]
    for sample in bad:
        with pytest.raises(InputError):
            m.update(*sample)
    r = m.update(0.06, Q, qd, tau).residual          # spans the skipped sample
    np.testing.assert_allclose(r, expected(0.06), rtol=0, atol=1e-12)


def test_gap_is_bridged_or_reset_without_a_spike(model):
    for gap, after in (("bridge", expected(0.04)), ("reset", np.zeros(2))):
        m = monitor(model, gap=gap, max_gap=0.05)
        for k in range(5):
            m.update(0.01 * k, Q, np.zeros(2), held(model))
        res = m.update(0.04 + 0.2, Q, np.zeros(2), held(model))
        assert res.event == f"gap_{'bridged' if gap == 'bridge' else 'reset'}"
        np.testing.assert_allclose(res.residual, after, rtol=0, atol=1e-12)


def test_clock_restart_starts_over_but_a_slightly_old_stamp_is_stale(model):
    m = monitor(model, max_gap=0.05)
    for k in range(10):
        m.update(100.0 + 0.01 * k, Q, np.zeros(2), held(model))
    with pytest.raises(InputError, match="stale"):
        m.update(100.05, Q, np.zeros(2), held(model))
    res = m.update(1.0, Q, np.zeros(2), held(model))            # 99 s back: a restart
    assert res.event == "restart" and not np.any(res.residual)
    r = m.update(1.01, Q, np.zeros(2), held(model)).residual
    np.testing.assert_allclose(r, expected(0.01), rtol=0, atol=1e-12)


def test_model_change_keeps_same_dynamics_restarts_otherwise(model):
    m = monitor(model)
    for k in range(5):
        m.update(0.01 * k, Q, np.zeros(2), held(model))
    same = model.with_gravity(np.array(model.gravity))          # a new object, same dynamics
    assert m.retarget(same, m.options, "link1") is m
    r = m.update(0.05, Q, np.zeros(2), held(model)).residual
    np.testing.assert_allclose(r, expected(0.05), rtol=0, atol=1e-12)
    heavier = model.with_gravity(np.array([0.0, 0.0, -10.0]))
    assert m.retarget(heavier, m.options, "link2") is not m
    other = ObserverOptions(gains=(K_O,), enter=(0.7,))
    assert m.retarget(model, other, "link2") is not m


def test_reset_zero_and_detection(model):
    m = monitor(model)
    states = [m.update(0.01 * k, Q, np.zeros(2), held(model)) for k in range(30)]
    first = next(s for s in states if s.contact.in_contact)
    crossing = next(0.01 * k for k in range(30) if np.abs(expected(0.01 * k)).max() > 0.5)
    assert first.contact.detection_time == pytest.approx(crossing)
    assert first.contact.link == "link2"                        # joint 2 carries 0.7 N*m
    assert np.isfinite(first.wrench.F).all()
    m.zero()
    res = m.update(0.30, Q, np.zeros(2), held(model))
    assert np.abs(res.residual).max() < 1e-4 and not res.contact.in_contact
    m.reset()
    assert not np.any(m.update(0.31, Q, np.zeros(2), held(model)).residual)


def test_epoch_seconds_keep_resolution():
    m = ContactMonitor.__new__(ContactMonitor)
    m.epoch = None
    t0 = m.seconds(1_795_000_000, 1)
    t1 = m.seconds(1_795_000_000, 1_000_001)
    assert t0 == 1e-9 and t1 - t0 == pytest.approx(1e-3, abs=1e-15)
    assert m.absolute(t1) == pytest.approx(1_795_000_000.001000001, abs=1e-6)


def test_per_joint_lengths():
    np.testing.assert_array_equal(per_joint([2.0], 3, "x"), [2.0, 2.0, 2.0])
    with pytest.raises(InputError, match="x"):
        per_joint([1.0, 2.0], 3, "x")


def test_effort_reader_gathers_by_name_and_names_bad_values():
    """EffortReader against the values looked up by name here (the reference) on names
    in an order that is not its own inverse (a reversal is: an inverted index would pass)
    with an extra joint among them, for the first and the cached name list; a NaN, a
    wrong length and a missing joint raise vector_from_names' InputError, also once the
    names are cached."""
    from types import SimpleNamespace

    from manip_dynamics.rules.effort_reader import EffortReader

    model = RobotModel.from_urdf_file(robots.path("panda"))
    order = [3, 0, 6, 1, 5, 2, 4]                 # order[order] != identity
    assert [order[i] for i in order] != list(range(7))
    names = [model.joint_names[i] for i in order]
    names.insert(3, "gripper")
    read = EffortReader()
    for k in range(3):                            # the first read, then the cached index
        effort = [float(v) for v in np.arange(8) * 1.5 - k]
        by_name = dict(zip(names, effort))
        msg = SimpleNamespace(name=names, effort=effort)
        np.testing.assert_array_equal(read(model, msg),
                                      [by_name[j] for j in model.joint_names])
    for effort, words in [([1.0] * 4 + [math.nan] + [1.0] * 3, "non-finite"),
                          ([1.0] * 7, "8 names but 7 values")]:
        with pytest.raises(InputError, match=words):
            read(model, SimpleNamespace(name=names, effort=effort))
    with pytest.raises(InputError, match="missing joints"):
        read(model, SimpleNamespace(name=names[1:], effort=[0.0] * 7))


def test_effort_reader_reads_a_message_once_until_forget():
    """The node's listeners share one reader: the same message object read again gives
    the first read's tau (the same array); after forget(), or for another message object,
    effort is read again (a message object refilled in place gives its new values)."""
    from types import SimpleNamespace

    from manip_dynamics.rules.effort_reader import EffortReader

    model = RobotModel.from_urdf_file(robots.path("panda"))
    names = list(model.joint_names)
    read = EffortReader()
    msg = SimpleNamespace(name=names, effort=[1.0] * 7)
    first = read(model, msg)
    msg.effort = [2.0] * 7                       # refilled in place (same object)
    assert read(model, msg) is first             # one read per state
    read.forget()
    np.testing.assert_array_equal(read(model, msg), [2.0] * 7)
    other = SimpleNamespace(name=names, effort=[3.0] * 7)
    np.testing.assert_array_equal(read(model, other), [3.0] * 7)
    bad = SimpleNamespace(name=names, effort=[math.nan] * 7)
    for _ in range(2):                            # a refused message is refused every time
        with pytest.raises(InputError, match="non-finite"):
            read(model, bad)


def test_effort_reader_applies_the_drive_gains():
    """tau = gain * effort in model order (the reference: each name's effort looked up and
    multiplied here); a new gain object is a new read of the same message."""
    from types import SimpleNamespace

    from manip_dynamics.rules.effort_reader import EffortReader

    model = RobotModel.from_urdf_file(robots.path("panda"))
    names = list(model.joint_names)[::-1]                 # another order than the model's
    current = [0.5 * (k + 1) for k in range(7)]
    gain = np.array([10.0, 10.6956, 8.4566, 9.0029, 9.48, 10.1232, 2.0])
    read = EffortReader()
    msg = SimpleNamespace(name=names, effort=current)
    expected_tau = [gain[j] * current[names.index(name)]
                    for j, name in enumerate(model.joint_names)]
    np.testing.assert_array_equal(read(model, msg, gain), expected_tau)
    np.testing.assert_array_equal(read(model, msg, None),
                                  [current[names.index(n)] for n in model.joint_names])

