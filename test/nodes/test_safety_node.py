"""dynamics_node's collaborative-safety outputs across processes (real rclpy, real DDS):
~/collision_safety, ~/speed_scale and ~/check_trajectory_safety on the stretched 2R arm
with point masses, whose effective masses are known in closed form (docs/safety.md):
at q2 = 0 the tip (tip frame) feels m2 along the tangent and the elbow (link2's origin)
feels m1; link1's origin sits on the first joint's axis and never moves.

Permissible speed for hands and fingers (m_H 0.6 kg, k 75 N/mm, F_T 280 N):
v_max(m) = 280 / sqrt(k / (1/0.6 + 1/m)), written out below from those table values.
"""
import math
import pathlib
import sys

import numpy as np
import pytest
import ros_utils
from node_test_helpers import MODULE, param_msg, stamp_ns
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from manip_dynamics_interfaces.msg import CollisionSafety
from manip_dynamics_interfaces.srv import CheckTrajectorySafety

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "core"))
import urdf_factory as uf  # noqa: E402

M1, M2, L1, L2 = 3.0, 1.25, 0.6, 0.45


def v_max_hand(m):
    """ISO/TS 15066 hands and fingers, transient: 2 x 140 N over sqrt(mu k)."""
    mu = 1.0 / (1.0 / 0.6 + 1.0 / m)
    return 280.0 / math.sqrt(mu * 75_000.0)


@pytest.fixture(scope="module")
def arm(module_ros_node, tmp_path_factory):
    path = tmp_path_factory.mktemp("safety") / "arm.urdf"
    path.write_text(uf.point_mass_2r(M1, M2, L1, L2))
    proc = ros_utils.start_node_process([
        MODULE, "--ros-args", "-p", f"urdf_file:={path}", "-p", "safety.enabled:=true",
        "-p", "joint_states_latest_wins:=false", "-p", "joint_states_qos.reliability:=reliable",
        "-p", "outputs.inertia_markers.enabled:=false"])
    node = module_ros_node
    got = {}
    scales = []
    node.create_subscription(CollisionSafety, "dynamics_node/collision_safety",
                             lambda m: got.setdefault(stamp_ns(m.header), m), 50)
    node.create_subscription(Float64, "dynamics_node/speed_scale",
                             lambda m: scales.append(m.data), 50)
    pub = node.create_publisher(JointState, "joint_states", 10)
    try:
        yield node, proc, pub, got, scales
    finally:
        ros_utils.stop_process(proc)
        print(ros_utils.read_log(proc, tail=100))


def _state(node, proc, pub, got, q, qd, sec):
    msg = JointState(name=["joint1", "joint2"], position=list(q), velocity=list(qd))
    msg.header.stamp.sec = sec
    key = sec * 1_000_000_000

    def answered():
        ros_utils.assert_running(proc)
        pub.publish(msg)
        return got.get(key)
    return ros_utils.wait_for(answered, timeout=90.0, interval=0.2,
                              message="no ~/collision_safety for the state")


def test_collision_safety_closed_form(arm):
    node, proc, pub, got, scales = arm
    q1, w = 0.3, 2.0
    msg = _state(node, proc, pub, got, [q1, 0.0], [w, 0.0], 100)
    points = {p.label: p for p in msg.points}
    assert set(points) == {"link1", "link2", "tip"}
    assert msg.body_region == "hands_fingers" and msg.header.frame_id == "base"
    tangent = [-math.sin(q1), math.cos(q1), 0.0]
    tip, elbow, shoulder = points["tip"], points["link2"], points["link1"]
    assert tip.speed == pytest.approx((L1 + L2) * w, rel=1e-12)
    assert tip.effective_mass == pytest.approx(M2, rel=1e-9)
    assert elbow.effective_mass == pytest.approx(M1, rel=1e-9)
    assert elbow.speed == pytest.approx(L1 * w, rel=1e-12)
    np.testing.assert_allclose([tip.direction.x, tip.direction.y, tip.direction.z], tangent,
                               atol=1e-12)
    assert [tip.position.x, tip.position.y] == pytest.approx(
        [(L1 + L2) * math.cos(q1), (L1 + L2) * math.sin(q1)], abs=1e-12)
    assert shoulder.speed == 0.0 and shoulder.ratio == 0.0
    assert tip.permissible_speed == pytest.approx(v_max_hand(M2), rel=1e-9)
    ratio_tip = (L1 + L2) * w / v_max_hand(M2)
    ratio_elbow = L1 * w / v_max_hand(M1)
    assert tip.ratio == pytest.approx(ratio_tip, rel=1e-9)
    assert elbow.ratio == pytest.approx(ratio_elbow, rel=1e-9)
    assert msg.points[msg.worst].label == "tip"              # 1.31 against 0.83
    assert msg.speed_scale == pytest.approx(1.0 / ratio_tip, rel=1e-9)
    assert msg.simplified_robot_mass == pytest.approx((M1 + M2) / 2, rel=1e-12)
    assert msg.simplified_permissible_speed == pytest.approx(v_max_hand((M1 + M2) / 2))
    ros_utils.wait_for(lambda: any(s == pytest.approx(1.0 / ratio_tip) for s in scales),
                       timeout=10.0, message="~/speed_scale")


