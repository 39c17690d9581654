"""Closed-loop demo (``make demo``): MuJoCo plant + dynamics node + computed-torque controller.

Three real ROS 2 processes talk over DDS on loopback (``ROS_AUTOMATIC_DISCOVERY_RANGE=
LOCALHOST``; ``ROS_DOMAIN_ID`` kept from the environment, else chosen from the process id):

    arm_simulator --joint_states, robot_description--> dynamics_node --~/dynamics-->
    computed_torque_controller --effort_command--> arm_simulator

The simulator's plant is MuJoCo compiled from the same URDF (joint limits, effort-limited
motors, capsules on a floor); the controller's model is the dynamics node's (our core).
This process records the traffic and switches phases through parameter services (the
simulator's ``paused`` / ``initial_positions`` reset and friction, the controller's
``mode``):

    1. released  mode off: zero torque; the arm falls onto the floor and its joint limits
    2. gravity   tau = g(q) from our core holds the pose in MuJoCo: the drift measures our
                 g against an independent engine
    3. tracking  computed torque on a sinusoidal reference around the start pose
    4. friction  the same tracking with the plant's URDF damping and friction loss on,
                 which the controller's model does not know: it shows in the error

    5. pushed    (Panda) tracking; after 1 s ``arm_simulator/apply_wrench`` pushes the
                 flange for 1 s: the dynamics node's observer (``~/external_torques``,
                 ``~/contact``) against the truth topic
    6. obstacle  (Panda) computed torque drives the shoulder back: the upper arm runs into
                 a box behind it (the simulator's obstacle)

Phases 1-3, 5, 6 have damping and friction off in the plant. It prints a table, writes
``summary.json``, ``closed_loop.png`` (angles, errors, torques per phase),
``inertia_ellipsoids.png`` (the tip's translational effective inertia along the tracked
motion, from ``~/dynamics``), ``contact.png`` (true against estimated external joint
torques of phases 5-6) and, where offscreen rendering works (EGL, see
docs/simulation.md), ``arm_phases.png`` and ``arm_demo.gif`` (the arm itself, rendered by
MuJoCo from the recorded states) into ``demo_output/``.

Run: ``python -m manip_dynamics.demo [--robot panda|planar_2r] [--output demo_output]
[--no-render]``.

Your arm: ``--urdf PATH`` (URDF or xacro; ``--xacro-arg name:=value``, ``--package-path
DIR`` for ``$(find pkg)`` and ``package://``; ``--tip LINK``): the same phases, with the
start pose, reference, gains, observer thresholds, push, obstacle, floor and camera chosen
from the model (manip_dynamics/demo_scenario.py); a phase the arm cannot play is skipped
and the reason printed. The pictures show the URDF's visuals when all are found, else the
capsules (one line says which). ``--time-scale`` shortens every phase,
``--real-time-factor`` speeds up the lockstep simulator, ``--no-plots`` writes no figure.

``summary.json`` (stable keys; rad, s, N*m, ms): ``robot``, ``joint_names``, ``tip_frame``;
per played phase ``released`` / ``gravity`` / ``tracking`` / ``friction``:
``max_deviation_rad`` (max |q - q0|: the drift of the gravity hold), ``duration_s``,
``peak_torque``; ``tracking`` and ``friction`` also ``rms_error_rad``, ``max_error_rad``,
``rms_error_per_joint``; ``contact`` (when a contact phase was played): ``tracking``
(``false_detections``, ``peak_residual``), ``pushed`` / ``obstacle`` (``detection_ms``,
``isolated_link``, ``true_link``, ``error_vs_filtered``, ``error_vs_truth``). With
``--urdf`` also ``urdf``, ``skipped`` {phase: why} and ``scenario`` (the chosen ``kp``,
``kd``, ``thresholds``, ``floor_height``, ``collision_radius``, ``reach_m``, push and box).
``safety`` (tracking played): ISO/TS 15066 for hands and fingers along the tracked motion,
with ``safety_along_motion.png`` (keys: manip_dynamics/demo_safety.py).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

# Start pose, tracking reference (rad) and camera per robot. Panda: Franka's "ready" pose.
# The planar 2R hangs from its root at z = 0: its floor is put 1.2 m below.
SCENARIOS = {
    'panda': dict(
        q0=[0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785],
        amplitude=[0.25, 0.2, 0.25, 0.3, 0.3, 0.3, 0.4],
        frequency=[0.3, 0.35, 0.3, 0.4, 0.45, 0.4, 0.5],
        floor_height=0.0, camera=dict(lookat=(0.15, 0.0, 0.5), distance=2.2, azimuth=135.0,
                                       elevation=-15.0),
        # contact phases: a push at a point of the flange link (off joint 7's axis) while
        # tracking; an obstacle box behind the upper arm, which the arm runs into when
        # commanded from start_offset to home_offset (added to q0)
        contact=dict(link='panda_link7', force=[20.0, -10.0, 6.0], point=[0.03, 0.03, 0.05],
                     push_at=1.0, push_for=1.0,
                     obstacle_size=[0.04, 0.06, 0.04], obstacle_position=[-0.195, 0.0, 0.36],
                     start_offset=[0.0, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0],
                     home_offset=[0.0, -0.5, 0.0, 0.0, 0.0, 0.0, 0.0]),
    ),
    'planar_2r': dict(
        q0=[0.3, 0.6],
        amplitude=[0.3, 0.4],
        frequency=[0.3, 0.4],
        floor_height=-1.2, camera=dict(lookat=(0.2, 0.0, -0.3), distance=2.6, azimuth=90.0,
                                       elevation=-5.0),
    ),
}
# (name, controller mode, seconds of simulated time, plant damping and friction on)
PHASES = (('released', 'off', 3.0, False), ('gravity', 'gravity', 4.0, False),
          ('tracking', 'computed_torque', 6.0, False),
          ('friction', 'computed_torque', 6.0, True))
# contact phases (robots whose scenario has 'contact'): tracking and pushed, then the
# arm commanded into the obstacle
CONTACT_PHASES = (('pushed', 'computed_torque', 2.5, False),
                  ('obstacle', 'computed_torque', 2.0, False))
CONTACT_PHASE_NAMES = tuple(p[0] for p in CONTACT_PHASES)
TRACKED = ('tracking', 'friction')
TITLES = {'released': '1. released (tau = 0)', 'gravity': '2. gravity compensation',
          'tracking': '3. computed-torque tracking',
          'friction': '4. tracking, plant friction on',
          'pushed': '5. tracking, pushed at the flange',
          'obstacle': '6. upper arm into the obstacle'}
# the dynamics node's observer in the demo: the simulator publishes the torque held over
# the last period (effort timing "held"); K_O = 100 1/s; thresholds 0.2 N*m per joint
OBSERVER = {'observer.effort_timing': 'held', 'observer.gains': '[100.0]',
            'observer.enter_thresholds': '[0.2]'}
K_O = 100.0


def require_parts(prog, *extras):
    """Exit with one line (status 2) unless ROS 2 and the optional packages ``extras``
    (top-level names in manip_dynamics.core.extras.EXTRAS) are installed; imports none."""
    from manip_dynamics.core.errors import MissingDependencyError
    from manip_dynamics.core.extras import require_extras, require_ros
    try:
        require_ros(prog)
        require_extras(prog, *extras)
    except MissingDependencyError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


def _ros_environment():
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ.pop('ROS_LOCALHOST_ONLY', None)
    if not os.environ.get('ROS_DOMAIN_ID', '').strip():
        os.environ['ROS_DOMAIN_ID'] = str(os.getpid() % 100 + 1)


def _start(module, params, log_dir, name):
    cmd = [sys.executable, '-u', '-m', module, '--ros-args']
    for key, value in params.items():
        cmd += ['-p', f'{key}:={value}']
    log = open(log_dir / f'{name}.log', 'wb')
    env = dict(os.environ, PYTHONUNBUFFERED='1', RCUTILS_COLORIZED_OUTPUT='0')
    root = str(Path(__file__).resolve().parent.parent)
    env['PYTHONPATH'] = os.pathsep.join(p for p in (root, env.get('PYTHONPATH')) if p)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            env=env)
    proc.demo_name, proc.demo_log = name, log
    return proc


def _stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5.0)
    proc.demo_log.close()


def _fmt(values):
    return '[' + ', '.join(f'{v:.3f}' for v in values) + ']'


class Recorder:
    """An rclpy node (own context, background executor) that records and sets parameters."""

    def __init__(self):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.parameter_client import AsyncParameterClient
        from sensor_msgs.msg import JointState

        from std_srvs.srv import Trigger

        from manip_dynamics_interfaces.msg import Contact, Dynamics
        from manip_dynamics_interfaces.srv import ApplyWrench

        self.context = rclpy.Context()
        rclpy.init(context=self.context, args=[])   # not sys.argv: --xacro-arg a:=b
        self.node = rclpy.create_node('demo_recorder', context=self.context)
        self.lock = threading.Lock()
        self.phase = None
        self.joint_states, self.dynamics, self.reference, self.truth = [], [], [], []
        self.residual, self.contact = [], []     # ~/external_torques, ~/contact
        self.node.create_subscription(JointState, 'joint_states', self._on_state, 100)
        self.node.create_subscription(JointState, 'arm_simulator/external_torques',
                                      self._on_truth, 100)
        self.node.create_subscription(Dynamics, 'dynamics_node/dynamics', self._on_dynamics, 100)
        self.node.create_subscription(JointState, 'computed_torque_controller/reference',
                                      self._on_reference, 100)
        self.node.create_subscription(JointState, 'dynamics_node/external_torques',
                                      self._on_residual, 100)
        self.node.create_subscription(Contact, 'dynamics_node/contact', self._on_contact, 100)
        self.reset_client = self.node.create_client(Trigger, 'dynamics_node/reset_observer')
        self.wrench_client = self.node.create_client(ApplyWrench, 'arm_simulator/apply_wrench')
        self.Trigger, self.ApplyWrench = Trigger, ApplyWrench
        self.sim_params = AsyncParameterClient(self.node, 'arm_simulator')
        self.ctl_params = AsyncParameterClient(self.node, 'computed_torque_controller')
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except Exception:   # context shut down while spinning: the demo is ending
            pass

    @staticmethod
    def _stamp(msg):
        return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec

    def _on_state(self, msg):
        with self.lock:
            self.joint_states.append((self.phase, self._stamp(msg), np.array(msg.position),
                                      np.array(msg.velocity), np.array(msg.effort)))

    def _on_truth(self, msg):
        with self.lock:
            self.truth.append((self.phase, self._stamp(msg), np.array(msg.effort)))

    def _on_dynamics(self, msg):
        with self.lock:
            self.dynamics.append((self.phase, self._stamp(msg), np.array(msg.position),
                                  np.array(msg.inverse_effective_inertia).reshape(6, 6),
                                  list(msg.joint_names)))

    def _on_residual(self, msg):
        with self.lock:
            self.residual.append((self.phase, self._stamp(msg), np.array(msg.effort)))

    def _on_contact(self, msg):
        with self.lock:
            self.contact.append((self.phase, self._stamp(msg), bool(msg.in_contact),
                                 msg.isolated_link, float(msg.detection_time)))

    def call(self, client, request, timeout=10.0, resend_every=2.0):
        """A service call from this thread (the executor spins in the background).

        ``wait_for_service`` means the client matched the server, not that the server
        has matched the client's response reader; until it has, rmw drops the response.
        So the request goes again every ``resend_every`` s (None: once, for a service
        that is not idempotent; create its client early)."""
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f'service {client.srv_name} not available')
        return self._resending(lambda: client.call_async(request), timeout, resend_every,
                               client.srv_name)

    def _resending(self, send, timeout, resend_every, what):
        """send() -> future, again every ``resend_every`` s until one is done; its result."""
        deadline = time.monotonic() + timeout
        futures = [send()]
        resend_at = deadline if resend_every is None else time.monotonic() + resend_every
        while not any(f.done() for f in futures):
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(f'{what} did not answer within {timeout} s')
            if now >= resend_at:
                futures.append(send())
                resend_at = now + resend_every
            time.sleep(0.02)
        for f in futures:
            if not f.done():
                f.cancel()
        return next(f for f in futures if f.done()).result()

    def _on_reference(self, msg):
        with self.lock:
            self.reference.append((self.phase, self._stamp(msg), np.array(msg.position),
                                   np.array(msg.effort)))

    def set_parameters(self, client, values, timeout=10.0, resend_every=None):
        from rclpy.parameter import Parameter
        params = [Parameter(k, value=v) for k, v in values.items()]
        if not client.wait_for_services(timeout_sec=timeout):
            raise TimeoutError('parameter services not available')
        # by default sent once: setting a trajectory parameter again restarts the
        # controller's reference (not idempotent); the demo's parameter clients exist from
        # the start, so the nodes have long matched them (see call)
        result = self._resending(lambda: client.set_parameters_atomically(params), timeout,
                                 resend_every, f'setting {values}').result
        if not result.successful:
            raise RuntimeError(f'parameters {values} refused: {result.reason}')

    def wait_until_running(self, procs, log_dir, timeout):
        """Until the controller's inputs flow (the first calls JIT-compile the core);
        RuntimeError naming the node and its log if one of ``procs`` exited."""
        self.wait(lambda: len(self.dynamics) > 5 or any(p.poll() is not None for p in procs),
                  timeout, 'the first Dynamics messages')
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f'{p.demo_name} exited with code {p.returncode}; '
                                   f'see {log_dir / (p.demo_name + ".log")}')

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f'timed out waiting for {what}')
            time.sleep(0.02)

    def close(self):
        import rclpy
        rclpy.shutdown(context=self.context)
        self.thread.join(2.0)
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()


def _phase_parameters(q0, model, friction):
    """Simulator parameters of a phase start: paused at q0, plant friction on or off."""
    viscous = model.viscous if friction else np.zeros(model.n)
    coulomb = model.coulomb if friction else np.zeros(model.n)
    return {'paused': True, 'initial_positions': q0,
            'viscous_friction': [float(x) for x in viscous],
            'coulomb_friction': [float(x) for x in coulomb]}


def phases_of(scenario, scale=1.0):
    """The phases the demo plays for a scenario (seconds times ``scale``): the contact
    ones only with 'contact' (the push with a 'force', the obstacle with an
    'obstacle_size'), none the scenario's 'skipped' names."""
    contact = scenario.get('contact', {})
    have = {'pushed': 'force' in contact, 'obstacle': 'obstacle_size' in contact}
    return tuple((name, mode, seconds * scale, friction)
                 for name, mode, seconds, friction in PHASES + CONTACT_PHASES
                 if have.get(name, True) and name not in scenario.get('skipped', {}))


