"""A DiagnosticArray built from rules.stats crosses DDS between two real nodes intact."""
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

from manip_dynamics.nodes.diagnostics import diagnostic_array
from manip_dynamics.rules.stats import NodeStats, diagnostic_status
import ros_utils


def test_diagnostic_array_round_trips_between_two_nodes(ros_node):
    stats = NodeStats(now=0.0, cpu_seconds=0.0)
    stats.received(200)
    for _ in range(190):
        stats.computed(0.5e-3)
    stats.skipped("latest-wins", 10)
    status = diagnostic_status(stats.report(2.0, 0.1, model="panda: 7 joints"))
    msg = diagnostic_array(ros_node.get_clock().now().to_msg(), "dynamics_node: statistics",
                           "panda", status)
    got = []
    sub = ros_node.create_subscription(DiagnosticArray, "/diagnostics", got.append, 10)
    sender = ros_utils.RosNodeHandle("diagnostics_sender")      # its own DDS participant
    try:
        ros_utils.publish_until(sender.node, DiagnosticArray, "/diagnostics", lambda: msg,
                                until=lambda: got, timeout=15.0)
    finally:
        sender.shutdown()
        ros_node.destroy_subscription(sub)
    (received,) = got[0].status
    assert received.level == DiagnosticStatus.WARN               # 10 of 200 skipped
    assert received.name == "dynamics_node: statistics" and received.hardware_id == "panda"
    assert received.message == "skipping states: 10 of 200 in the last 2.0 s (latest-wins: 10)"
    values = {kv.key: kv.value for kv in received.values}
    assert values["model"] == "panda: 7 joints"
    assert values["input rate [Hz]"] == "100.0" and values["output rate [Hz]"] == "95.0"
    assert values["skipped: latest-wins"] == "10 (total 10)"
    assert values["callback p99 [ms]"] == "0.500"
    assert values["CPU per message [ms]"] == "0.500"             # 0.1 s / 200
    assert [kv.key for kv in received.values] == [k for k, _ in status[2]]
    assert got[0].header.stamp == msg.header.stamp
