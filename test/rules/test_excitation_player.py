"""rules/excitation_player.py and rules/state_buffer.py, without ROS."""
import numpy as np
import pytest

from manip_dynamics import RobotModel, robots
from manip_dynamics.core.errors import InputError
from manip_dynamics.core.identification.excitation import FourierTrajectory
from manip_dynamics.rules.excitation_player import LEAD_IN_SPEED, ExcitationPlayer, load_trajectory
from manip_dynamics.rules.state_buffer import StateBuffer, delay_efforts, estimate_from_states

pytestmark = pytest.mark.filterwarnings("ignore::manip_dynamics.MasslessLinkWarning")


def _trajectory():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 2, 3)) * 0.3
    a[:, 0] = -a[:, 1:].sum(axis=1)                     # rest at both ends
    b[:, 0] = -(b[:, 1:] * [2, 3]).sum(axis=1)
    return FourierTrajectory(("j2", "j0"), 0.5, np.array([0.4, -0.3]), a, b, periods=1)


def test_player_lead_in_series_and_hold():
    traj = _trajectory()
    q_start = np.array([0.1, 0.0, -0.2])                # arm joints j0, j1, j2
    player = ExcitationPlayer.start(traj, ("j0", "j1", "j2"), q_start)
    q0 = traj.sample(0.0)[0][0]                         # the file's q(0) of j2, j0
    w = 2 * np.pi * 0.5                                 # = q0 - sum_l b_l / (w l), by hand:
    np.testing.assert_allclose(q0, traj.q0 - (traj.b / (w * np.arange(1, 4))).sum(axis=1))
    assert player.lead_in == pytest.approx(
        max(abs(q0[0] - (-0.2)), abs(q0[1] - 0.1)) / LEAD_IN_SPEED)
    q, qd, qdd = player.reference(0.0)
    np.testing.assert_allclose(q, q_start, atol=1e-15)
    np.testing.assert_allclose(qd, 0.0, atol=1e-15)
    q, qd, qdd = player.reference(player.lead_in)       # lead-in ends at q(0) at rest
    np.testing.assert_allclose(q[[2, 0]], q0, atol=1e-12)
    np.testing.assert_allclose(qd, 0.0, atol=1e-12)
    # velocity and acceleration are the derivatives of the position (central differences)
    for t in (0.3 * player.lead_in, player.lead_in + 0.77):
        h = 1e-5
        dq = (player.reference(t + h)[0] - player.reference(t - h)[0]) / (2 * h)
        ddq = (player.reference(t + h)[1] - player.reference(t - h)[1]) / (2 * h)
        np.testing.assert_allclose(player.reference(t)[1], dq, atol=1e-6)
        np.testing.assert_allclose(player.reference(t)[2], ddq, atol=1e-5)
    t = player.lead_in + 1.234
    np.testing.assert_allclose(player.reference(t)[0][[2, 0]], traj.sample(1.234)[0][0])
    assert player.reference(t)[0][1] == q_start[1]      # a joint the file does not name holds
    q, qd, _ = player.reference(player.end_time + 3.0)
    np.testing.assert_allclose(q[[2, 0]], q0, atol=1e-12)
    assert np.all(qd == 0.0)


def test_player_refuses_unknown_joints_and_bad_files(tmp_path):
    with pytest.raises(InputError, match="j2"):
        ExcitationPlayer.start(_trajectory(), ("j0", "j1"), np.zeros(2))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InputError, match="bad.json"):
        load_trajectory(str(tmp_path / "bad.json"))
    with pytest.raises(InputError, match="missing.json"):
        load_trajectory(str(tmp_path / "missing.json"))


def test_state_buffer_ring_and_window():
    buf = StateBuffer(capacity=5)
    for k in range(8):
        buf.append(("a", "b"), 0.1 * k, [k, -k], [1.0, 2.0], [3.0 * k, 0.0])
    names, t, q, qd, tau = buf.last()
    assert names == ("a", "b")
    np.testing.assert_allclose(t, 0.1 * np.arange(3, 8))
    np.testing.assert_allclose(q[:, 0], np.arange(3, 8))
    np.testing.assert_allclose(tau[:, 0], 3.0 * np.arange(3, 8))
    _, t, *_ = buf.last(0.25)
    np.testing.assert_allclose(t, [0.5, 0.6, 0.7])
    buf.append(("x",), 9.0, [1.0], [0.0], [2.0])         # another model: starts afresh
    names, t, q, qd, tau = buf.last()
    assert names == ("x",) and len(t) == 1


def test_state_buffer_refuses_wrong_lengths_and_keeps_its_states():
    """A state whose q, qd or tau does not have one value per name: InputError, the kept
    states untouched (the ring's next row is also its oldest once full); a list of names
    changed in place between appends is noticed (names are compared, not only identity)."""
    buf = StateBuffer(capacity=3)
    names = ["a", "b"]
    for k in range(3):
        buf.append(names, float(k), [k, k], [0.5, 0.5], [1.0, 2.0])
    for q, qd, tau in [([9.0], [9.0, 9.0], [9.0, 9.0]), ([9.0] * 2, [9.0] * 3, [9.0] * 2),
                       ([9.0] * 2, [9.0] * 2, [9.0])]:
        with pytest.raises(InputError, match="2 values each"):
            buf.append(names, 5.0, q, qd, tau)
    _, t, q, qd, tau = buf.last()
    np.testing.assert_array_equal(t, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(q, [[0, 0], [1, 1], [2, 2]])
    names[1] = "c"                                        # the same list, another model
    buf.append(names, 6.0, [6.0, 6.0], [0.0, 0.0], [0.0, 0.0])
    got, t, *_ = buf.last()
    assert got == ("a", "c") and list(t) == [6.0]


def test_delay_efforts_recovers_a_shifted_ramp():
    t = np.arange(0.0, 1.0, 0.01)
    tau = np.stack([2.0 * (t - 0.005), -t + 0.005], axis=1)   # tau[k] is the torque at t - 5 ms
    keep, shifted = delay_efforts(t, tau, 0.005)
    np.testing.assert_allclose(shifted, np.stack([2.0 * t, -t], axis=1)[keep], atol=1e-12)
    assert keep.sum() == len(t) - 1


def test_static_estimate_from_states_is_exact_on_exact_torques():
    """Poses at rest holding the true payload (torques from the core's own model WITH the
    payload, an independent path: RNEA of the composite body) give it back."""
    arm = RobotModel.from_urdf_file(robots.path("panda"))
    truth = arm.with_payload("panda_link8", 1.3, com=[0.03, -0.01, 0.07])
    rng = np.random.default_rng(1)
    q = rng.uniform(arm.position_lower, arm.position_upper, size=(6, 7))
    q = np.repeat(q, 20, axis=0)                          # each pose held for 20 states
    qd = np.zeros_like(q)
    qd[::20] = 1.0                                        # the first state of each: moving
    tau = truth.gravity_torques(q)
    t = 0.01 * np.arange(len(q))
    est = estimate_from_states(arm, "panda_link8", t, q, qd, tau, static_only=True)
    assert est.mass == pytest.approx(1.3, rel=1e-9)
    np.testing.assert_allclose(est.com, [0.03, -0.01, 0.07], atol=1e-9)
    assert est.rows == 6 * 19 * 7
    with pytest.raises(InputError, match="at rest"):
        estimate_from_states(arm, "panda_link8", t[:3], q[:3], np.ones((3, 7)), tau[:3],
                             static_only=True)
