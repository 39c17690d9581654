"""computed_torque_controller: an example joint-space controller fed by the dynamics node.

It owns NO robot model: every control step uses the terms the dynamics node published for
the latest joint state on its ``~/dynamics`` topic (manip_dynamics_interfaces/Dynamics),

    mode off:              tau = 0
    mode gravity:          tau = g(q)
    mode computed_torque:  tau = M(q) (qdd_d + Kd (qd_d - qd) + Kp (q_d - q)) + C(q, qd) qd + g(q)

With a perfect model the closed loop is e'' + Kd e' + Kp e = 0 for every joint (e = q_d - q):
Kp = wn^2, Kd = 2 zeta wn. The defaults (Kp = 100 s^-2, Kd = 20 s^-1) are critically damped
with wn = 10 rad/s, slow enough for a 100 Hz loop with a few ms of transport delay.

Reference (per joint j, t since the mode or the trajectory parameters last changed):

    q_d(t) = home_j + amplitude_j (1 - cos(2 pi frequency_j t))

so the reference starts at rest at ``home`` (no velocity step) and swings between home and
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
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from manip_dynamics_interfaces.msg import Dynamics
from manip_dynamics.nodes.runner import array_parameter, run_node

MODES = ('off', 'gravity', 'computed_torque')
PER_JOINT = ('kp', 'kd', 'amplitude', 'frequency', 'home')
TRAJECTORY = ('home', 'amplitude', 'frequency', 'mode')


def per_joint(values, n, name):
    """Broadcast a 1-element list, accept an n-element list, else ValueError naming ``name``."""
    arr = np.asarray(values, dtype=float)
    if arr.shape not in ((1,), (n,)):
        raise ValueError(f'{name}: expected 1 or {n} values, got {len(arr)}')
    return np.broadcast_to(arr, (n,))


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

        def d(text):
            return ParameterDescriptor(description=text)
        self.declare_parameter('mode', 'gravity', d(
            'off (zero torque), gravity (tau = g) or computed_torque.'))
        self.declare_parameter('kp', [100.0], d(
            'Position gain Kp per joint (1/s^2, acceleration units), >= 0; 1 value: all.'))
        self.declare_parameter('kd', [20.0], d(
            'Velocity gain Kd per joint (1/s), >= 0; 1 value: all.'))
        self.declare_parameter('home', Parameter.Type.DOUBLE_ARRAY, d(
            'Centre pose of the reference (rad, m); empty: the position when tracking starts.'))
        self.declare_parameter('amplitude', [0.0], d(
            'Reference amplitude A per joint (rad, m): q_d = home + A (1 - cos(2 pi f t)); '
            '0 holds home.'))
        self.declare_parameter('frequency', [0.25], d(
            'Reference frequency f per joint (Hz), >= 0.'))
        for p in self._parameters_now():
            reason = self._check([p])
            if reason:
                raise ValueError(reason)
        self.add_on_set_parameters_callback(self.on_set_parameters)
        self.add_post_set_parameters_callback(self.on_parameters_set)

        self.t0 = None            # trajectory start (s, message stamp); None: restart at next state
        self.home_latched = None
        self.command_pub = self.create_publisher(JointState, 'effort_command', 10)
        self.reference_pub = self.create_publisher(JointState, '~/reference', 10)
        self.create_subscription(Dynamics, 'dynamics_node/dynamics', self.on_dynamics, 10)
        self.get_logger().info(f'mode {self.get_parameter("mode").value}; waiting for Dynamics')

    # ------------------------------------------------------------------ parameters
    def _parameters_now(self):
        out = []
        for name in ('mode',) + PER_JOINT:
            p = self.get_parameter_or(name, None)
            if p is not None and p.type_ != Parameter.Type.NOT_SET:
                out.append(p)
        return out

    def _check(self, params):
        for p in params:
            v = p.value
            if p.name == 'mode' and v not in MODES:
                return f'mode must be one of {MODES}, got {v!r}'
            if p.name in PER_JOINT and p.type_ != Parameter.Type.NOT_SET:
                arr = np.asarray(v if v is not None else [], dtype=float)
                if not np.all(np.isfinite(arr)):
                    return f'{p.name}: values must be finite, got {list(arr)}'
                if p.name != 'home' and (len(arr) == 0 or np.any(arr < 0)):
                    return f'{p.name}: need 1 or n values >= 0, got {list(arr)}'
        return ''

    def on_set_parameters(self, params):
        reason = self._check(params)
        return SetParametersResult(successful=not reason, reason=reason)

    def on_parameters_set(self, params):
        if any(p.name in TRAJECTORY for p in params):
            self.t0 = None          # restart the reference from the next measured state
            self.home_latched = None

    # ------------------------------------------------------------------ control
    def on_dynamics(self, msg: Dynamics):
        try:
            dyn = unpack(msg)
        except ValueError as err:
            self.get_logger().warning(f'ignoring Dynamics message: {err}', throttle_duration_sec=1.0)
            return
        n = len(dyn['q'])
        mode = self.get_parameter('mode').value
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        q_d = qd_d = qdd_d = None
        if mode == 'computed_torque':
            try:
                kp = per_joint(array_parameter(self, 'kp'), n, 'kp')
                kd = per_joint(array_parameter(self, 'kd'), n, 'kd')
                amplitude = per_joint(array_parameter(self, 'amplitude'), n, 'amplitude')
                frequency = per_joint(array_parameter(self, 'frequency'), n, 'frequency')
                home = array_parameter(self, 'home')
                home = per_joint(home, n, 'home') if home else None
            except ValueError as err:
                # Never leave the arm unpowered because of a typo: hold it against gravity.
                self.get_logger().error(f'{err} ({n} joints: {", ".join(msg.joint_names)}); '
                                        'commanding gravity compensation only',
                                        throttle_duration_sec=1.0)
                mode = 'gravity'
            else:
                if self.t0 is None:
                    self.t0 = t
                    self.home_latched = dyn['q'].copy() if home is None else home.copy()
                    self.get_logger().info(
                        f'tracking from home {np.round(self.home_latched, 4).tolist()}')
                q_d, qd_d, qdd_d = reference(t - self.t0, self.home_latched, amplitude,
                                             frequency)
        tau = (control_torque(mode, dyn, kp, kd, q_d, qd_d, qdd_d)
               if mode == 'computed_torque' else control_torque(mode, dyn, 0, 0, 0, 0, 0))

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


def main(args=None) -> int:
    return run_node(ComputedTorqueController, args)


if __name__ == '__main__':
    raise SystemExit(main())
