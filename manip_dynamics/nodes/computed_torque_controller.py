"""computed_torque_controller: an example joint-space controller fed by the dynamics node.

It owns NO robot model: every control step uses the terms the dynamics node published for
the latest joint state on its ``~/dynamics`` topic (manip_dynamics_interfaces/Dynamics),

    mode off:              tau = 0
    mode gravity:          tau = g(q)
    mode computed_torque:  tau = M(q) (qdd_d + Kd (qd_d - qd) + Kp (q_d - q)) + C(q, qd) qd + g(q)
    mode excitation:       the same law on the trajectory in ``excitation_file`` (a
                           core/identification/excitation.py FourierTrajectory JSON file), reached
                           from the measured position by a quintic lead-in and held at its end
                           (manip_dynamics.rules.excitation_player)

With a perfect model the closed loop is e'' + Kd e' + Kp e = 0 for every joint (e = q_d - q):
Kp = wn^2, Kd = 2 zeta wn. The defaults (Kp = 100 s^-2, Kd = 20 s^-1) are critically damped
with wn = 10 rad/s, slow enough for a 100 Hz loop with a few ms of transport delay.

Reference (per joint j, t since the mode or the trajectory parameters last changed):

    q_d(t) = home_j + amplitude_j (1 - cos(2 pi frequency_j t))

(computed_torque mode) so the reference starts at rest at ``home`` (no velocity step) and swings between home and
home + 2 amplitude. ``amplitude: [0.0]`` holds ``home``; an empty ``home`` means "the
position measured when tracking (re)starts". Per-joint parameters take 1 value (all joints)
or one per joint in the order of the Dynamics message's ``joint_names``.

Topics (relative names):
    dynamics_node/dynamics  in   manip_dynamics_interfaces/Dynamics (remap ``dynamics`` if the
                                 dynamics node has another name/namespace)
    effort_command          out  sensor_msgs/JointState (name + effort): one per Dynamics
                                 message, what arm_simulator subscribes to
    ~/reference             out  sensor_msgs/JointState in computed_torque mode: q_d, qd_d and
                                 the commanded torque, stamped with the state it answers
The controller is event-driven: no Dynamics message, no command (the simulator then falls
back to zero torque after its command_timeout).
"""
from __future__ import annotations

import math

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import JointState

from manip_dynamics_interfaces.msg import Dynamics
from manip_dynamics.core.errors import InputError
from manip_dynamics.nodes.runner import declare_table, run_node, table_values
from manip_dynamics.rules.excitation_player import ExcitationPlayer, load_trajectory
from manip_dynamics.rules.parameter_table import ParameterValueError, ParamSpec, check_table

MODES = ('off', 'gravity', 'computed_torque', 'excitation')
TRAJECTORY = ('home', 'amplitude', 'frequency', 'mode', 'excitation_file')

PARAMETERS = (
    ParamSpec('mode', 'string', 'gravity',
              'off (zero torque), gravity (tau = g), computed_torque (sinusoidal reference) '
              'or excitation (plays excitation_file).', choices=MODES),
    ParamSpec('kp', 'double_array', [100.0],
              'Position gain Kp per joint (1/s^2, acceleration units); 1 value: all.',
              low=0.0, min_items=1, per_joint='one_or_each'),
    ParamSpec('kd', 'double_array', [20.0],
              'Velocity gain Kd per joint (1/s); 1 value: all.',
              low=0.0, min_items=1, per_joint='one_or_each'),
    ParamSpec('home', 'double_array', [],
              'Centre pose of the reference (rad, m); empty: the position when tracking starts.',
              'or empty', per_joint='one_or_each'),
    ParamSpec('amplitude', 'double_array', [0.0],
              'Reference amplitude A per joint (rad, m): q_d = home + A (1 - cos(2 pi f t)); '
              '0 holds home.', low=0.0, min_items=1, per_joint='one_or_each'),
    ParamSpec('frequency', 'double_array', [0.25],
              'Reference frequency f per joint (Hz).', low=0.0, min_items=1,
              per_joint='one_or_each'),
    ParamSpec('excitation_file', 'string', '',
              'Excitation trajectory played in mode excitation (JSON of '
              'manip_dynamics.core.identification.excitation.FourierTrajectory.save).',
              'a readable trajectory file, or empty'),
)
SPECS = {spec.name: spec for spec in PARAMETERS}