def played(scenario, names):
    """The names of ``names`` the demo plays for ``scenario``."""
    keep = {p[0] for p in phases_of(scenario)}
    return [n for n in names if n in keep]


def run_phases(rec, scenario, procs, model, scale=1.0):
    q0 = [float(v) for v in scenario['q0']]
    phases = phases_of(scenario, scale)

    def alive():
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f'{p.demo_name} exited with code {p.returncode}')

    def n_states():
        with rec.lock:
            return len(rec.joint_states)

    for name, mode, seconds, friction in phases:
        alive()
        contact = scenario.get('contact', {})
        start_q = q0
        if name == 'obstacle':
            start_q = [a + b for a, b in zip(q0, contact['start_offset'])]
        # Freeze the arm at the start pose, let the loop settle on it, then release.
        rec.set_parameters(rec.sim_params, _phase_parameters(start_q, model, friction))
        rec.set_parameters(rec.ctl_params, {'mode': 'off' if mode == 'off' else 'gravity'})
        time.sleep(0.3)
        rec.phase = name
        rec.set_parameters(rec.sim_params, {'paused': False})
        if mode == 'computed_torque':
            # Set after the release so the reference clock starts with the motion.
            rec.set_parameters(rec.ctl_params, _reference(name, q0, scenario))
        start = n_states()
        # The paused arm was held by the pause, which the observer saw as external:
        # reset it once states of the released arm flow (not on a paused state still
        # in the pipeline).
        rec.wait(lambda: n_states() - start >= 5, 30, 'the released arm')
        rec.call(rec.reset_client, rec.Trigger.Request())
        if name == 'pushed':
            rec.wait(lambda: n_states() - start >= int(contact['push_at'] * scale * 100), 30,
                     'the start of the push')
            rec.call(rec.wrench_client, rec.ApplyWrench.Request(
                link=contact['link'], force=contact['force'], torque=[0.0] * 3,
                point=contact['point'], duration=contact['push_for'] * scale),
                resend_every=None)
        rec.wait(lambda: n_states() - start >= int(seconds * 100), seconds * 4 + 10,
                 f'{seconds} s of joint_states in phase {name}')
        alive()
        rec.phase = None
    rec.set_parameters(rec.ctl_params, {'mode': 'gravity'})


