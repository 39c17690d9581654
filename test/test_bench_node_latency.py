"""The latency benchmark's driver reads reply stamps from serialised bytes and publishes a
serialised joint state with the stamp rewritten in place: both against rclpy's own
(de)serialisation of the same messages (the benchmark itself is run by hand, not here)."""
from __future__ import annotations

import importlib.util
import os

import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from manip_dynamics_interfaces.msg import Dynamics

BENCH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "bench_node_latency.py")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_node_latency", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STAMPS = [0, 1, 999_999_999, 1_000_000_000, 1_795_487_509_636_080_793, 2**31 * 10**9 - 1]


@pytest.mark.parametrize("ns", STAMPS)
def test_stamp_read_from_the_bytes_of_either_reply(bench, ns):
    for msg in (JointState(name=["a", "bc"], position=[1.0, 2.0]),
                Dynamics(joint_names=["a"], tip_frame="tcp", mass_matrix=[2.0])):
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
        msg.header.frame_id = "base"
        assert bench.stamp_ns(serialize_message(msg)) == ns


def test_stamped_wire_publishes_the_template_with_each_stamp(bench):
    template = JointState(name=["j1", "j2", "j3"], position=[0.1, 0.2, 0.3],
                          velocity=[1.0, 2.0, 3.0], effort=[4.0, 5.0, 6.0])
    template.header.frame_id = "world"
    wire = bench.StampedWire(template)
    for ns in STAMPS:
        msg = deserialize_message(wire.bytes_with_stamp(ns), JointState)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == divmod(ns, 1_000_000_000)
        template.header.stamp = msg.header.stamp
        assert msg == template