def reference(t, home, amplitude, frequency):
    """(q_d, qd_d, qdd_d) at time t of q_d = home + A (1 - cos(w t)), w = 2 pi f."""
    w = 2.0 * math.pi * frequency
    c, s = np.cos(w * t), np.sin(w * t)
    return home + amplitude * (1.0 - c), amplitude * w * s, amplitude * w * w * c


def control_torque(mode, dyn, kp, kd, q_d, qd_d, qdd_d):
    """The control law of the module docstring; dyn holds q, qd, M (n x n), c, g arrays."""
    if mode == 'off':
        return np.zeros_like(dyn['g'])
    if mode == 'gravity':
        return dyn['g'].copy()
    e, e_dot = q_d - dyn['q'], qd_d - dyn['qd']
    return dyn['M'] @ (qdd_d + kd * e_dot + kp * e) + dyn['c'] + dyn['g']


def unpack(msg: Dynamics):
    """Dynamics message -> dict of numpy arrays; ValueError if the sizes disagree."""
    n = len(msg.joint_names)
    sizes = {'position': len(msg.position), 'velocity': len(msg.velocity),
             'gravity': len(msg.gravity), 'coriolis': len(msg.coriolis)}
    bad = {k: v for k, v in sizes.items() if v != n}
    if n == 0 or bad or len(msg.mass_matrix) != n * n:
        raise ValueError(f'inconsistent Dynamics message: {n} joints, sizes {sizes}, '
                         f'mass_matrix {len(msg.mass_matrix)}')
    dyn = {'q': np.asarray(msg.position), 'qd': np.asarray(msg.velocity),
           'g': np.asarray(msg.gravity), 'c': np.asarray(msg.coriolis),
           'M': np.asarray(msg.mass_matrix).reshape(n, n)}
    if not all(np.all(np.isfinite(v)) for v in dyn.values()):
        raise ValueError('non-finite values in Dynamics message')
    return dyn