def _reference(name, q0, scenario):
    """The controller's parameters of a computed-torque phase. An arm of --urdf tracks
    with its scenario's gains and steps into the obstacle with the Panda's (kp 100, kd 20:
    the step's torque M kp dq stays within small arms' effort limits)."""
    gains = {}
    if 'kp' in scenario:
        gains = ({'kp': [100.0], 'kd': [20.0]} if name == 'obstacle' else
                 {'kp': [scenario['kp']], 'kd': [scenario['kd']]})
    if name == 'obstacle':
        home = [a + b for a, b in zip(q0, scenario['contact']['home_offset'])]
        return {'home': home, 'amplitude': [0.0], 'mode': 'computed_torque', **gains}
    return {'home': q0, 'amplitude': [float(a) for a in scenario['amplitude']],
            'frequency': [float(f) for f in scenario['frequency']], 'mode': 'computed_torque',
            **gains}


def _phase_numbers(rows, truth, model, q0, tip):
    """Per-phase statistics of the recorded joint_states rows (phase, t, q, qd, tau)."""
    t = np.array([r[1] for r in rows])
    q, qd, tau = (np.array([r[k] for r in rows]) for k in (2, 3, 4))
    dev = np.abs(q - q0)
    tip_z = np.array([model.frame_pose(qi, tip)[2, 3] for qi in q])
    overshoot = np.maximum(model.position_lower - q, q - model.position_upper).max()
    return dict(
        duration_s=float(t[-1] - t[0]), samples=len(t),
        max_deviation_rad=float(dev.max()),
        max_deviation_joint=model.joint_names[int(np.argmax(dev.max(axis=0)))],
        final_deviation_rad=float(dev[-1].max()),
        final_speed_rad_s=float(np.abs(qd[-1]).max()),
        limit_overshoot_rad=float(max(overshoot, 0.0)),
        tip_drop_m=float(tip_z[0] - tip_z.min()),
        peak_torque=[float(x) for x in np.abs(tau).max(axis=0)],
        peak_external_torque=float(max((np.abs(e).max() for e in truth), default=0.0)),
    ), dict(t=t - t[0], q=q, tau=tau, err=q - q0)


