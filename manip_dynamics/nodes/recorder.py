"""recorder: joint_states (with effort) into a rosbag2 MCAP file, for identification.

Subscribes to ``joint_states`` (sensor_msgs/JointState; remap it as usual) and writes every
message, as received (the CDR bytes DDS delivered, unchanged), to an MCAP file with the
``ros2`` profile: what ``ros2 bag record -s mcap /joint_states`` writes, so ``ros2 bag
info``, Foxglove, ``python -m manip_dynamics.identify`` and
``manip_dynamics.core.identification.recording.read_joint_states`` open it. Log and publish times
are the receive time on this node's clock (ns). The file is created at the first message (no
message, no file) and its summary is written when the node stops (Ctrl-C, SIGINT) or on
``~/stop``; a file cut off before that still reads in order.

Parameters (start-up only):
    output          path of the .mcap file ('' = joint_states_<UTC time>.mcap here);
                    an existing file is refused unless ``overwrite``
    overwrite       replace an existing file
    reliability     best_effort (default: takes reliable and best-effort publishers) or
                    reliable
    depth           subscription queue depth
Service:
    ~/stop          std_srvs/Trigger: write the messages already delivered and waiting in
                    the queue, close the file (summary written); later messages are dropped

Messages without efforts are recorded too, with a warning (identification needs them).

Run: ``ros2 run manip_dynamics recorder --ros-args -p output:=run.mcap``.
"""
from __future__ import annotations

import os
import time

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from manip_dynamics.nodes.runner import declare_table, run_node, take_waiting
from manip_dynamics.core.identification.recording import SerializedJointStateWriter
from manip_dynamics.rules.parameter_table import ParameterTypeError, ParameterValueError, ParamSpec

NODE_NAME = "recorder"
PARAMETERS = (
    ParamSpec("output", "string", "", "Path of the MCAP file to write; '' = "
              "joint_states_<UTC time>.mcap in the working directory.", read_only=True),
    ParamSpec("overwrite", "bool", False, "Replace an existing output file.", read_only=True),
    ParamSpec("reliability", "string", "best_effort", "Subscription reliability: "
              "best_effort accepts every publisher; reliable only reliable ones.",
              choices=("best_effort", "reliable"), read_only=True),
    ParamSpec("depth", "integer", 1000, "Subscription queue depth.", low=1, high=100000,
              read_only=True),
)


class RecorderError(ParameterValueError):
    """The recorder cannot start (the message names the parameter)."""


class Recorder(Node):
    """See the module docstring. ``recorder.writer``: the open file (None before the first
    message and after ``~/stop``)."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs):
        super().__init__(node_name, **kwargs)
        values = declare_table(self, PARAMETERS)
        path = values["output"] or time.strftime("joint_states_%Y%m%dT%H%M%SZ.mcap",
                                                 time.gmtime())
        if os.path.exists(path) and not values["overwrite"]:
            raise RecorderError("output", f"{path} exists (set overwrite:=true to replace it)")
        if not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK):
            raise RecorderError("output", f"cannot write {path}: its directory is not writable")
        self.path, self.writer, self.stopped = path, None, False
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=int(values["depth"]),
                         reliability=(ReliabilityPolicy.RELIABLE
                                      if values["reliability"] == "reliable"
                                      else ReliabilityPolicy.BEST_EFFORT),
                         durability=DurabilityPolicy.VOLATILE)
        self._subscription = self.create_subscription(JointState, "joint_states",
                                                      self._on_message, qos, raw=True)
        self._warned_effort = False
        self.create_service(Trigger, "~/stop", self._on_stop)
        self.get_logger().info(f"recording {self._subscription.topic_name} to "
                               f"{os.path.abspath(path)}")

    def _on_message(self, data: bytes) -> None:
        if self.stopped:
            return
        if self.writer is None:
            try:
                self.writer = SerializedJointStateWriter(self.path,
                                                         self._subscription.topic_name)
            except OSError as exc:
                self.stopped = True
                self.get_logger().error(f"cannot write {self.path}: {exc}; not recording")
                return
        self.writer.write(data, self.get_clock().now().nanoseconds)
        if not self._warned_effort:
            try:
                msg = deserialize_message(data, JointState)
            except Exception as exc:   # recorded anyway: the bytes are what was sent
                self.get_logger().warning(f"a joint_states message did not deserialize: {exc}")
                return
            if len(msg.effort) == 0:
                self._warned_effort = True
                self.get_logger().warning(
                    "joint_states messages without efforts: recorded, but identification "
                    "needs the joint torques")

    def _on_stop(self, request, response):
        response.success = not self.stopped
        if response.success:          # what DDS delivered before the request is recorded too
            for data in take_waiting(self._subscription):
                self._on_message(data)
        response.message = self._close() if response.success else "already stopped"
        return response

    def _close(self) -> str:
        self.stopped = True
        writer, self.writer = self.writer, None
        if writer is None:
            return "no message received: no file written"
        writer.close()
        text = f"wrote {writer.count} messages to {writer.path}"
        self.get_logger().info(text)
        return text

    def destroy_node(self):
        self._close()
        return super().destroy_node()


def main(args=None) -> int:
    return run_node(Recorder, args, fatal=(ParameterTypeError, ParameterValueError),
                    name=NODE_NAME)


if __name__ == "__main__":
    raise SystemExit(main())
