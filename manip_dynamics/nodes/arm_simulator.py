"""arm_simulator: a simulated arm (MuJoCo by default) closing the loop over ROS topics.

The physics is in ``manip_dynamics.sim`` (no ROS): by default MuJoCo compiled from the
same URDF this node publishes on ``robot_description`` (``plant: mujoco``: joint limits,
damping, friction loss, effort-limited motors, capsules on a floor, optional obstacle),
or the core's own forward dynamics integrated by RK4 (``plant: model``, the
model-matched plant). This module only translates parameters and messages.

Timing: fixed step ``h = 1 / sim_rate`` (1 kHz). Every ``1 / (publish_rate *
real_time_factor)`` s of wall time a timer advances the plant by exactly ``sim_rate /
publish_rate`` steps with the motor torque held (zero-order hold), then publishes. With
``lockstep: true`` a tick also waits (up to ``lockstep_timeout``) for the command answering
the last published state, and stamps follow simulated time.

Topics (relative names):
    joint_states                out  sensor_msgs/JointState: position, velocity, effort =
                                     the motor torque applied during the last period
                                     (with optional Gaussian noise on each)
    ~/external_torques          out  sensor_msgs/JointState, same stamp: position = the true
                                     q, effort = the true external joint torque tau_ext
                                     (applied wrenches + contacts, J^T F)
    robot_description           out  std_msgs/String, latched (the nominal URDF)
    effort_command              in   sensor_msgs/JointState, every joint exactly once
    ~/commands                  in   std_msgs/Float64MultiArray in ``command_joints`` order
Service:
    ~/apply_wrench              manip_dynamics_interfaces/ApplyWrench (MuJoCo plant)

Command rules (``manip_dynamics.sim.commands``): the latest valid command holds until it
is ``command_timeout`` s old, then the torque is zero; a bad command is logged (throttled)
and ignored. Parameters: ``manip_dynamics.sim.parameters.PARAMETERS`` (one table).
Setting ``initial_positions`` / ``initial_velocities`` at run time resets the arm;
``paused`` freezes it (joint_states keep flowing).
"""
from __future__ import annotations

import math
import time

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from manip_dynamics import ManipDynamicsError, MissingDependencyError
from manip_dynamics.nodes.runner import declare_table, run_node, table_values
from manip_dynamics.sim.commands import CommandHold, MeasurementNoise
from manip_dynamics.sim.parameters import PARAMETERS, check, check_all, per_joint
from manip_dynamics.sim.plants import build_plant, load_robot
from manip_dynamics_interfaces.srv import ApplyWrench


