"""rosbag2 MCAP recordings (manip_dynamics.recording) against ROS 2's own serialization.

The writer and reader use the pure-Python mcap / mcap-ros2-support codec; the references
are rclpy.serialization with the real sensor_msgs/msg/JointState type of the ROS wheels
(no DDS traffic: serialization only), and the .msg files those wheels install.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from mcap.reader import make_reader
from mcap.writer import Writer as McapWriter
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from manip_dynamics import InputError
from manip_dynamics import recording as rec

NAMES = ["j1", "j2", "j3"]


def _data(N=20, seed=0):
    rng = np.random.default_rng(seed)
    t = 1_760_000_000.0 + np.arange(N) * 1e-3
    return t, rng.normal(size=(N, 3)), rng.normal(size=(N, 3)), rng.normal(size=(N, 3))


def _joint_state(t, names, q, qd, tau):
    msg = JointState()
    ns = int(round(t * 1e9))
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
    msg.name, msg.position, msg.velocity, msg.effort = names, list(q), list(qd), list(tau)
    return msg


def test_written_messages_are_ros_cdr_and_read_back(tmp_path):
    path = tmp_path / "js.mcap"
    t, q, qd, tau = _data()
    rec.write_joint_states(path, t, NAMES, q, qd, tau)
    with open(path, "rb") as f:
        records = list(make_reader(f).iter_messages())
    assert len(records) == len(t)
    for k, (schema, channel, message) in enumerate(records):
        assert (schema.name, schema.encoding, channel.message_encoding, channel.topic) == (
            "sensor_msgs/msg/JointState", "ros2msg", "cdr", "/joint_states")
        expected = _joint_state(t[k], NAMES, q[k], qd[k], tau[k])
        # same CDR layout as ROS's serializer (the alignment padding bytes after the
        # header's frame_id are unspecified in CDR: Fast CDR leaves them uninitialised)
        assert len(message.data) == len(serialize_message(expected))
        assert deserialize_message(message.data, JointState) == expected
    log = rec.read_joint_states(path)
    assert log.names == tuple(NAMES) and log.start_ns == int(round(t[0] * 1e9))
    assert np.abs(log.t - (t - t[0])).max() < 1e-6
    for a, b in ((log.position, q), (log.velocity, qd), (log.effort, tau)):
        assert np.array_equal(a, b)


def test_reads_what_rosbag2_writes(tmp_path):
    """Messages serialized by rclpy and written the way rosbag2's MCAP plugin does (schema
    + cdr channel), with the joints in a different order in some messages and no
    velocities."""
    path = tmp_path / "bag.mcap"
    t, q, _, tau = _data(seed=1)
    with open(path, "wb") as f:
        w = McapWriter(f)
        w.start(profile="ros2", library="test")
        sid = w.register_schema("sensor_msgs/msg/JointState", "ros2msg",
                                rec.JOINT_STATE_MSGDEF.encode())
        cid = w.register_channel("/joint_states", "cdr", sid)
        for k in range(len(t)):
            order = [2, 0, 1] if k % 2 else [0, 1, 2]
            msg = _joint_state(t[k], [NAMES[i] for i in order], q[k, order], [], tau[k, order])
            ns = int(round(t[k] * 1e9))
            w.add_message(cid, log_time=ns, data=serialize_message(msg), publish_time=ns)
        w.finish()
    log = rec.read_joint_states(path)
    assert log.velocity is None and np.array_equal(log.position, q)
    assert np.array_equal(log.effort, tau)
    q2, qd2, tau2 = log.in_order(["j3", "j1"])
    assert np.array_equal(q2, q[:, [2, 0]]) and qd2 is None
    with pytest.raises(InputError, match="no joints 'j9'"):
        log.in_order(["j1", "j9"])
    with pytest.raises(InputError, match="no sensor_msgs/JointState messages on topic /other"):
        rec.read_joint_states(path, topic="/other")


def test_schema_text_is_the_installed_message_definition():
    """JOINT_STATE_MSGDEF = the .msg files of the ROS wheels, comments and blank lines removed."""
    share = os.path.join(sys.prefix, "share")

    def stripped(pkg, name):
        with open(os.path.join(share, pkg, "msg", name + ".msg"), encoding="utf-8") as f:
            lines = [ln.split("#")[0].rstrip() for ln in f]
        return [ln for ln in lines if ln.strip()]

    parts = rec.JOINT_STATE_MSGDEF.strip().split("=" * 80)
    assert [ln for ln in parts[0].splitlines() if ln] == stripped("sensor_msgs", "JointState")
    for part, (pkg, name) in zip(parts[1:], [("std_msgs", "Header"),
                                             ("builtin_interfaces", "Time")]):
        lines = [ln for ln in part.splitlines() if ln]
        assert lines[0] == f"MSG: {pkg}/{name}" and lines[1:] == stripped(pkg, name)
