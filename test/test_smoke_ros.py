"""The ROS plumbing is real: two processes exchange messages and call a service.

The helper ``processes/joint_state_echo.py`` runs in a child process; the test process
holds its own rclpy node (``ros_node`` fixture). Nothing is mocked.
"""
import os

import pytest

import ros_utils


def _joint_state(names, positions):
    from sensor_msgs.msg import JointState

    msg = JointState()
    msg.name = list(names)
    msg.position = list(positions)
    return msg


def test_conftest_isolates_ros():
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert 0 <= int(os.environ["ROS_DOMAIN_ID"]) <= 232


def test_joint_state_and_service_round_trip(node_process, ros_node):
    from sensor_msgs.msg import JointState

    from manip_dynamics_interfaces.srv import GetMassMatrix

    proc = node_process([ros_utils.PROCESSES / "joint_state_echo.py"])
    names = ["shoulder", "elbow", "wrist"]
    positions = [0.25, -1.5, 3.0]

    # topic: test -> helper -> test (keep publishing until the echo arrives, so discovery
    # timing cannot make the test flaky)
    echoes = []
    sub = ros_node.create_subscription(JointState, "joint_states_echo", echoes.append, 10)
    try:
        ros_utils.publish_until(
            ros_node, JointState, "joint_states",
            lambda: _joint_state(names, positions),
            until=lambda: echoes or ros_utils.assert_running(proc),
            timeout=20.0,
        )
    finally:
        ros_node.destroy_subscription(sub)
    echo = echoes[0]
    assert list(echo.name) == names
    assert list(echo.position) == positions
    assert list(echo.effort) == [2 * p for p in positions]

    # service of a type generated from manip_dynamics_interfaces
    request = GetMassMatrix.Request(joint_names=names, position=positions)
    response = ros_utils.call_service(ros_node, GetMassMatrix, "get_mass_matrix", request,
                                      timeout=20.0, process=proc)
    assert response.success, response.message
    assert list(response.joint_names) == names
    assert list(response.mass_matrix) == [1.0, 0, 0, 0, 2.0, 0, 0, 0, 3.0]
    assert list(response.eigenvalues) == [1.0, 2.0, 3.0]
    assert response.condition_number == 3.0

    ros_utils.assert_running(proc)
    assert ros_utils.stop_process(proc) is not None
    assert "READY" in ros_utils.read_log(proc)


def test_other_domain_is_not_heard(node_process, ros_node, ros_domain_id):
    """A server on another domain id must stay invisible (the isolation tests rely on)."""
    from manip_dynamics_interfaces.srv import GetMassMatrix

    other = ros_domain_id % 100 + 101  # 101..200: never a session id chosen by conftest
    proc = node_process([ros_utils.PROCESSES / "joint_state_echo.py"], env={"ROS_DOMAIN_ID": other})
    ros_utils.wait_for(lambda: "READY" in ros_utils.read_log(proc) or ros_utils.assert_running(proc),
                       timeout=20.0)
    client = ros_node.create_client(GetMassMatrix, "get_mass_matrix")
    try:
        assert not client.wait_for_service(timeout_sec=2.0)
    finally:
        ros_node.destroy_client(client)
    # the server was up all along: not heard because of the domain, not because it died
    ros_utils.assert_running(proc)


def test_wait_for_message_helper(node_process, ros_node):
    from sensor_msgs.msg import JointState

    node_process([ros_utils.PROCESSES / "joint_state_echo.py"])
    pub = ros_node.create_publisher(JointState, "joint_states", 10)
    timer = ros_node.create_timer(0.05, lambda: pub.publish(_joint_state(["j"], [0.5])))
    try:
        msg = ros_utils.wait_for_message(
            ros_node, JointState, "joint_states_echo", timeout=20.0,
            predicate=lambda m: list(m.name) == ["j"],
        )
    finally:
        ros_node.destroy_timer(timer)
        ros_node.destroy_publisher(pub)
    assert list(msg.effort) == [1.0]


def test_helpers_fail_fast_when_the_node_process_died(node_process, ros_node):
    """A dead process ends the wait with an AssertionError naming its exit code. Waiting
    out the timeout would raise TimeoutError instead, so no clock is needed to tell the two
    apart; the timeout is long so that only the process check can end the wait."""
    from manip_dynamics_interfaces.srv import GetMassMatrix

    proc = node_process(["this"])  # `python -m this`: prints and exits at once
    with pytest.raises(AssertionError, match="exited with code 0"):
        ros_utils.call_service(ros_node, GetMassMatrix, "nobody_serves_this",
                               GetMassMatrix.Request(), timeout=600.0, process=proc)
