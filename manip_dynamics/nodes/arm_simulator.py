"""arm_simulator: integrates the arm's forward dynamics and closes the loop over ROS topics.

Equation integrated (the project's convention, docs/design.md):

    M(q) qdd + C(q, qd) qd + g(q) = tau_motor - tau_fr(qd)
    tau_fr(qd) = viscous * qd + coulomb * tanh(qd / coulomb_velocity)

``qdd = model.forward_dynamics(q, qd, tau_motor - tau_fr)`` from the core, with the URDF
chosen by ``robot`` (an embedded robot, ``manip_dynamics.robots``) or ``urdf_file``.
Coulomb friction is smoothed by tanh so the right-hand side stays Lipschitz and a
fixed-step integrator neither chatters nor needs event detection; ``coulomb_velocity``
sets the smoothing width (the Panda's identified friction sigmoid is about this wide).

Integration (docs/simulation.md has the reasoning): fixed step ``h = 1 / sim_rate``
(default 1 kHz) with classical Runge-Kutta 4 (``integrator: rk4``, default) or
semi-implicit Euler (``semi_implicit_euler``: cheaper, symplectic, first order). Every
``1 / publish_rate`` s of wall time a timer advances the simulation by exactly
``sim_rate / publish_rate`` steps (a whole number of fixed steps per tick: if the CPU cannot
keep up, simulated time runs slower than wall time instead of skipping), then publishes
``joint_states``. With ``lockstep: true`` a tick also waits (up to ``lockstep_timeout``) for
the command answering the last published state, and stamps follow simulated time.
The motor torque is held constant over those steps (zero-order hold, like a digital
controller's output).

Topics (relative names: namespaces and remapping work):
    joint_states          out  sensor_msgs/JointState: position, velocity, and effort = the
                               motor torque applied during the last period (after the
                               timeout and saturation rules below)
    robot_description     out  std_msgs/String, reliable + transient local (latched, as
                               robot_state_publisher publishes it); off with
                               ``publish_robot_description: false``
    effort_command        in   sensor_msgs/JointState: ``name`` + ``effort``, naming every
                               joint exactly once (extra joints are an error)
    ~/commands            in   std_msgs/Float64MultiArray in ``command_joints`` order (what
                               a ros2_control JointGroupEffortController takes); joints not
                               in ``command_joints`` get zero torque

Command rules: the latest valid command is applied until it is older than
``command_timeout`` s (wall time, by arrival), after which the motor torque is ZERO (the
arm then moves under gravity and friction alone, like a drive whose command stream
stopped). A bad command (wrong length, unknown or missing joints, NaN/inf) is logged
(throttled) and ignored: the previous command stays in force. With ``saturate_effort``
the torque is clipped to the URDF's effort limits. Joint position limits are NOT enforced.

Reset: setting ``initial_positions`` and/or ``initial_velocities`` at run time puts the arm
in that state immediately (one ``set_parameters_atomically`` call with ``paused: true``
gives a clean restart). ``paused: true`` freezes the state; joint_states keep flowing.
"""
from __future__ import annotations

import math
import os
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from manip_dynamics import ManipDynamicsError, RobotModel, robots
from manip_dynamics.nodes.runner import array_parameter, run_node

INTEGRATORS = ('rk4', 'semi_implicit_euler')