class ArmSimulator(Node):
    """Parameters and messages in, ``manip_dynamics.sim`` does the physics."""

    def __init__(self):
        super().__init__("arm_simulator")
        declare_table(self, PARAMETERS)      # the table's bounds: ParameterValueError
        values = self._values()
        self.model, self.urdf_xml = load_robot(values["robot"], values["urdf_file"],
                                               values["xacro_args"])
        self.joint_names = list(self.model.joint_names)
        self.plant_name = values["plant"]
        reason = check_all(values, self.joint_names, self.plant_name)  # per-joint, plant
        if reason:
            raise ValueError(reason)
        self.substeps = max(1, round(values["sim_rate"] / values["publish_rate"]))
        self.h = 1.0 / (values["publish_rate"] * self.substeps)
        self.plant = build_plant(self.urdf_xml, self.model, values, self.h)
        self.commands = CommandHold(self.model.n, values["command_timeout"])
        self.noise = MeasurementNoise(values["noise_seed"])
        self._rejected = {}               # problem text -> monotonic time last logged
        self.period_ns = round(1e9 * self.h * self.substeps)
        self.stamp_ns = self.get_clock().now().nanoseconds    # the last stamp published
        self.stamp_lead_ns = 0            # simulated time's lead over the wall clock
        self.lockstep = False
        self.resuming = False             # reset at run time: wait for an answer, then step
        self._apply(values, startup=True)
        self._create_interfaces(values)
        self.get_logger().info(
            f"simulating {values['urdf_file'] or values['robot']} on the {self.plant_name} "
            f"plant ({self.model.n} joints: {', '.join(self.joint_names)}), "
            f"{values['integrator']} at {1.0 / self.h:.0f} Hz, {self.substeps} steps per "
            f"{1e3 / values['publish_rate']:.1f} ms, real-time factor "
            f"{values['real_time_factor']}")

    def _values(self) -> dict:
        """Every parameter's value by name; an unset array is []."""
        return table_values(self, PARAMETERS)

    def _create_interfaces(self, values):
        self.joint_state_pub = self.create_publisher(JointState, "joint_states", 10)
        self.truth_pub = self.create_publisher(JointState, "~/external_torques", 10)
        if values["publish_robot_description"]:
            latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.description_pub = self.create_publisher(String, "robot_description", latched)
            self.description_pub.publish(String(data=self.urdf_xml))
        self.create_subscription(JointState, "effort_command", self.on_joint_command, 10)
        self.create_subscription(Float64MultiArray, "~/commands", self.on_array_command, 10)
        self.create_service(ApplyWrench, "~/apply_wrench", self.on_apply_wrench)
        self.add_on_set_parameters_callback(self.on_set_parameters)
        self.add_post_set_parameters_callback(
            lambda params: self._apply({p.name: p.value for p in params}))
        period = 1.0 / (values["publish_rate"] * values["real_time_factor"])
        self.timer = self.create_timer(period, self.on_timer)

    # ------------------------------------------------------------------ parameters
    def on_set_parameters(self, params):
        for p in params:
            reason = check(p.name, p.value, self.joint_names, self.plant_name)
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def _apply(self, values: dict, startup=False):
        """Hand changed run-time values to the plant, the command rules and the noise."""
        plant, n = self.plant, self.model.n
        current = self._values()
        actions = {
            "integrator": lambda v: plant.set_integrator(v),
            "saturate_effort": lambda v: plant.set_saturation(v),
            "command_timeout": lambda v: setattr(self.commands, "timeout", float(v)),
            "command_joints": lambda v: setattr(self, "command_joints",
                                                list(v or self.joint_names)),
            "paused": lambda v: setattr(self, "paused", bool(v)),
            "lockstep": lambda v: self._set_lockstep(bool(v)),
            "lockstep_timeout": lambda v: setattr(self, "lockstep_timeout", float(v)),
            "coulomb_velocity": lambda v: setattr(plant, "coulomb_velocity", float(v)),
            "noise_position": lambda v: self.noise.sigma.update(position=float(v)),
            "noise_velocity": lambda v: self.noise.sigma.update(velocity=float(v)),
            "noise_effort": lambda v: self.noise.sigma.update(effort=float(v)),
        }
        for name, value in values.items():
            if name in actions:
                actions[name](value)
        if startup or {"viscous_friction", "coulomb_friction"} & values.keys():
            plant.set_friction(per_joint(current["viscous_friction"], n, self.model.viscous),
                               per_joint(current["coulomb_friction"], n, self.model.coulomb))
        if startup or {"initial_positions", "initial_velocities"} & values.keys():
            self._reset(log=not startup)

    def _set_lockstep(self, on: bool):
        """Switch lockstep with the stamps staying monotonic: switched on, simulated time goes
        on from the last stamp published (one period per state); switched off, the wall
        clock, plus the lead simulated time had over it if any."""
        if self.lockstep and not on:
            now = self.get_clock().now().nanoseconds
            self.stamp_lead_ns = max(0, self.stamp_ns + self.period_ns - now)
        self.lockstep = on

    def _reset(self, log=True):
        """Put the arm at the initial state (unset: 0 clipped into the limits, at rest).

        At run time (``log``), the held command (computed for the state before the reset)
        is dropped and the reset state published at once; the plant then waits, as one
        lockstep period does, for the command answering it (up to ``lockstep_timeout``,
        then it steps on with zero torque): pause, reset, resume by itself."""
        values = self._values()
        q = values["initial_positions"]
        qd = values["initial_velocities"]
        q = (np.asarray(q, dtype=float) if q else
             np.clip(0.0, self.model.position_lower, self.model.position_upper))
        self.plant.reset(q, np.asarray(qd, dtype=float) if qd else None)
        self.plant.tau_applied = np.zeros(self.model.n)
        if log:
            self.get_logger().info(f"reset to q = {np.round(self.plant.q, 4).tolist()}")
            self.commands.drop()
            self.resuming = True
            self._publish()

    # ------------------------------------------------------------------ commands
    def on_joint_command(self, msg: JointState):
        try:
            tau = self.model.vector_from_names(list(msg.name), list(msg.effort),
                                               field="effort", allow_extra=False)
        except ValueError as err:   # InputError: names the joint / length / value at fault
            self._reject(f"effort_command: {err}")
            return
        self.commands.accept(tau, time.monotonic(),
                             (msg.header.stamp.sec, msg.header.stamp.nanosec))

    def on_array_command(self, msg: Float64MultiArray):
        data = np.asarray(msg.data, dtype=float)
        if data.shape != (len(self.command_joints),):
            self._reject(f"~/commands: expected {len(self.command_joints)} values "
                         f"({', '.join(self.command_joints)}), got {len(data)}")
            return
        if not np.all(np.isfinite(data)):
            bad = [j for j, x in zip(self.command_joints, data) if not math.isfinite(x)]
            self._reject(f"~/commands: non-finite effort for {', '.join(bad)}")
            return
        tau = np.zeros(self.model.n)
        tau[[self.joint_names.index(j) for j in self.command_joints]] = data
        self.commands.accept(tau, time.monotonic())

    def _reject(self, text):
        """Warn about a bad command; each distinct problem at most once per second."""
        now = time.monotonic()
        if now - self._rejected.get(text, -math.inf) >= 1.0:
            self._rejected[text] = now
            self.get_logger().warning(f"ignoring bad command: {text}")

    def on_apply_wrench(self, request, response):
        try:
            self.plant.apply_wrench(request.link, request.force, request.torque,
                                    request.point, request.duration)
        except ValueError as err:
            response.success, response.message = False, str(err)
            return response
        response.success = True
        response.message = (f"applying {np.asarray(request.force).tolist()} N, "
                            f"{np.asarray(request.torque).tolist()} N*m at {request.link} "
                            f"for {request.duration} s")
        return response

    # ------------------------------------------------------------------ simulation
    def on_timer(self):
        now = time.monotonic()
        waiting = self.lockstep or self.resuming
        if waiting and not self.paused and not self.commands.answered():
            if self.commands.waited(now) < self.lockstep_timeout:
                return                  # wait (simulated time stands still) for the answer
            self.get_logger().warning(
                f"{'lockstep' if self.lockstep else 'after the reset'}: no command answered "
                f"the last state within {self.lockstep_timeout} s; stepping on",
                throttle_duration_sec=1.0)
        self.resuming = self.resuming and self.paused
        if self.commands.newly_timed_out(now):
            self.get_logger().warning(
                f"no command for {self.commands.timeout} s: applying zero torque")
        if not self.paused:
            try:
                self.plant.advance(self.commands.torque(now), self.substeps)
            except (FloatingPointError, ManipDynamicsError) as err:
                # diverged, or the core refused a state: never let it kill the node
                self.get_logger().error(f"simulation step failed: {err}; "
                                        "resetting to the initial state")
                self._reset(log=False)
        self._publish()

    def _publish(self):
        if self.lockstep:
            # One period per message: stamps follow simulated time, not the wall clock.
            self.stamp_ns += self.period_ns
        else:
            self.stamp_ns = self.get_clock().now().nanoseconds + self.stamp_lead_ns
        stamp = Time(nanoseconds=self.stamp_ns).to_msg()
        q, qd = self.plant.q, self.plant.qd
        tau = self.plant.tau_applied if not self.paused else np.zeros(self.model.n)
        msg = JointState(name=self.joint_names,
                         position=self.noise("position", q).tolist(),
                         velocity=self.noise("velocity", qd).tolist(),
                         effort=self.noise("effort", np.asarray(tau, dtype=float)).tolist())
        msg.header.stamp = stamp
        truth = JointState(name=self.joint_names, position=q.tolist(),
                           effort=self.plant.external_torques().tolist())
        truth.header.stamp = stamp
        self.joint_state_pub.publish(msg)
        self.truth_pub.publish(truth)
        self.commands.published((stamp.sec, stamp.nanosec), time.monotonic())


def main(args=None) -> int:
    # A start-up value out of its table bounds or refused by check(), or a xacro urdf_file
    # without the xacro extra installed: "cannot start: ..." (one line).
    return run_node(ArmSimulator, args, fatal=(ValueError, ParameterException,
                                               MissingDependencyError),
                    name="arm_simulator")


if __name__ == "__main__":
    raise SystemExit(main())