def test_parameters_refused_with_reason_and_region_switch(arm):
    node, proc, pub, got, _ = arm

    def set_(name, value):
        typed = (Parameter.Type.STRING_ARRAY,) if value == [] else ()
        request = SetParameters.Request(parameters=[param_msg(name, value, *typed)])
        return ros_utils.call_service(node, SetParameters, "dynamics_node/set_parameters",
                                      request, process=proc).results[0]
    r = set_("safety.body_region", "elbow")
    assert not r.successful and "'elbow' is not a region" in r.reason
    r = set_("safety.points", ["hand:0,0"])
    assert not r.successful and "safety.points" in r.reason
    r = set_("safety.points", ["nolink:0,0,0.1"])
    assert not r.successful and "'nolink' is not in the robot model" in r.reason
    r = set_("safety.body_model", "/no/such/file.yaml")
    assert not r.successful and "cannot read" in r.reason
    assert set_("safety.body_region", "chest").successful
    assert set_("safety.points", ["link2:0.2,0,0"]).successful
    msg = _state(node, proc, pub, got, [0.0, 0.0], [1.0, 0.0], 200)
    assert msg.body_region == "chest"
    extra = [p for p in msg.points if p.label == "link2+[0.2, 0, 0]"][0]
    # a point 0.2 m out on the second link, stretched arm: J_p = t [0.8, 0.2]; with
    # M^-1 of the stretched arm (det = m1 m2 l1^2 l2^2): 1/m = a^T M^-1 a, a = (0.8, 0.2)
    M = np.array([[M1 * L1 ** 2 + M2 * (L1 + L2) ** 2, M2 * L2 * (L1 + L2)],
                  [M2 * L2 * (L1 + L2), M2 * L2 ** 2]])
    a = np.array([L1 + 0.2, 0.2])
    assert extra.effective_mass == pytest.approx(1.0 / (a @ np.linalg.solve(M, a)), rel=1e-9)
    chest_mu = 1.0 / (1.0 / 40.0 + 1.0 / extra.effective_mass)
    assert extra.permissible_speed == pytest.approx(280.0 / math.sqrt(chest_mu * 25_000.0))
    assert set_("safety.body_region", "hands_fingers").successful
    assert set_("safety.points", []).successful


