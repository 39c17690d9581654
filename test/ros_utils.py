"""Helpers for tests that talk to real ROS 2 nodes (real rclpy, real DDS on loopback).

Import this module from tests as ``import ros_utils`` (``test/`` is on ``sys.path``).
``rclpy`` is imported lazily, so tests that never touch ROS do not load it.
``test/conftest.py`` sets ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` and the session's
``ROS_DOMAIN_ID`` before this module is imported; child processes inherit both.

Processes
---------
``start_node_process(args, env=None, name=None, log_dir=None) -> subprocess.Popen``
    Runs a node in a child process with the same interpreter (``sys.executable``):

    * ``args[0]`` a dotted module name -> ``python -u -m <module> <args[1:]>``,
      e.g. ``["manip_dynamics.nodes.dynamics_node", "--ros-args", "-p", "tip_frame:=tool0"]``;
    * ``args[0]`` a path ending in ``.py`` -> ``python -u <path> <args[1:]>``
      (e.g. ``ros_utils.PROCESSES / "joint_state_echo.py"``).

    ``env`` entries are added to (and override) ``os.environ``; a value of ``None`` removes
    the variable. The repository root and ``test/`` are prepended to ``PYTHONPATH`` so the
    child imports the working tree. stdout and stderr both go to ``<log_dir>/<name>.log``
    (default ``log_dir``: a fresh temporary directory). The returned Popen carries two extra
    attributes: ``.name`` and ``.log_path``.
    In tests prefer the ``node_process`` fixture (same arguments, ``log_dir`` = the test's
    ``tmp_path``), which stops every process it started at teardown and prints their logs.

``stop_process(proc, timeout=5.0) -> int | None``
    SIGINT (what Ctrl-C sends; rclpy shuts down cleanly), then SIGKILL after ``timeout``.
    Returns the exit code.

``read_log(proc, tail=None) -> str``
    The captured output so far (last ``tail`` lines if given).

``assert_running(proc)``
    Fails with the process log if the process already exited.

Nodes in the test process
-------------------------
``RosNodeHandle(name)`` (used by the ``ros_node`` fixture)
    ``.node`` is an ``rclpy`` Node in its own ``rclpy.Context``, spun by a
    ``SingleThreadedExecutor`` in a daemon thread; ``.shutdown()`` undoes all of it.
    Because the executor runs in the background, the helpers below simply block the test
    thread on events; never call ``rclpy.spin*`` on that node from a test.

Waiting
-------
``wait_for(predicate, timeout=10.0, interval=0.02, message=None) -> value``
    Polls ``predicate()`` until it returns something truthy and returns that; raises
    ``TimeoutError`` (with ``message``) after ``timeout`` seconds.

``wait_for_message(node, msg_type, topic, timeout=10.0, qos=10, predicate=None, process=None)``
    Subscribes, returns the first message (satisfying ``predicate(msg)`` if given),
    unsubscribes. ``qos`` is a depth or a ``QoSProfile`` (use ``ros_utils.latched_qos()``
    for transient-local topics such as ``robot_description``). Raises ``TimeoutError``.

``collect_messages(node, msg_type, topic, count, timeout=10.0, qos=10, process=None)``
    The first ``count`` messages received on ``topic``.

``call_service(node, srv_type, name, request, timeout=10.0, process=None) -> response``
    Waits for the server (within ``timeout``), calls, returns the response or raises
    ``TimeoutError``.

    ``process=`` (a Popen from ``start_node_process`` or a list of them) on the three
    helpers above: while waiting, fail at once with the process log (``AssertionError``)
    if that process has exited, instead of waiting out the timeout.

``publish_until(node, msg_type, topic, make_msg, until, timeout=10.0, period=0.05, qos=10)``
    Publishes ``make_msg()`` every ``period`` seconds until ``until()`` is truthy (returns
    its value) - the robust way to feed a node whose subscription may not be matched yet.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

TEST_DIR = Path(__file__).resolve().parent
REPO_ROOT = TEST_DIR.parent
PROCESSES = TEST_DIR / "processes"


# --------------------------------------------------------------------------- processes

def _child_env(env: Mapping[str, str | None] | None) -> dict[str, str]:
    full = dict(os.environ)
    full.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    full["PYTHONUNBUFFERED"] = "1"
    # a node that crashes (SIGSEGV in a C extension) prints every thread's Python stack
    # into its log
    full.setdefault("PYTHONFAULTHANDLER", "1")
    # Make rclpy's console output line-buffered and free of colour codes in log files.
    full.setdefault("RCUTILS_LOGGING_BUFFERED_STREAM", "0")
    full.setdefault("RCUTILS_COLORIZED_OUTPUT", "0")
    paths = [str(REPO_ROOT), str(TEST_DIR)]
    if full.get("PYTHONPATH"):
        paths.append(full["PYTHONPATH"])
    full["PYTHONPATH"] = os.pathsep.join(paths)
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = str(value)
    return full


def start_node_process(
    args: Sequence[str | os.PathLike],
    env: Mapping[str, str | None] | None = None,
    name: str | None = None,
    log_dir: str | os.PathLike | None = None,
) -> subprocess.Popen:
    """Start ``args`` (module name or script path first) under ``sys.executable``."""
    args = [os.fspath(a) for a in args]
    if not args:
        raise ValueError("start_node_process: args is empty")
    target = args[0]
    if target.endswith(".py") or os.sep in target:
        cmd = [sys.executable, "-u", target, *args[1:]]
        default_name = Path(target).stem
    else:
        cmd = [sys.executable, "-u", "-m", target, *args[1:]]
        default_name = target.rsplit(".", 1)[-1]
    name = name or default_name
    log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="ros_logs_"))
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    n = 1
    while log_path.exists():
        n += 1
        log_path = log_dir / f"{name}.{n}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_child_env(env),
            cwd=str(REPO_ROOT),
        )
    proc.name = name
    proc.log_path = log_path
    return proc


def stop_process(proc: subprocess.Popen, timeout: float = 5.0) -> int | None:
    """SIGINT, wait up to ``timeout`` s, then SIGKILL. Returns the exit code."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
        except ProcessLookupError:
            pass
    return proc.returncode