class ComputedTorqueController(Node):
    def __init__(self):
        super().__init__('computed_torque_controller')

        declare_table(self, PARAMETERS)      # raises ParameterValueError naming a bad one
        self.add_on_set_parameters_callback(self.on_set_parameters)
        self.add_post_set_parameters_callback(self.on_parameters_set)

        self.t0 = None            # trajectory start (s, message stamp); None: restart at next state
        self.home_latched = None
        self.player = None        # ExcitationPlayer of the current excitation run
        self._new_trajectory = {}  # on-set callback -> post-set callback
        path = self.get_parameter('excitation_file').value
        self.trajectory = load_trajectory(path) if path else None
        self.command_pub = self.create_publisher(JointState, 'effort_command', 10)
        self.reference_pub = self.create_publisher(JointState, '~/reference', 10)
        self.create_subscription(Dynamics, 'dynamics_node/dynamics', self.on_dynamics, 10)
        self.get_logger().info(f'mode {self.get_parameter("mode").value}; waiting for Dynamics')

    # ------------------------------------------------------------------ parameters
    def on_set_parameters(self, params):
        """Refuse values outside the table's bounds, naming the parameter."""
        try:
            check_table(SPECS, {p.name: p.value for p in params})
            self._new_trajectory = {p.name: load_trajectory(p.value) if p.value else None
                                    for p in params if p.name == 'excitation_file'}
        except (ParameterValueError, InputError) as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def on_parameters_set(self, params):
        if any(p.name == 'excitation_file' for p in params):
            self.trajectory = self._new_trajectory['excitation_file']
        if any(p.name in TRAJECTORY for p in params):
            self.t0 = None          # restart the reference from the next measured state
            self.home_latched = None
            self.player = None

    # ------------------------------------------------------------------ control
    def on_dynamics(self, msg: Dynamics):
        try:
            dyn = unpack(msg)
        except ValueError as err:
            self.get_logger().warning(f'ignoring Dynamics message: {err}', throttle_duration_sec=1.0)
            return
        mode = self.get_parameter('mode').value
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        q_d = qd_d = qdd_d = None
        if mode == 'excitation':
            mode, kp, kd, q_d, qd_d, qdd_d = self._excitation(msg, dyn, t)
        elif mode == 'computed_torque':
            joints = list(msg.joint_names)
            values = table_values(self, PARAMETERS)
            try:        # per-joint lengths are judged here, where the joints are known
                kp, kd, amplitude, frequency, home = (
                    np.asarray(SPECS[name].joint_values(values[name], joints))
                    for name in ('kp', 'kd', 'amplitude', 'frequency', 'home'))
            except ParameterValueError as err:
                # Never leave the arm unpowered because of a typo: hold it against gravity.
                self.get_logger().error(f'{err}; commanding gravity compensation only',
                                        throttle_duration_sec=1.0)
                mode = 'gravity'
            else:
                if self.t0 is None:
                    self.t0 = t
                    self.home_latched = dyn['q'].copy() if home.size == 0 else home
                    self.get_logger().info(
                        f'tracking from home {np.round(self.home_latched, 4).tolist()}')
                q_d, qd_d, qdd_d = reference(t - self.t0, self.home_latched, amplitude,
                                             frequency)
        tau = (control_torque(mode, dyn, kp, kd, q_d, qd_d, qdd_d)
               if q_d is not None else control_torque(mode, dyn, 0, 0, 0, 0, 0))

        command = JointState()
        command.header.stamp = msg.header.stamp
        command.name = list(msg.joint_names)
        command.effort = tau.tolist()
        self.command_pub.publish(command)
        if q_d is not None:
            ref = JointState()
            ref.header.stamp = msg.header.stamp
            ref.name = list(msg.joint_names)
            ref.position = np.asarray(q_d, dtype=float).tolist()
            ref.velocity = np.asarray(qd_d, dtype=float).tolist()
            ref.effort = tau.tolist()
            self.reference_pub.publish(ref)

    def _excitation(self, msg, dyn, t):
        """(mode, kp, kd, q_d, qd_d, qdd_d) of excitation mode at stamp t; mode 'gravity'
        and no reference (an error logged) if the gains or the trajectory do not fit."""
        values = table_values(self, PARAMETERS)
        try:
            kp, kd = (np.asarray(SPECS[name].joint_values(values[name], list(msg.joint_names)))
                      for name in ('kp', 'kd'))
            if self.trajectory is None:
                raise InputError('mode excitation needs the parameter excitation_file')
            if self.player is None or self.player.joint_names != tuple(msg.joint_names):
                self.player = ExcitationPlayer.start(self.trajectory, msg.joint_names, dyn['q'])
                self.t0 = t
                self.get_logger().info(
                    f'excitation: lead-in {self.player.lead_in:.2f} s, then '
                    f'{self.trajectory.duration:.2f} s of trajectory')
        except (ParameterValueError, ValueError, InputError) as err:
            self.get_logger().error(f'{err}; commanding gravity compensation only',
                                    throttle_duration_sec=1.0)
            return 'gravity', None, None, None, None, None
        return ('excitation', kp, kd) + tuple(self.player.reference(t - self.t0))


def main(args=None) -> int:
    return run_node(ComputedTorqueController, args, fatal=(ParameterValueError, InputError),
                    name='computed_torque_controller')


if __name__ == '__main__':
    raise SystemExit(main())