class ArmSimulation:
    """ROS-free fixed-step simulation of ``M qdd + C qd + g = tau - tau_fr``.

    model:      RobotModel (its own friction is not used: friction is applied here).
    viscous, coulomb: (n,) friction coefficients (N*m*s/rad or N*s/m; N*m or N).
    coulomb_velocity: tanh smoothing width of Coulomb friction (rad/s or m/s), > 0.
    """

    def __init__(self, model, viscous, coulomb, coulomb_velocity=0.1, integrator='rk4'):
        self.model = model
        self.n = model.n
        self.viscous = np.asarray(viscous, dtype=float).reshape(self.n)
        self.coulomb = np.asarray(coulomb, dtype=float).reshape(self.n)
        self.coulomb_velocity = float(coulomb_velocity)
        self.integrator = integrator
        self.q = np.zeros(self.n)
        self.qd = np.zeros(self.n)
        self.time = 0.0

    def reset(self, q, qd=None):
        self.q = np.array(q, dtype=float).reshape(self.n)
        self.qd = np.zeros(self.n) if qd is None else np.array(qd, dtype=float).reshape(self.n)

    def friction(self, qd):
        """tau_fr = viscous qd + coulomb tanh(qd / v_s): opposes motion, smooth at qd = 0."""
        return self.viscous * qd + self.coulomb * np.tanh(qd / self.coulomb_velocity)

    def acceleration(self, q, qd, tau):
        """qdd = M^-1 (tau - tau_fr(qd) - C qd - g), by the core's forward dynamics."""
        return self.model.forward_dynamics(q, qd, tau - self.friction(qd))

    def step(self, tau, h):
        """Advance (q, qd) by one step of length h with the torque tau held constant."""
        q, qd = self.q, self.qd
        if self.integrator == 'rk4':
            # x = (q, qd), x' = (qd, qdd(q, qd)); classical 4-stage Runge-Kutta.
            a1 = self.acceleration(q, qd, tau)
            q2, v2 = q + 0.5 * h * qd, qd + 0.5 * h * a1
            a2 = self.acceleration(q2, v2, tau)
            q3, v3 = q + 0.5 * h * v2, qd + 0.5 * h * a2
            a3 = self.acceleration(q3, v3, tau)
            q4, v4 = q + h * v3, qd + h * a3
            a4 = self.acceleration(q4, v4, tau)
            self.q = q + h / 6.0 * (qd + 2.0 * v2 + 2.0 * v3 + v4)
            self.qd = qd + h / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        else:
            # Semi-implicit (symplectic) Euler: velocity first, then position with it.
            self.qd = qd + h * self.acceleration(q, qd, tau)
            self.q = q + h * self.qd
        self.time += h

    def advance(self, tau, h, steps):
        for _ in range(steps):
            self.step(tau, h)
        if not (np.all(np.isfinite(self.q)) and np.all(np.isfinite(self.qd))):
            raise FloatingPointError('simulation diverged (non-finite state)')

    def energy(self):
        """Kinetic + potential energy (J) of the current state."""
        return float(self.model.kinetic_energy(self.q, self.qd)
                     + self.model.potential_energy(self.q))


def load_model(robot: str, urdf_file: str):
    """RobotModel and URDF text from ``urdf_file`` if given, else the embedded ``robot``."""
    path = os.path.expanduser(urdf_file) if urdf_file else robots.path(robot)
    with open(path, encoding='utf-8') as f:
        xml = f.read()
    return RobotModel.from_urdf_string(xml), xml


def _per_joint(values, n, name, default, minimum=None):
    """A length-1 list broadcasts to all joints, a length-n list is per joint, [] -> default."""
    if values is None or len(values) == 0:
        return np.array(default, dtype=float)
    arr = np.asarray(values, dtype=float)
    if arr.shape not in ((1,), (n,)):
        raise ValueError(f'{name}: expected 1 or {n} values, got {len(arr)}')
    if not np.all(np.isfinite(arr)):
        raise ValueError(f'{name}: values must be finite, got {list(arr)}')
    if minimum is not None and np.any(arr < minimum):
        raise ValueError(f'{name}: values must be >= {minimum}, got {list(arr)}')
    return np.broadcast_to(arr, (n,)).copy()


def _descriptor(text, read_only=False):
    return ParameterDescriptor(description=text, read_only=read_only)


