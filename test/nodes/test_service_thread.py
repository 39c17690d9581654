"""ServiceThread.stop() (manip_dynamics/nodes/service_thread.py) ends its spinning thread at
once, however long the thread's wait for work: it wakes the wait itself, so a node's
shutdown does not wait out the spin's timeout (it did, a second for each of the dynamics
node's two service threads: every test that stopped a dynamics node waited for it).

A dynamics node whose construction fails (a bad start-up configuration) has started none
of its service threads: rclpy's context destroys such a node while holding the context's
lock, which a running thread's spin waits for, so stop() waited out STOP_TIMEOUT (5 s for
every ``cannot start`` exit)."""
import threading

import pytest
import rclpy
from rclpy.node import Node

from manip_dynamics.nodes import service_thread
from manip_dynamics.nodes.service_thread import ServiceThread


@pytest.mark.parametrize("threads", [1, 2])
def test_stop_ends_the_thread_without_waiting_out_the_spin_timeout(monkeypatch, threads):
    # a wait for work far longer than stop()'s join: only a wake-up can end the thread
    # within stop()
    monkeypatch.setattr(service_thread, "SPIN_TIMEOUT", 60.0)
    monkeypatch.setattr(service_thread, "STOP_TIMEOUT", 3.0)
    context = rclpy.Context()
    rclpy.init(context=context)
    owner = Node("service_thread_owner", context=context)
    try:
        host = ServiceThread(owner, threads=threads)
        host.start()
        # the thread is inside its wait (the executor has nothing to do)
        host._thread.join(0.3)
        assert host._thread.is_alive()
        host.stop()
        assert not host._thread.is_alive(), "stop() returned with the thread still spinning"
    finally:
        owner.destroy_node()
        rclpy.shutdown(context=context)


def test_a_node_that_cannot_start_has_started_no_service_thread(tmp_path):
    from manip_dynamics.nodes.dynamics_node import ConfigurationError, DynamicsNode

    context = rclpy.Context()
    rclpy.init(context=context)
    before = set(threading.enumerate())
    try:
        with pytest.raises(ConfigurationError, match="cannot read"):
            DynamicsNode(context=context, cli_args=[
                "--ros-args", "-r", "__ns:=/cannot_start",
                "-p", f"urdf_file:={tmp_path / 'missing.urdf'}"])
        started = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
        assert started == [], f"threads left running by the failed construction: {started}"
    finally:
        rclpy.shutdown(context=context)
