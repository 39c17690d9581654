"""Suite-wide set-up: ROS isolation first, then the shared fixtures.

The environment block below runs when pytest imports this file, which is before any test
module (and so before anything imports rclpy). It

* confines DDS discovery to loopback (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``), and
* keeps a ``ROS_DOMAIN_ID`` already present in the environment (engineers and CI jobs that
  run at the same time choose their own), otherwise picks one for this pytest session
  from the process id, in 1..100, so two sessions started together do not hear each other.

Both values are in ``os.environ`` and therefore inherited by every node process a test
starts. Fixtures (see ``ros_utils`` for the helpers they wrap):

``node_process``  factory: ``node_process(args, env=None, name=None)`` starts a node in a
                  child process (``ros_utils.start_node_process``) whose output goes to a
                  log file under the test's ``tmp_path``; every process it started is
                  stopped at teardown (SIGINT, then SIGKILL) and its log printed, which
                  pytest shows when the test failed.
``ros_node``      a real ``rclpy`` node in a fresh context, spun by an executor in a
                  background thread; destroyed and its context shut down at teardown.
``ros_domain_id`` the domain id this session uses (int).
"""
from __future__ import annotations

import os

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.pop("ROS_LOCALHOST_ONLY", None)  # deprecated; conflicting values only warn
if not os.environ.get("ROS_DOMAIN_ID", "").strip():
    os.environ["ROS_DOMAIN_ID"] = str(os.getpid() % 100 + 1)
# numba's pool has one thread per CPU: on a one-CPU machine, two, so that the threaded
# kernels and their launch rules (test/core/dynamics/test_threads.py) run there too
# (before anything imports numba; an explicit NUMBA_NUM_THREADS is kept)
if (os.cpu_count() or 1) < 2:
    os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import pytest  # noqa: E402

import ros_utils  # noqa: E402  (test/ is on sys.path: rootdir conftest, no __init__.py)


def pytest_report_header(config):
    return (
        f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']} "
        f"ROS_AUTOMATIC_DISCOVERY_RANGE={os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE']}"
    )


@pytest.fixture(scope="session")
def ros_domain_id() -> int:
    return int(os.environ["ROS_DOMAIN_ID"])


@pytest.fixture
def node_process(tmp_path):
    """Factory starting node processes; all of them are stopped at teardown."""
    started = []

    def start(args, env=None, name=None):
        proc = ros_utils.start_node_process(args, env=env, name=name, log_dir=tmp_path)
        started.append(proc)
        return proc

    yield start

    for proc in reversed(started):
        ros_utils.stop_process(proc)
    for proc in started:
        print(f"----- log of {proc.name} (exit code {proc.returncode}): {proc.log_path}")
        print(ros_utils.read_log(proc, tail=200))


def _live_node(label):
    """A RosNodeHandle named after ``label``, yielded as its node and shut down after."""
    handle = ros_utils.RosNodeHandle(
        "test_" + "".join(c if c.isalnum() else "_" for c in label)[:50])
    try:
        yield handle.node
    finally:
        handle.shutdown()


@pytest.fixture
def ros_node(request):
    """A live rclpy node (fresh context, executor spinning in a background thread)."""
    yield from _live_node(request.node.name)


@pytest.fixture(scope="module")
def module_ros_node(request):
    """Like ``ros_node``, shared by every test of one module (for module-scoped servers)."""
    yield from _live_node(request.module.__name__)
