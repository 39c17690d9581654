"""The ROS side of a demo: the parts it needs, a loopback ROS environment, node
processes started and stopped (``python -m`` with ``--ros-args -p``, one log each),
and the Recorder node (its own context, a background executor) that records the
traffic and sets the nodes' parameters. Shared by the closed-loop and identification
demos."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np


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
    root = str(Path(__file__).resolve().parents[2])     # the folder holding manip_dynamics/
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
