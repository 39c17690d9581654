"""rosbag2 MCAP recordings (manip_dynamics.core.identification.recording) against ROS 2's own
serialization.

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
from manip_dynamics.core.identification import recording as rec

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


def _write_like_rosbag2(path, t, q, tau, rows):
    """Messages ``rows`` serialized by rclpy and written the way rosbag2's MCAP plugin does
    (schema + cdr channel), with the joints in a different order in odd messages and no
    velocities."""
    with open(path, "wb") as f:
        w = McapWriter(f)
        w.start(profile="ros2", library="test")
        sid = w.register_schema("sensor_msgs/msg/JointState", "ros2msg",
                                rec.JOINT_STATE_MSGDEF.encode())
        cid = w.register_channel("/joint_states", "cdr", sid)
        for k in rows:
            order = [2, 0, 1] if k % 2 else [0, 1, 2]
            msg = _joint_state(t[k], [NAMES[i] for i in order], q[k, order], [], tau[k, order])
            ns = int(round(t[k] * 1e9))
            w.add_message(cid, log_time=ns, data=serialize_message(msg), publish_time=ns)
        w.finish()


def test_reads_what_rosbag2_writes(tmp_path):
    """An MCAP file written the way rosbag2's MCAP plugin does (another tool than ours)."""
    path = tmp_path / "bag.mcap"
    t, q, _, tau = _data(seed=1)
    _write_like_rosbag2(path, t, q, tau, range(len(t)))
    log = rec.read_joint_states(path)
    assert log.velocity is None and np.array_equal(log.position, q)
    assert np.array_equal(log.effort, tau)
    q2, qd2, tau2 = log.in_order(["j3", "j1"])
    assert np.array_equal(q2, q[:, [2, 0]]) and qd2 is None
    with pytest.raises(InputError, match="no joints 'j9'"):
        log.in_order(["j1", "j9"])
    with pytest.raises(InputError, match="no sensor_msgs/JointState messages on topic /other"):
        rec.read_joint_states(path, topic="/other")


# metadata.yaml as rosbag2 (Jazzy, version 9) writes it for `ros2 bag record -s mcap
# --max-bag-size ...`: the split files in relative_file_paths, in recording order.
METADATA = """rosbag2_bagfile_information:
  version: 9
  storage_identifier: {storage}
  duration:
    nanoseconds: 19000000
  starting_time:
    nanoseconds_since_epoch: 1760000000000000000
  message_count: 20
  topics_with_message_count:
    - topic_metadata:
        name: /joint_states
        type: sensor_msgs/msg/JointState
        serialization_format: cdr
        offered_qos_profiles: []
        type_description_hash: RIHS01_0000
      message_count: 20
  compression_format: ""
  compression_mode: ""
  relative_file_paths:
    - bag_0.mcap
    - bag_1.mcap
  files:
    - path: bag_0.mcap
      message_count: 12
    - path: bag_1.mcap
      message_count: 8
  custom_data: ~
  ros_distro: jazzy
"""


def test_reads_a_bag_directory_split_into_several_files(tmp_path):
    """The directory `ros2 bag record -s mcap` writes (metadata.yaml + bag_0.mcap,
    bag_1.mcap), given as the directory or its metadata.yaml, reads as one recording
    equal to the messages written; without metadata.yaml its *.mcap files are read."""
    bag = tmp_path / "rosbag2_2026_11_26-07_00_00"
    bag.mkdir()
    t, q, _, tau = _data(seed=2)
    _write_like_rosbag2(bag / "bag_0.mcap", t, q, tau, range(12))
    _write_like_rosbag2(bag / "bag_1.mcap", t, q, tau, range(12, 20))
    (bag / "metadata.yaml").write_text(METADATA.format(storage="mcap"))
    for path in (bag, bag / "metadata.yaml", str(bag)):
        log = rec.read_joint_states(path)
        assert log.names == tuple(NAMES) and log.start_ns == int(round(t[0] * 1e9))
        assert np.array_equal(log.position, q) and np.array_equal(log.effort, tau)
        assert np.abs(log.t - (t - t[0])).max() < 1e-6 and log.velocity is None
    assert rec.bag_files(bag) == [bag / "bag_0.mcap", bag / "bag_1.mcap"]
    (bag / "metadata.yaml").unlink()
    assert np.array_equal(rec.read_joint_states(bag).position, q)
    split = tmp_path / "split"
    split.mkdir()
    for k in (10, 9, 0):
        (split / f"bag_{k}.mcap").touch()
    assert [f.name for f in rec.bag_files(split)] == ["bag_0.mcap", "bag_9.mcap", "bag_10.mcap"]


def test_bag_directories_it_cannot_read_are_refused_with_the_reason(tmp_path):
    bag = tmp_path / "bag"
    bag.mkdir()
    with pytest.raises(InputError, match="a directory with no .mcap file"):
        rec.read_joint_states(bag)
    (bag / "metadata.yaml").write_text(METADATA.format(storage="sqlite3"))
    with pytest.raises(InputError, match="stored as 'sqlite3'; only MCAP is read"):
        rec.read_joint_states(bag)
    (bag / "metadata.yaml").write_text(METADATA.format(storage="mcap"))
    with pytest.raises(InputError, match="bag_0.mcap, .*bag_1.mcap, which do not exist"):
        rec.read_joint_states(bag)


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