def _tracking_numbers(states, refs, name):
    """Reference (stamped with the state it answered) minus that state, per sample."""
    by_stamp = {s[1]: s[2] for s in states if s[0] == name}
    pairs = [(r[1], r[2] - by_stamp[r[1]]) for r in refs if r[0] == name and r[1] in by_stamp]
    err = np.array([p[1] for p in pairs])
    t0 = min(s[1] for s in states if s[0] == name)
    return dict(
        error_samples=len(pairs),
        rms_error_rad=float(np.sqrt(np.mean(err ** 2))),
        max_error_rad=float(np.abs(err).max()),
        rms_error_per_joint=[float(x) for x in np.sqrt(np.mean(err ** 2, axis=0))],
    ), dict(t_err=np.array([p[0] for p in pairs]) - t0, err=err)


def analyse(rec, model, scenario, tip):
    q0 = np.array(scenario['q0'])
    with rec.lock:
        states, refs, dyns = list(rec.joint_states), list(rec.reference), list(rec.dynamics)
        truth = list(rec.truth)
    out, series = {}, {}
    for name in played(scenario, [p[0] for p in PHASES]):
        rows = [s for s in states if s[0] == name]
        out[name], series[name] = _phase_numbers(
            rows, [e for p, _, e in truth if p == name], model, q0, tip)
    for name in played(scenario, TRACKED):
        numbers, curves = _tracking_numbers(states, refs, name)
        out[name].update(numbers)
        series[name].update(curves)
    tracked = [d for d in dyns if d[0] == 'tracking']
    return out, series, tracked


def _by_phase(rows, name):
    """{stamp: row} of one phase's rows (phase, stamp, ...)."""
    return {r[1]: r for r in rows if r[0] == name}


def _filtered(t, truth, gain=K_O):
    """truth through the observer's first-order response dr/dt = K_O (truth - r)."""
    out = np.zeros_like(truth)
    for k in range(1, len(t)):
        a = np.exp(-gain * (t[k] - t[k - 1]))
        out[k] = a * out[k - 1] + (1 - a) * 0.5 * (truth[k - 1] + truth[k])
    return out


def contact_series(rec, name):
    """t (s from the observer's reset), truth, r (N, n) and the Contact rows of a phase,
    on the stamps present in all three."""
    with rec.lock:
        res = _by_phase(rec.residual, name)
        truth = {r[1]: r for r in rec.truth}      # (tagged by arrival: match by stamp)
        contact = {r[1]: r for r in rec.contact}
    stamps = sorted(set(truth) & set(res) & set(contact))
    # start at the observer's reset: its first output is the only sample with r = 0
    first = max(i for i, st in enumerate(stamps) if not np.any(res[st][2]))
    stamps = stamps[first:]
    return dict(stamp=np.array(stamps), t=np.array(stamps) - stamps[0],
                truth=np.array([truth[s][2] for s in stamps]),
                r=np.array([res[s][2] for s in stamps]),
                contact=[contact[s] for s in stamps])


def contact_numbers(rec, model, scenario, time_scale=1.0):
    """Per contact phase: detection delay, isolated vs true link, estimation error; for the
    contact-free tracking phase: false detections and the peak |r|."""
    from manip_dynamics.core.contact import arm_topology
    joint_link = arm_topology(model).joint_link
    out, series = {}, {}
    free = contact_series(rec, 'tracking')
    out['tracking'] = dict(samples=len(free['t']), peak_residual=float(np.abs(free['r']).max()),
                           false_detections=int(sum(c[2] for c in free['contact'])))
    for name in played(scenario, CONTACT_PHASE_NAMES):
        s = series[name] = contact_series(rec, name)
        hit = np.abs(s['truth']).max(axis=1) > 0
        k0 = int(np.argmax(hit)) - 1                 # the last sample before tau_ext != 0
        kd = next(k for k in range(k0 + 1, len(s['t'])) if s['contact'][k][2])
        settled = min(kd + int(np.ceil(3 / K_O * 100)), len(s['t']) - 1)
        loaded = np.flatnonzero(np.abs(s['truth'][k0 + 1:]).max(axis=0) > 0)
        if name == 'pushed':
            steady = np.arange(k0 + int(np.ceil(5 / K_O * 100)),
                               k0 + int(scenario['contact']['push_for'] * time_scale * 100))
        else:                                        # resting on the box: the last 0.5 s
            steady = np.arange(len(s['t']) - 50, len(s['t']))
        scale = np.abs(s['truth'][steady]).max()
        ideal = _filtered(s['t'], s['truth'])
        out[name] = dict(
            onset_s=float(s['t'][k0]), detection_ms=1e3 * (s['contact'][kd][4] - s['stamp'][k0]),
            isolated_at_detection=s['contact'][kd][3], isolated_link=s['contact'][settled][3],
            true_link=joint_link[loaded[-1]], peak_truth=float(scale),
            error_vs_filtered=float(np.abs(s['r'][steady] - ideal[steady]).max() / scale),
            error_vs_truth=float(np.abs(s['r'][steady] - s['truth'][steady]).max() / scale),
            detection_index=kd)
    return out, series


