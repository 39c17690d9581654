"""Benchmark: what reading one joint_states message costs the dynamics node, raw bytes read
by ``nodes.wire_in.JointStateReader`` against rclpy building the Python JointState.

A sensor_msgs/JointState of ``--joints`` joints (Panda-like names) with position,
velocity and effort, and a stamp and frame_id, timed per message (the minimum over
``--repeat`` blocks: the least disturbed by other processes; the load average is printed):

* ``read``: ``JointStateReader()(data)`` of its serialised bytes: names' bytes equal to
  the previous message's (the node's case with a writer whose padding bytes repeat), the
  names' bytes compared name by name (padding bytes that differ: the names are walked,
  not decoded), and decoded afresh (a new reader);
* ``deserialize_message``: rclpy's reading of the same bytes into the Python message
  (what a non-raw subscription does after taking, plus the copy into the C message);
* over DDS in this process: ``--messages`` messages published, then taken with the node's
  ``runner.take_waiting`` from a raw subscription and each read, against taken from an
  ordinary subscription of the same topic (rclpy builds each Python message).

The code measured is the one first on the path (PYTHONPATH).

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_joint_state_read.py [--joints 7]
"""
from __future__ import annotations

import argparse
import os
import time
import timeit

import numpy as np
import rclpy
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from manip_dynamics.nodes.runner import take_waiting
from manip_dynamics.nodes.wire_in import JointStateReader


def state(n: int, k: int) -> JointState:
    msg = JointState(name=[f"panda_joint{i + 1}" for i in range(n)],
                     position=np.sin(np.arange(n) + k).tolist(),
                     velocity=np.cos(np.arange(n) + k).tolist(),
                     effort=(np.arange(n) * 0.5 + k).tolist())
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1_700_000_000 + k, 1000 * k
    msg.header.frame_id = "base"
    return msg


def per_call(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def in_memory(n: int, repeat: int) -> dict[str, float]:
    data = serialize_message(state(n, 1))
    reader = JointStateReader()
    reader(data)
    walker = JointStateReader()
    walker(data)

    def walked():                    # names' bytes compared one by one (padding differs)
        walker._names_bytes = None
        return walker(data)
    return {"read (names as before)": per_call(lambda: reader(data), 2000, repeat),
            "read (names walked)": per_call(walked, 2000, repeat),
            "read (names decoded)": per_call(lambda: JointStateReader()(data), 2000, repeat),
            "deserialize_message": per_call(lambda: deserialize_message(data, JointState),
                                            2000, repeat)}


def over_dds(n: int, count: int, repeat: int) -> dict[str, float]:
    """Per message: take_waiting + read (raw subscription) vs take_waiting (messages)."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f"bench_read_{os.getpid()}", context=context)
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=count,
                     reliability=ReliabilityPolicy.RELIABLE)
    topic = f"bench_joint_states_{os.getpid()}"
    raw = node.create_subscription(JointState, topic, lambda _: None, qos, raw=True)
    msgs = node.create_subscription(JointState, topic, lambda _: None, qos)
    pub = node.create_publisher(JointState, topic, qos)
    reader = JointStateReader()
    best = {"take raw + read": np.inf, "take messages": np.inf}
    try:
        deadline = time.monotonic() + 10.0
        while pub.get_subscription_count() < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        states = [state(n, k) for k in range(count)]
        for block in range(repeat):
            for msg in states:
                pub.publish(msg)
            time.sleep(0.3)                       # (all delivered into both readers)
            order = ("raw", "msgs") if block % 2 == 0 else ("msgs", "raw")
            for which in order:
                t = time.perf_counter()
                if which == "raw":
                    taken = [reader(data) for data in take_waiting(raw)]
                    key = "take raw + read"
                else:
                    taken = take_waiting(msgs)
                    key = "take messages"
                dt = time.perf_counter() - t
                if len(taken) == count:
                    best[key] = min(best[key], dt / count)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--joints", type=int, default=7)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rows = in_memory(args.joints, args.repeat)
    rows.update(over_dds(args.joints, args.messages, args.repeat))
    print(f"JointState of {args.joints} joints (position, velocity, effort), per message, "
          f"minimum of {args.repeat} blocks; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, seconds in rows.items():
        print(f"  {name:28s} {seconds * 1e6:8.2f} us")
    ratio = rows["deserialize_message"] / rows["read (names as before)"]
    print(f"  deserialize / read: {ratio:.2f}x;  take messages / take raw + read: "
          f"{rows['take messages'] / rows['take raw + read']:.2f}x")


if __name__ == "__main__":
    main()