def read_log(proc: subprocess.Popen, tail: int | None = None) -> str:
    path = getattr(proc, "log_path", None)
    if path is None or not Path(path).exists():
        return ""
    text = Path(path).read_text(errors="replace")
    if tail is not None:
        text = "\n".join(text.splitlines()[-tail:])
    return text


def assert_running(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        raise AssertionError(
            f"process {getattr(proc, 'name', proc.args)} exited with code {proc.returncode}:\n"
            + read_log(proc, tail=100)
        )


# --------------------------------------------------------------------------- nodes

class RosNodeHandle:
    """An rclpy node in a fresh context with an executor spinning in a daemon thread."""

    def __init__(self, name: str = "test_node", namespace: str | None = None):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        try:
            kwargs = {"context": self.context}
            if namespace:
                kwargs["namespace"] = namespace
            self.node = rclpy.create_node(name, **kwargs)
            self.executor = SingleThreadedExecutor(context=self.context)
            self.executor.add_node(self.node)
        except BaseException:
            rclpy.shutdown(context=self.context)
            raise
        self._thread = threading.Thread(target=self._spin, name=f"spin-{name}", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        from rclpy.executors import ExternalShutdownException

        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except (ExternalShutdownException, KeyboardInterrupt):
            pass
        except Exception:  # a shut-down context during teardown is not a test failure
            if self.context.ok():
                raise

    def shutdown(self) -> None:
        import rclpy

        if self.context.ok():
            rclpy.shutdown(context=self.context)   # spin loop sees context not ok
        self._thread.join(timeout=5.0)
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()


# --------------------------------------------------------------------------- waiting

def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str | None = None,
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(message or f"condition not met within {timeout} s")
        time.sleep(interval)


def latched_qos(depth: int = 1):
    """Reliable + transient local (matches latched publishers such as robot_description)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )


def _check_alive(process) -> None:
    if process is None:
        return
    for proc in (process if isinstance(process, (list, tuple)) else (process,)):
        assert_running(proc)


def _wait_event(event: threading.Event, timeout: float, process=None) -> bool:
    """Wait for ``event``; fail at once (with its log) if a watched process has exited."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if event.wait(max(0.0, min(0.2, remaining))):
            return True
        _check_alive(process)
        if remaining <= 0:
            return False


def collect_messages(node, msg_type, topic: str, count: int, timeout: float = 10.0, qos=10,
                     process=None) -> list:
    received: list = []
    done = threading.Event()
    lock = threading.Lock()

    def callback(msg):
        with lock:
            if len(received) < count:
                received.append(msg)
            if len(received) >= count:
                done.set()

    sub = node.create_subscription(msg_type, topic, callback, qos)
    try:
        if not _wait_event(done, timeout, process):
            raise TimeoutError(
                f"{len(received)}/{count} messages on {topic!r} within {timeout} s"
            )
        return list(received)
    finally:
        node.destroy_subscription(sub)


def wait_for_message(
    node, msg_type, topic: str, timeout: float = 10.0, qos=10,
    predicate: Callable[[Any], bool] | None = None, process=None,
):
    box: list = []
    done = threading.Event()

    def callback(msg):
        if not done.is_set() and (predicate is None or predicate(msg)):
            box.append(msg)
            done.set()

    sub = node.create_subscription(msg_type, topic, callback, qos)
    try:
        if not _wait_event(done, timeout, process):
            what = "a matching message" if predicate else "a message"
            raise TimeoutError(f"no {what} on {topic!r} within {timeout} s")
        return box[0]
    finally:
        node.destroy_subscription(sub)


def call_service(node, srv_type, name: str, request, timeout: float = 10.0, process=None,
                 resend_every: float | None = 2.0, client=None):
    """Call service ``name`` and return its response (TimeoutError after ``timeout`` s).

    ``wait_for_service`` only says the client has matched the server; the server may not
    yet have matched the client's response reader, and then rmw drops the response
    ("failed to send response (timeout)"): seen in CI under load. So the request is sent
    again every ``resend_every`` s until one answer arrives; pass ``resend_every=None`` for
    a service that is not idempotent (and create its ``client`` early instead, so that
    discovery has finished by the time of the call)."""
    deadline = time.monotonic() + timeout
    own = client is None
    if own:
        client = node.create_client(srv_type, name)
    futures: list = []
    try:
        while not client.wait_for_service(timeout_sec=0.2):
            _check_alive(process)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"service {name!r} not available within {timeout} s")
        done = threading.Event()
        while True:
            futures.append(client.call_async(request))
            futures[-1].add_done_callback(lambda _f: done.set())
            left = deadline - time.monotonic()
            step = left if resend_every is None else min(left, resend_every)
            if _wait_event(done, max(0.0, step), process):
                break
            if time.monotonic() >= deadline:
                raise TimeoutError(f"service {name!r} did not answer within {timeout} s "
                                   f"({len(futures)} requests sent)")
        answered = next(f for f in futures if f.done())
        exc = answered.exception()
        if exc is not None:
            raise exc
        return answered.result()
    finally:
        for f in futures:
            if not f.done():
                f.cancel()
        if own:
            node.destroy_client(client)


def set_parameters_atomically(node, node_name: str, **values) -> None:
    """Set ``values`` on ``node_name`` in one ``set_parameters_atomically`` call; assert
    the node accepted them (its reason is the assertion message)."""
    from rcl_interfaces.srv import SetParametersAtomically
    from rclpy.parameter import Parameter

    request = SetParametersAtomically.Request(
        parameters=[Parameter(k, value=v).to_parameter_msg() for k, v in values.items()])
    response = call_service(node, SetParametersAtomically,
                            f"{node_name}/set_parameters_atomically", request)
    assert response.result.successful, response.result.reason


def assert_descriptors_match_table(node, node_name: str, specs) -> list:
    """Ask ``node_name``'s ``describe_parameters`` for every parameter of the table
    ``specs`` (ParamSpec tuple) and assert each descriptor carries its spec: name, type,
    description, read-only, and for a bounded double / integer exactly its range (and no
    range otherwise). Returns the descriptors."""
    from rcl_interfaces.srv import DescribeParameters

    names = [spec.name for spec in specs]
    res = call_service(node, DescribeParameters, f"{node_name}/describe_parameters",
                       DescribeParameters.Request(names=names))
    assert [d.name for d in res.descriptors] == names
    for spec, d in zip(specs, res.descriptors):
        assert (d.type, d.description, d.read_only) == (
            spec.type, spec.description, spec.read_only), spec.name
        ranges = list(d.floating_point_range) + list(d.integer_range)
        if spec.bounded and spec.kind in ("double", "integer"):
            (r,) = ranges
            if spec.low is not None:
                assert r.from_value == spec.low, spec.name
            if spec.high is not None:
                assert r.to_value == spec.high, spec.name
        else:
            assert not ranges, spec.name
    return list(res.descriptors)


def publish_matched(pub, msg, timeout: float = 10.0,
                    describe: Callable[[], str] | None = None) -> None:
    """Publish ``msg`` once ``pub`` is matched to a subscription. A message published
    before discovery has matched the subscriber is lost whatever the QoS, so a one-shot
    send must wait for the match (slow machines). ``describe()`` adds to the timeout's
    message (e.g. the subscriber's log)."""
    if pub.get_subscription_count() < 1:
        try:
            wait_for(lambda: pub.get_subscription_count() >= 1, timeout=timeout)
        except TimeoutError:
            raise TimeoutError(f"no subscription matched {pub.topic_name!r} within "
                               f"{timeout} s\n" + (describe() if describe else "")) from None
    pub.publish(msg)


def publish_until(
    node, msg_type, topic: str, make_msg: Callable[[], Any], until: Callable[[], Any],
    timeout: float = 10.0, period: float = 0.05, qos=10,
):
    pub = node.create_publisher(msg_type, topic, qos)
    try:
        deadline = time.monotonic() + timeout
        while True:
            value = until()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout} s while publishing on {topic!r}")
            pub.publish(make_msg())
            time.sleep(period)
    finally:
        node.destroy_publisher(pub)


def run_demo(module: str, out, timeout: float, args=()):
    """``python -m module --output out [args]`` from the repository root, in the test's ROS
    environment; prints the tails of its output; -> the CompletedProcess."""
    proc = subprocess.run([sys.executable, "-m", module, "--output", str(out), *args],
                          cwd=REPO_ROOT, env=_child_env(None),
                          capture_output=True, text=True, timeout=timeout)
    print(proc.stdout[-3000:], proc.stderr[-3000:])
    return proc