def plot_contact(series, numbers, names, path):
    """True (dashed) against estimated (solid) external joint torques of the contact
    phases, one colour per joint, the detection marked; below, r - tau_ext."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    shown = [name for name in CONTACT_PHASE_NAMES if name in numbers]
    fig, axes = plt.subplots(2, len(shown), figsize=(16, 8), sharex='col', squeeze=False)
    colors = plt.cm.tab10(np.arange(len(names)) % 10)
    for col, name in enumerate(shown):
        s, n = series[name], numbers[name]
        for j in range(len(names)):
            axes[0, col].plot(s['t'], s['truth'][:, j], '--', color=colors[j], lw=1.2)
            axes[0, col].plot(s['t'], s['r'][:, j], '-', color=colors[j], lw=1.0,
                              label=names[j])
            axes[1, col].plot(s['t'], s['r'][:, j] - s['truth'][:, j], color=colors[j])
        td = s['t'][n['detection_index']]
        for ax in axes[:, col]:
            ax.axvline(td, color='k', lw=0.8, ls=':')
            ax.grid(True, alpha=0.3)
        axes[0, col].set_title(f"{TITLES[name]}: detected {n['detection_ms']:.0f} ms after "
                               f"the onset, isolated {n['isolated_link']} (true "
                               f"{n['true_link']})", fontsize=9)
        axes[0, col].set_ylabel('tau_ext (N*m): true dashed, estimated r solid')
        axes[1, col].set_ylabel('r - tau_ext (N*m)')
        axes[1, col].set_xlabel("time since the observer's reset, after the release (s)")
    axes[0, 0].legend(fontsize=7, loc='best')
    fig.suptitle(f'momentum observer of dynamics_node (K_O = {K_O:g} 1/s) against MuJoCo\'s '
                 'true external joint torques (arm_simulator/external_torques)')
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def save_recording(rec, path):
    """Raw traffic (stamps in s, arrays per message) for later inspection."""
    phases = [p[0] for p in PHASES + CONTACT_PHASES]
    with rec.lock:
        js, ref, dyn = list(rec.joint_states), list(rec.reference), list(rec.dynamics)
        truth = list(rec.truth)

    def phase_index(rows):
        return np.array([phases.index(r[0]) if r[0] in phases else -1 for r in rows])
    np.savez_compressed(
        path,
        phases=np.array(phases),
        joint_states_phase=phase_index(js), joint_states_stamp=np.array([r[1] for r in js]),
        joint_states_position=np.array([r[2] for r in js]),
        joint_states_velocity=np.array([r[3] for r in js]),
        joint_states_effort=np.array([r[4] for r in js]),
        external_torques_phase=phase_index(truth),
        external_torques_stamp=np.array([r[1] for r in truth]),
        external_torques=np.array([r[2] for r in truth]).reshape(len(truth), -1),
        reference_phase=phase_index(ref), reference_stamp=np.array([r[1] for r in ref]),
        reference_position=np.array([r[2] for r in ref]).reshape(len(ref), -1),
        reference_effort=np.array([r[3] for r in ref]).reshape(len(ref), -1),
        dynamics_phase=phase_index(dyn), dynamics_stamp=np.array([r[1] for r in dyn]))


def print_skipped_table(summary, names):
    """The table of a run with skipped hold / tracking phases: what ran, what did not."""
    print(f"\nclosed-loop demo: {summary['robot']} ({len(names)} joints)")
    for key in ('released', 'gravity', 'tracking', 'friction'):
        if key in summary:
            print(f"{key:<10} max |q-q0| {summary[key]['max_deviation_rad']:.3g} rad")
        else:
            print(f"{key:<10} skipped: {summary['skipped'][key]}")


def print_table(summary, names):
    if not all(k in summary for k in ('released', 'gravity', 'tracking', 'friction')):
        return print_skipped_table(summary, names)
    r, g, t, f = (summary[k] for k in ('released', 'gravity', 'tracking', 'friction'))
    print()
    print(f"closed-loop demo: {summary['robot']} ({len(names)} joints) on MuJoCo "
          f"{summary['mujoco_version']}, ROS_DOMAIN_ID={summary['ros_domain_id']}")
    print(f"{'phase':<10} {'controller':<16} {'friction':<8} {'time s':>6} "
          f"{'max |q-q0| rad':>15} {'tip drop m':>10}  result")
    print(f"{'released':<10} {'off (tau = 0)':<16} {'off':<8} {r['duration_s']:6.2f} "
          f"{r['max_deviation_rad']:15.3f} {r['tip_drop_m']:10.3f}  falls, "
          f"{'rests' if r['final_speed_rad_s'] < 0.1 else 'still moving'} at the end "
          f"({r['final_speed_rad_s']:.3f} rad/s); limit overshoot "
          f"{r['limit_overshoot_rad']:.1e} rad; peak contact |tau_ext| "
          f"{r['peak_external_torque']:.0f} N*m")
    print(f"{'gravity':<10} {'tau = g(q)':<16} {'off':<8} {g['duration_s']:6.2f} "
          f"{g['max_deviation_rad']:15.2e} {g['tip_drop_m']:10.2e}  holds: drift of our g "
          f"in MuJoCo")
    for key, row, fr in (('tracking', t, 'off'), ('friction', f, 'on')):
        print(f"{key:<10} {'computed torque':<16} {fr:<8} {row['duration_s']:6.2f} "
              f"{row['max_deviation_rad']:15.3f} {'':>10}  error RMS {row['rms_error_rad']:.2e} "
              f"rad, max {row['max_error_rad']:.2e} rad")
    print('peak |tau| per joint (N*m):')
    for key in ('released', 'gravity', 'tracking', 'friction'):
        print(f"  {key:<9} {_fmt(summary[key]['peak_torque'])}")
    print(f"tracking RMS error per joint (rad), friction off: {_fmt(t['rms_error_per_joint'])}")
    print(f"tracking RMS error per joint (rad), friction on:  {_fmt(f['rms_error_per_joint'])}")


def print_contact_table(c, enter='0.2 N*m'):
    """The contact phases: what the dynamics node's observer saw against MuJoCo's truth."""
    t = c['tracking']
    print(f"contact awareness (dynamics_node's observer, K_O = {K_O:g} 1/s, enter {enter}):")
    print(f"  tracking   no contact: {t['false_detections']} false detections over "
          f"{t['samples']} samples, peak |r| {t['peak_residual']:.1e} N*m")
    for name in [k for k in CONTACT_PHASE_NAMES if k in c]:
        n = c[name]
        print(f"  {name:<10} detected {n['detection_ms']:.0f} ms after the onset, isolated "
              f"{n['isolated_link']} (true {n['true_link']}; at the detecting sample "
              f"{n['isolated_at_detection']}), error {100 * n['error_vs_filtered']:.2f} % of "
              f"{n['peak_truth']:.1f} N*m vs the filtered truth, "
              f"{100 * n['error_vs_truth']:.2f} % vs the truth")


def plot_closed_loop(series, names, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    shown = [p[0] for p in PHASES if p[0] in series]
    fig, axes = plt.subplots(3, len(shown), figsize=(20, 10), sharex='col', squeeze=False)
    for col, phase in enumerate(shown):
        s = series[phase]
        axes[0, col].set_title(TITLES[phase])
        axes[0, col].plot(s['t'], s['q'])
        axes[0, col].set_ylabel('q (rad)')
        if phase in TRACKED:
            axes[1, col].plot(s['t_err'], s['err'])
            axes[1, col].set_ylabel('q_d - q (rad)')
        else:
            axes[1, col].plot(s['t'], s['err'])
            axes[1, col].set_ylabel('q - q0 (rad)')
        axes[2, col].plot(s['t'], s['tau'])
        axes[2, col].set_ylabel('motor torque (N*m)')
        axes[2, col].set_xlabel('time (s)')
        for ax in axes[:, col]:
            ax.grid(True, alpha=0.3)
    axes[0, 0].legend(names, fontsize=7, loc='best')
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_ellipsoids(tracked, model, tip, path, count=6):
    """2D projections of the tip's translational effective-inertia ellipsoid.

    Lambda_v = (J_v M^-1 J_v^T)^-1 (the top-left 3x3 of the published inverse effective
    inertia, inverted); the drawn surface is {Lambda_v a : |a| = 1}: the force (N) that
    gives the tip a unit acceleration in each direction. Its outline projected on a plane
    P (2 x 3) is the ellipse L c, |c| = 1, with L L^T = P Lambda_v^2 P^T.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    picks = [tracked[int(i)] for i in np.linspace(0, len(tracked) - 1, count)]
    planes = (('x', 'z', (0, 2)), ('x', 'y', (0, 1)), ('y', 'z', (1, 2)))
    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(picks)))
    links = list(model.frame_names)
    masses = []
    lam_all = []
    for _, _, q, A, _ in picks:
        # pinv: a planar arm cannot accelerate its tip out of its plane (A singular there);
        # that direction is drawn with zero extent. For the Panda this is inv(A).
        lam = np.linalg.pinv(A[:3, :3], rcond=1e-10, hermitian=True)
        lam_all.append(lam)
        masses.append(np.linalg.eigvalsh(lam))
    scale = 0.25 / max(float(np.max(masses)), 1e-9)   # largest semi-axis drawn 0.25 m
    circle = np.stack([np.cos(np.linspace(0, 2 * np.pi, 120)),
                       np.sin(np.linspace(0, 2 * np.pi, 120))])
    t_first = picks[0][1]
    for (_, stamp, q, A, _), lam, color in zip(picks, lam_all, colors):
        points = np.array([model.frame_pose(q, f)[:3, 3] for f in links])
        p_tip = model.frame_pose(q, tip)[:3, 3]
        for ax, (a, b, idx) in zip(axes, planes):
            P = np.zeros((2, 3))
            P[0, idx[0]] = P[1, idx[1]] = 1.0
            S = P @ lam @ lam @ P.T
            w, V = np.linalg.eigh(S)
            L = V @ np.diag(np.sqrt(np.clip(w, 0, None)))
            ell = (L @ circle) * scale + (P @ p_tip)[:, None]
            ax.plot(points[:, idx[0]], points[:, idx[1]], 'o-', color=color, alpha=0.5, lw=1,
                    ms=2)
            ax.plot(ell[0], ell[1], color=color, lw=1.5, label=f't = {stamp - t_first:.1f} s')
    for ax, (a, b, _) in zip(axes, planes):
        ax.set_xlabel(f'{a} (m)')
        ax.set_ylabel(f'{b} (m)')
        ax.set_aspect('equal', adjustable='datalim')
        ax.grid(True, alpha=0.3)
        ax.set_title(f'{a}-{b} projection')
    axes[0].legend(fontsize=8, loc='best')
    fig.suptitle(f'tip ({tip}) translational effective inertia {{Lambda_v a : |a| = 1}} '
                 f'(from ~/dynamics) along the tracked motion, with the arm (links)\n'
                 f'scale: {0.25 / scale:.2f} kg drawn as 0.25 m; eigenvalues from '
                 f'{np.min(masses):.2f} to {np.max(masses):.2f} kg')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [[float(x) for x in m] for m in masses]