def test_check_trajectory_safety_service(arm):
    node, proc, _, _, _ = arm
    name = "dynamics_node/check_trajectory_safety"
    traj = JointTrajectory(joint_names=["joint2", "joint1", "gripper"])
    speeds = [0.5, 1.0, 2.0]
    for k, w in enumerate(speeds):
        traj.points.append(JointTrajectoryPoint(
            positions=[0.0, 0.1 * k, 0.0], velocities=[0.0, w, 0.3],
            accelerations=[0.0, 4.0, 0.0]))
        traj.points[-1].time_from_start.sec = k
    r = ros_utils.call_service(node, CheckTrajectorySafety, name,
                               CheckTrajectorySafety.Request(trajectory=traj), process=proc)
    assert r.success, r.message
    expect = [(L1 + L2) * w / v_max_hand(M2) for w in speeds]
    assert list(r.ratio) == pytest.approx(expect, rel=1e-9)
    assert list(r.worst_point) == ["tip"] * 3
    assert r.scale == pytest.approx(expect[-1], rel=1e-9)
    s = r.scale
    out = r.retimed
    assert list(out.joint_names) == ["joint2", "joint1", "gripper"]
    assert out.points[2].time_from_start.sec + 1e-9 * out.points[2].time_from_start.nanosec \
        == pytest.approx(2 * s, abs=1e-9)
    assert list(out.points[2].velocities) == pytest.approx([0.0, 2.0 / s, 0.3 / s])
    assert list(out.points[2].accelerations) == pytest.approx([0.0, 4.0 / s ** 2, 0.0])
    # a payload of 0.75 kg at the tip: the tip feels m2 + 0.75
    r = ros_utils.call_service(node, CheckTrajectorySafety, name, CheckTrajectorySafety.Request(
        trajectory=traj, payload_mass=0.75, body_region="lower_arms_wrists"), process=proc)
    assert r.success, r.message
    mu = 1.0 / (1.0 / 2.0 + 1.0 / (M2 + 0.75))
    assert r.ratio[0] == pytest.approx((L1 + L2) * 0.5 / (320.0 / math.sqrt(mu * 40_000.0)),
                                       rel=1e-9)
    # bad requests: a missing joint, a short velocity list, an unknown region, no points
    for bad, words in (
            (JointTrajectory(joint_names=["joint1"], points=traj.points), "joint2"),
            (JointTrajectory(joint_names=["joint1", "joint2"], points=[JointTrajectoryPoint(
                positions=[0.0, 0.0], velocities=[1.0])]), "velocities has 1 values"),
            (JointTrajectory(joint_names=["joint1", "joint2"], points=[JointTrajectoryPoint(
                positions=[0.0, 0.0])]), "velocities has 0 values"),     # required here
            (JointTrajectory(joint_names=["joint1", "joint2"]), "no points")):
        r = ros_utils.call_service(node, CheckTrajectorySafety, name,
                                   CheckTrajectorySafety.Request(trajectory=bad), process=proc)
        assert not r.success and words in r.message, r.message
    r = ros_utils.call_service(node, CheckTrajectorySafety, name, CheckTrajectorySafety.Request(
        trajectory=traj, body_region="toes"), process=proc)
    assert not r.success and "unknown body region 'toes'" in r.message
    ros_utils.assert_running(proc)


def _all_finite(r):
    return math.isfinite(r.scale) and all(math.isfinite(x) for x in r.ratio)


def test_check_trajectory_safety_refuses_what_no_retiming_fixes(arm):
    """Answers with success false, a message that says why and finite fields, the node
    running and no traceback in its log: (a) a moving trajectory under a region without
    transient contact (face, skull), whose s would be inf (it answered "cannot convert float
    NaN to integer" with t_0 = 0, "internal error: OverflowError" with t_0 > 0); (b) a
    retiming whose times exceed Duration's int32 seconds (s ~ 5e11 from 1e-16 m^2 of
    contact: sec wrapped to a negative number with success true). A retiming as large that
    still fits is answered, its time t s to float precision."""
    node, proc, _, _, _ = arm
    name = "dynamics_node/check_trajectory_safety"

    def ask(times, **request):
        traj = JointTrajectory(joint_names=["joint1", "joint2"])
        for k, t in enumerate(times):
            traj.points.append(JointTrajectoryPoint(positions=[0.1 * k, 0.0],
                                                    velocities=[1.0, 0.0]))
            traj.points[-1].time_from_start.sec = int(t)
            traj.points[-1].time_from_start.nanosec = int(round((t - int(t)) * 1e9))
        return ros_utils.call_service(node, CheckTrajectorySafety, name, CheckTrajectorySafety
                                      .Request(trajectory=traj, **request), process=proc,
                                      timeout=60.0)     # (the first: the node may be busy)
    for region in ("face", "skull_forehead"):
        for times in ([0.0, 1.0], [1.0, 2.0]):
            r = ask(times, body_region=region)
            assert not r.success and _all_finite(r), r.message
            assert (f"body region '{region}' permits no transient contact" in r.message
                    and "cannot be made safe by slowing down" in r.message), r.message
    r = ask([0.0, 2.0], contact_area=1e-16)
    assert not r.success and _all_finite(r), r.message
    assert "beyond max_time = 2147483647 s: refused" in r.message, r.message
    r = ask([0.0, 1e-3], contact_area=1e-16)
    assert r.success and r.scale > 1e11, r.message
    t = r.retimed.points[1].time_from_start
    assert t.sec > 0 and t.sec + 1e-9 * t.nanosec == pytest.approx(1e-3 * r.scale, rel=1e-15)
    ros_utils.assert_running(proc)
    log = ros_utils.read_log(proc)
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