class ArmSimulator(Node):
    """Thin ROS wrapper: parameters and messages in, ``ArmSimulation`` does the physics."""

    def __init__(self):
        super().__init__('arm_simulator')
        d = _descriptor
        self.declare_parameter('robot', 'panda', d(
            'Embedded robot to simulate (manip_dynamics.robots.names()); ignored if urdf_file '
            'is set.', read_only=True))
        self.declare_parameter('urdf_file', '', d(
            'Path of a URDF file to simulate instead of an embedded robot.', read_only=True))
        self.declare_parameter('publish_rate', 100.0, d(
            'joint_states rate and control period (Hz), > 0.', read_only=True))
        self.declare_parameter('sim_rate', 1000.0, d(
            'Integration steps per simulated second (Hz); rounded to a whole number of steps '
            'per publish period.', read_only=True))
        self.declare_parameter('publish_robot_description', True, d(
            'Publish the URDF on robot_description (transient local).', read_only=True))
        self.declare_parameter('integrator', 'rk4', d(
            'Fixed-step method: rk4 (default) or semi_implicit_euler.'))
        self.declare_parameter('initial_positions', Parameter.Type.DOUBLE_ARRAY, d(
            'Initial q (rad or m), one per joint in model order; empty: 0 clipped into the '
            'position limits. Setting it at run time resets the arm to it.'))
        self.declare_parameter('initial_velocities', Parameter.Type.DOUBLE_ARRAY, d(
            'Initial qd, one per joint; empty: zeros. Setting it at run time resets the arm.'))
        self.declare_parameter('viscous_friction', Parameter.Type.DOUBLE_ARRAY, d(
            'Viscous friction per joint (N*m*s/rad, N*s/m), >= 0; 1 value: all joints; '
            'empty: the URDF <dynamics damping>.'))
        self.declare_parameter('coulomb_friction', Parameter.Type.DOUBLE_ARRAY, d(
            'Coulomb friction per joint (N*m, N), >= 0; 1 value: all joints; empty: the '
            'URDF <dynamics friction>.'))
        self.declare_parameter('coulomb_velocity', 0.1, d(
            'Width of the tanh that smooths Coulomb friction (rad/s, m/s), > 0.'))
        self.declare_parameter('command_timeout', 0.5, d(
            'A command older than this (s) is dropped and the motor torque becomes zero; > 0.'))
        self.declare_parameter('command_joints', Parameter.Type.STRING_ARRAY, d(
            'Joint order of ~/commands (Float64MultiArray); empty: all joints in model order.'))
        self.declare_parameter('saturate_effort', True, d(
            'Clip motor torques to the URDF effort limits.'))
        self.declare_parameter('lockstep', False, d(
            'Wait for the command answering each published state before stepping (up to '
            'lockstep_timeout): results independent of CPU load; stamps follow simulated time.'))
        self.declare_parameter('lockstep_timeout', 0.2, d(
            'Longest wait (s) for that answer in lockstep mode before stepping on; > 0.'))
        self.declare_parameter('paused', False, d(
            'Freeze the simulation (joint_states keep being published).'))

        robot = self.get_parameter('robot').value
        urdf_file = self.get_parameter('urdf_file').value
        self.model, self.urdf_xml = load_model(robot, urdf_file)
        n = self.model.n
        self.joint_names = list(self.model.joint_names)
        self.publish_rate = float(self.get_parameter('publish_rate').value)
        sim_rate = float(self.get_parameter('sim_rate').value)
        if not (self.publish_rate > 0 and sim_rate > 0):
            raise ValueError('publish_rate and sim_rate must be > 0')
        self.substeps = max(1, round(sim_rate / self.publish_rate))
        self.h = 1.0 / (self.publish_rate * self.substeps)

        # Validate every run-time parameter's start value with the same checks as later.
        params = [self.get_parameter_or(p, None) for p in (
            'integrator', 'viscous_friction', 'coulomb_friction', 'coulomb_velocity',
            'command_timeout', 'command_joints', 'initial_positions', 'initial_velocities',
            'lockstep_timeout')]
        params = [p for p in params if p is not None and p.type_ != Parameter.Type.NOT_SET]
        reason = self._check(params)
        if reason:
            raise ValueError(reason)
        self.sim = ArmSimulation(self.model, self.model.viscous, self.model.coulomb)
        self.command_joints = list(self.joint_names)
        self.command_index = list(range(n))
        self._apply(params + [self.get_parameter(p) for p in ('paused', 'saturate_effort',
                                                              'lockstep')], startup=True)

        self.tau_command = np.zeros(n)
        self.command_time = None          # monotonic arrival time of the latest valid command
        self.tau_applied = np.zeros(n)
        self._warned_timeout = False
        self._rejected = {}               # problem text -> monotonic time last logged
        self.command_stamp = None         # (sec, nanosec) of the latest JointState command
        self.published_stamp = None       # (sec, nanosec) of the latest joint_states
        self.published_at = None          # monotonic time it was published
        self.stamp_ns = self.get_clock().now().nanoseconds

        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.joint_state_pub = self.create_publisher(JointState, 'joint_states', 10)
        if self.get_parameter('publish_robot_description').value:
            self.description_pub = self.create_publisher(String, 'robot_description', latched)
            self.description_pub.publish(String(data=self.urdf_xml))
        self.create_subscription(JointState, 'effort_command', self.on_joint_command, 10)
        self.create_subscription(Float64MultiArray, '~/commands', self.on_array_command, 10)
        self.add_on_set_parameters_callback(self.on_set_parameters)
        self.add_post_set_parameters_callback(self.on_parameters_set)
        self.timer = self.create_timer(1.0 / self.publish_rate, self.on_timer)
        self.get_logger().info(
            f'simulating {robot if not urdf_file else urdf_file} ({n} joints: '
            f'{", ".join(self.joint_names)}), {self.sim.integrator} at '
            f'{1.0 / self.h:.0f} Hz, {self.substeps} steps per {1e3 / self.publish_rate:.1f} ms')

    # ------------------------------------------------------------------ parameters
    def _check(self, params):
        """Reason the parameter change is invalid, or '' (also used at start-up)."""
        n = self.model.n
        for p in params:
            v = None if p.type_ == Parameter.Type.NOT_SET else p.value
            try:
                if p.name == 'integrator' and v not in INTEGRATORS:
                    return f'integrator must be one of {INTEGRATORS}, got {v!r}'
                if p.name in ('viscous_friction', 'coulomb_friction'):
                    _per_joint(v, n, p.name, np.zeros(n), minimum=0.0)
                if p.name in ('coulomb_velocity', 'command_timeout', 'lockstep_timeout') and not (
                        math.isfinite(v) and v > 0):
                    return f'{p.name} must be finite and > 0, got {v}'
                if p.name in ('initial_positions', 'initial_velocities') and v:
                    arr = np.asarray(v, dtype=float)
                    if arr.shape != (n,) or not np.all(np.isfinite(arr)):
                        return (f'{p.name}: expected {n} finite values (joints '
                                f'{", ".join(self.model.joint_names)}), got {list(v)}')
                if p.name == 'command_joints' and v:
                    unknown = [j for j in v if j not in self.model.joint_names]
                    if unknown or len(set(v)) != len(v):
                        return (f'command_joints: unknown {unknown} or duplicate joints in '
                                f'{list(v)}; joints: {", ".join(self.model.joint_names)}')
            except (ValueError, TypeError) as err:
                return str(err)
        return ''

    def on_set_parameters(self, params):
        reason = self._check(params)
        return SetParametersResult(successful=not reason, reason=reason)

    def on_parameters_set(self, params):
        self._apply(params)

    def _apply(self, params, startup=False):
        n, sim = self.model.n, self.sim
        names = {p.name: p.value for p in params}
        if 'integrator' in names:
            sim.integrator = names['integrator']
        if 'viscous_friction' in names:
            sim.viscous = _per_joint(names['viscous_friction'], n, 'viscous', self.model.viscous)
        if 'coulomb_friction' in names:
            sim.coulomb = _per_joint(names['coulomb_friction'], n, 'coulomb', self.model.coulomb)
        if 'coulomb_velocity' in names:
            sim.coulomb_velocity = float(names['coulomb_velocity'])
        if 'command_timeout' in names:
            self.command_timeout = float(names['command_timeout'])
        if 'command_joints' in names:
            self.command_joints = list(names['command_joints'] or self.joint_names)
            self.command_index = [self.joint_names.index(j) for j in self.command_joints]
        if 'saturate_effort' in names:
            self.saturate_effort = bool(names['saturate_effort'])
        if 'paused' in names:
            self.paused = bool(names['paused'])
        if 'lockstep' in names:
            self.lockstep = bool(names['lockstep'])
        if 'lockstep_timeout' in names:
            self.lockstep_timeout = float(names['lockstep_timeout'])
        if startup or 'initial_positions' in names or 'initial_velocities' in names:
            sim.reset(self._initial('initial_positions'), self._initial('initial_velocities'))
            if not startup:
                self.get_logger().info(f'reset to q = {np.round(sim.q, 4).tolist()}')

    def _initial(self, name):
        value = array_parameter(self, name)
        if len(value):
            return np.asarray(value, dtype=float)
        if name == 'initial_velocities':
            return np.zeros(self.model.n)
        return np.clip(0.0, self.model.position_lower, self.model.position_upper)

    # ------------------------------------------------------------------ commands
    def on_joint_command(self, msg: JointState):
        try:
            tau = self.model.vector_from_names(list(msg.name), list(msg.effort),
                                               field='effort', allow_extra=False)
        except ValueError as err:   # InputError: names the joint / length / value at fault
            self._reject(f'effort_command: {err}')
            return
        self._accept(np.asarray(tau, dtype=float),
                     (msg.header.stamp.sec, msg.header.stamp.nanosec))

    def on_array_command(self, msg: Float64MultiArray):
        data = np.asarray(msg.data, dtype=float)
        if data.shape != (len(self.command_joints),):
            self._reject(f'~/commands: expected {len(self.command_joints)} values '
                         f'({", ".join(self.command_joints)}), got {len(data)}')
            return
        if not np.all(np.isfinite(data)):
            bad = [j for j, x in zip(self.command_joints, data) if not math.isfinite(x)]
            self._reject(f'~/commands: non-finite effort for {", ".join(bad)}')
            return
        tau = np.zeros(self.model.n)
        tau[self.command_index] = data
        self._accept(tau)

    def _accept(self, tau, stamp=None):
        self.tau_command = tau
        self.command_time = time.monotonic()
        self.command_stamp = stamp if stamp and stamp != (0, 0) else None
        self._warned_timeout = False

    def _reject(self, text):
        """Warn about a bad command; each distinct problem at most once per second."""
        now = time.monotonic()
        if now - self._rejected.get(text, -math.inf) >= 1.0:
            self._rejected[text] = now
            self.get_logger().warning(f'ignoring bad command: {text}')

    # ------------------------------------------------------------------ simulation
    def motor_torque(self):
        """The torque applied now: zero without a fresh command, clipped to effort limits."""
        fresh = (self.command_time is not None
                 and time.monotonic() - self.command_time <= self.command_timeout)
        if not fresh:
            if self.command_time is not None and not self._warned_timeout:
                self.get_logger().warning(
                    f'no command for {self.command_timeout} s: applying zero torque')
                self._warned_timeout = True
            return np.zeros(self.model.n)
        tau = self.tau_command
        if self.saturate_effort:
            limit = self.model.effort_limits
            tau = np.clip(tau, -limit, limit)
        return tau

    def on_timer(self):
        if self.lockstep and not self.paused and not self._answered():
            if time.monotonic() - self.published_at < self.lockstep_timeout:
                return                  # wait (simulated time stands still) for the answer
            self.get_logger().warning(
                f'lockstep: no command answered the last state within '
                f'{self.lockstep_timeout} s; stepping on', throttle_duration_sec=1.0)
        self.tau_applied = self.motor_torque()
        if not self.paused:
            try:
                self.sim.advance(self.tau_applied, self.h, self.substeps)
            except (FloatingPointError, ManipDynamicsError) as err:
                # diverged, or the core refused a state (overflow): never let it kill the node
                self.get_logger().error(f'simulation step failed: {err}; '
                                        'resetting to the initial state')
                self.sim.reset(self._initial('initial_positions'),
                               self._initial('initial_velocities'))
        msg = JointState()
        if self.lockstep:
            # One period per message: stamps follow simulated time, not the wall clock.
            self.stamp_ns += round(1e9 / self.publish_rate)
            msg.header.stamp = Time(nanoseconds=self.stamp_ns).to_msg()
        else:
            msg.header.stamp = self.get_clock().now().to_msg()
        msg.name = self.joint_names
        msg.position = self.sim.q.tolist()
        msg.velocity = self.sim.qd.tolist()
        msg.effort = np.asarray(self.tau_applied, dtype=float).tolist()
        self.joint_state_pub.publish(msg)
        self.published_stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        self.published_at = time.monotonic()

    def _answered(self):
        """Lockstep: did a command answer the last published state?

        A JointState command with a stamp answers the state with that stamp (the
        computed_torque_controller copies it); an unstamped or Float64MultiArray command
        answers whatever state was published before it arrived.
        """
        if self.published_at is None or self.command_time is None:
            return self.published_at is None
        if self.command_stamp is not None:
            return self.command_stamp >= self.published_stamp
        return self.command_time >= self.published_at


def main(args=None) -> int:
    return run_node(ArmSimulator, args)


if __name__ == '__main__':
    raise SystemExit(main())