def picture_model(urdf_xml, model, scenario, visuals=None):
    """(MjModel, qpos addresses in model order) of the scene to render: the plant's
    capsules; with ``visuals`` = dict(package_paths, base_dir), the URDF's visual shapes
    instead when every one of them was found (sim/visuals.py), saying which in one line."""
    import mujoco

    from manip_dynamics.sim.scene import SceneOptions, build_spec
    from manip_dynamics.sim.visuals import add_visuals

    options = SceneOptions(floor_height=scenario['floor_height'])
    if 'thresholds' in scenario:               # an arm of --urdf: its radius, its box
        contact = scenario['contact']
        options.collision_radius = scenario['collision_radius']
        options.obstacle_size = contact.get('obstacle_size')
        options.obstacle_position = contact.get('obstacle_position', (0.5, 0.0, 0.2))
    spec = build_spec(urdf_xml, model, options)
    shown = 'capsules'
    if visuals is not None:
        added, missing = add_visuals(spec, urdf_xml, **visuals)
        if added and not missing:
            shown = 'visuals'
            print(f'pictures: the URDF\'s {added} visual shapes')
        else:
            print('pictures: capsules along the links, not the URDF\'s visuals ('
                  + (f'{len(missing)} not found, e.g. {missing[0]}' if missing else 'none')
                  + '; --package-path DIR for package://)')
    m = spec.compile()
    if shown == 'visuals':
        for g in range(m.ngeom):
            if '_capsule' in (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or ''):
                m.geom_rgba[g, 3] = 0.0
    jid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in model.joint_names]
    return m, m.jnt_qposadr[jid].copy()


def render_pictures(rec, urdf_xml, model, scenario, out_dir, fps=6.0, visuals=None):
    """``arm_phases.png`` (the arm at the end of each phase) and ``arm_demo.gif`` (every
    phase at ``fps`` frames per simulated second), rendered by MuJoCo offscreen from the
    recorded joint_states; returns the written paths, or [] after saying in one line why
    rendering is unavailable. ``visuals``: see :func:`picture_model`."""
    from manip_dynamics.sim import render

    m, qadr = picture_model(urdf_xml, model, scenario, visuals)
    renderer, why = render.open_renderer(m)
    if renderer is None:
        print(f'no pictures of the arm: offscreen rendering unavailable ({why}); '
              f'see docs/simulation.md (make setup-render)')
        return []
    camera = render.Camera(**scenario['camera'])
    with rec.lock:
        states = list(rec.joint_states)
    frames, labels, finals = [], [], []
    shown = played(scenario, [p[0] for p in PHASES])
    for name in shown:
        rows = [s for s in states if s[0] == name]
        step = max(1, int(round(100 / fps)))
        picked = rows[::step] + [rows[-1]]
        shots = render.render_states(renderer, m, qadr, [r[2] for r in picked], camera)
        t0 = rows[0][1]
        frames += shots
        labels += [f'{TITLES[name]}   t = {r[1] - t0:4.1f} s' for r in picked]
        finals.append(shots[-1])
    renderer.close()
    png, gif = out_dir / 'arm_phases.png', out_dir / 'arm_demo.gif'
    render.save_png(render.montage(finals, [TITLES[p] + ' (end)' for p in shown], 2), png)
    render.save_gif(frames, labels, gif, fps=fps)
    return [png, gif]


def _start_nodes(args, q0, log_dir, scenario):
    sim = {'robot': args.robot, 'initial_positions': q0, 'paused': 'true',
           'real_time_factor': repr(float(args.real_time_factor)),
           'viscous_friction': '[0.0]', 'coulomb_friction': '[0.0]', 'lockstep': 'true',
           'lockstep_timeout': '2.0', 'floor_height': repr(float(scenario['floor_height'])),
           # a controller late on a loaded machine must not make the plant drop the arm
           'command_timeout': '5.0'}
    contact = scenario.get('contact')
    if contact and 'obstacle_size' in contact:
        sim.update(obstacle_size=str(contact['obstacle_size']),
                   obstacle_position=str(contact['obstacle_position']))
    observer, controller = dict(OBSERVER), {'mode': 'gravity'}
    if 'thresholds' in scenario:               # an arm of --urdf: sized from its model
        sim['urdf_file'] = str(args.urdf_file)
        controller.update(kp=f"[{scenario['kp']!r}]", kd=f"[{scenario['kd']!r}]")
        sim['collision_radius'] = repr(scenario['collision_radius'])
        observer['observer.enter_thresholds'] = str(scenario['thresholds'])
        observer['tip_link'] = scenario['tip']
    return [
        _start('manip_dynamics.nodes.arm_simulator', sim, log_dir, 'arm_simulator'),
        _start('manip_dynamics.nodes.dynamics_node', observer, log_dir, 'dynamics_node'),
        _start('manip_dynamics.nodes.computed_torque_controller', controller,
               log_dir, 'computed_torque_controller'),
    ]


def _run(args, scenario, model, log_dir):
    """Start the nodes, wait until the loop runs, play the phases; the Recorder."""
    q0 = '[' + ', '.join(repr(float(v)) for v in scenario['q0']) + ']'
    procs = _start_nodes(args, q0, log_dir, scenario)
    rec = None
    try:
        rec = Recorder()
        rec.wait_until_running(procs, log_dir, 180.0)   # imports on a loaded machine
        rec.t_ready = time.monotonic()
        run_phases(rec, scenario, procs, model, args.time_scale)
    finally:
        if rec is not None:
            rec.close()
        for p in reversed(procs):
            _stop(p)
    return rec


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--robot', default='panda', choices=sorted(SCENARIOS))
    parser.add_argument('--urdf', default=None, metavar='PATH',
                        help='your arm: a URDF or xacro file (instead of --robot); pose, '
                             'reference, push, obstacle and thresholds chosen from its model')
    parser.add_argument('--tip', default=None, help="task frame (default: the model's tip)")
    from manip_dynamics.core.description import add_arguments
    add_arguments(parser)   # --xacro-arg, --package-path
    parser.add_argument('--time-scale', type=float, default=1.0,
                        help='every phase lasts this times its usual simulated time')
    parser.add_argument('--real-time-factor', type=float, default=1.0,
                        help="the simulator's simulated seconds per wall second (lockstep: "
                             "at most as fast as the loop answers)")
    parser.add_argument('--output', default='demo_output')
    parser.add_argument('--no-render', action='store_true', help='skip the MuJoCo pictures')
    parser.add_argument('--no-plots', action='store_true',
                        help='no figures at all (implies --no-render): the numbers only')
    return parser


def _robot(args, out_dir):
    """(robot name, RobotModel, URDF text, scenario, tip) of --robot or --urdf."""
    from manip_dynamics.sim.plants import load_robot
    args.urdf_file = None
    if not args.urdf:
        model, urdf_xml = load_robot(args.robot, '')
        return args.robot, model, urdf_xml, SCENARIOS[args.robot], model.default_tip
    from manip_dynamics.demo_scenario import scenario_for
    model, urdf_xml = load_robot('', args.urdf, args.xacro_arg, args.package_path)
    tip = args.tip or model.default_tip
    if tip not in model.frame_names:
        raise SystemExit(f'--tip: no link {tip!r} in {args.urdf} (links: '
                         f'{", ".join(model.frame_names)})')
    args.urdf_file = (out_dir / 'robot.urdf').resolve()    # the expanded description
    args.urdf_file.write_text(urdf_xml, encoding='utf-8')
    scenario = dict(scenario_for(model, tip, urdf_xml), tip=tip)
    for phase, why in scenario['skipped'].items():
        print(f'skipping phase {phase}: {why}')
    name = Path(args.urdf).name.split('.')[0]
    return name, model, urdf_xml, scenario, tip


def _figures(args, rec, model, urdf_xml, scenario, tip, out_dir, summary, series, tracked):
    """The figures (none with --no-plots); the written paths."""
    names = list(model.joint_names)
    if args.no_plots:
        return []
    plot_closed_loop(series, names, out_dir / 'closed_loop.png')
    written = [out_dir / 'closed_loop.png']
    if tracked:                                # the tracking phase was played
        summary['ellipsoid_eigenvalues_kg'] = plot_ellipsoids(
            tracked, model, tip, out_dir / 'inertia_ellipsoids.png')
        written.append(out_dir / 'inertia_ellipsoids.png')
    if summary.get('contact'):
        plot_contact(summary['contact_series'], summary['contact'], names,
                     out_dir / 'contact.png')
        written.append(out_dir / 'contact.png')
    if not args.no_render:
        visuals = (dict(package_paths=args.package_path,
                        base_dir=Path(args.urdf).resolve().parent) if args.urdf else None)
        written += render_pictures(rec, urdf_xml, model, scenario, out_dir, visuals=visuals)
    return written


def main(argv=None):
    args = _parser().parse_args(argv)
    require_parts('python -m manip_dynamics.demo', 'mujoco', 'matplotlib', 'PIL')
    _ros_environment()
    t_start = time.monotonic()

    import manip_dynamics.sim  # noqa: F401  first: selects MUJOCO_GL=egl
    import mujoco  # noqa: E402  (after manip_dynamics.sim on purpose)

    out_dir = Path(args.output)
    log_dir = out_dir / 'logs'
    log_dir.mkdir(parents=True, exist_ok=True)
    robot, model, urdf_xml, scenario, tip = _robot(args, out_dir)
    names = list(model.joint_names)
    rec = _run(args, scenario, model, log_dir)
    t_ready = rec.t_ready - t_start

    summary, series, tracked = analyse(rec, model, scenario, tip)
    save_recording(rec, out_dir / 'recording.npz')
    summary.update(robot=robot, joint_names=names, tip_frame=tip,
                   mujoco_version=mujoco.__version__,
                   ros_domain_id=int(os.environ['ROS_DOMAIN_ID']),
                   start_pose=scenario['q0'], amplitude=scenario['amplitude'],
                   frequency_hz=scenario['frequency'], startup_s=round(t_ready, 2))
    if args.urdf:
        summary.update(urdf=str(args.urdf), skipped=scenario['skipped'], scenario={
            k: scenario[k] for k in ('kp', 'kd', 'gravity_frequency', 'floor_height',
                                     'collision_radius', 'thresholds',
                                     'reach_m', 'torque_scale', 'contact')})
    if played(scenario, CONTACT_PHASE_NAMES):
        summary['contact'], summary['contact_series'] = contact_numbers(
            rec, model, scenario, args.time_scale)
    written = _figures(args, rec, model, urdf_xml, scenario, tip, out_dir, summary, series,
                       tracked)
    from manip_dynamics.demo_safety import add_safety   # ISO/TS 15066 along the tracked motion
    written += add_safety(summary, rec, model, tip, out_dir, plots=not args.no_plots)
    summary.pop('contact_series', None)
    summary['pictures'] = [p.name for p in written]
    summary['wall_time_s'] = round(time.monotonic() - t_start, 2)
    (out_dir / 'summary.json').write_text(json.dumps(summary, indent=2))
    print_table(summary, names)
    if 'contact' in summary:
        print_contact_table(summary['contact'], '0.2 N*m' if not args.urdf else
                            '1 % of each joint\'s torque scale')
    for phase, why in summary.get('skipped', {}).items():
        print(f'skipped phase {phase}: {why}')
    print(f"wrote {', '.join(str(p) for p in written + [out_dir / 'summary.json'])} in "
          f"{summary['wall_time_s']:.1f} s (startup {t_ready:.1f} s)")
    return 0


if __name__ == '__main__':
    sys.exit(main())
