"""The dynamics node's query services on a thread of their own, with deep request queues.

rclpy (Kilted) has no executor per callback group: an executor takes every entity of the
nodes added to it, and a node belongs to one executor. So a node's service cannot be
served by a second thread while its joint_states subscription stays on the first, and a
MultiThreadedExecutor for the whole node cost 15x the latency at 1 kHz (docs/node.md).
``ServiceThread(node)`` therefore keeps a hidden companion node,
``_<node name>_services`` in the node's namespace (hidden: ``ros2 node list`` shows it
with ``--all``), spun by a SingleThreadedExecutor on a daemon thread. Services made with
``create_service(srv_type, "~/name", callback)`` get the name resolved by the OWNER node
(its namespace, name and remappings: ``/<ns>/<node name>/name``), so clients see the same
service names as before; only the answering node differs. The main thread keeps
joint_states, timers and parameters to itself and never waits for a service call.

Thread switching: the two threads share Python's GIL. A service's numba kernels release
it while they run (nogil); the Python between them is preempted at the interpreter's
switch interval, which the node's process lowers to ``SWITCH_INTERVAL`` s (CPython's
default is 5 ms, five joint states at 1 kHz) so a waiting per-state callback gets the GIL
within that: ``lower_switch_interval()``, called by ``dynamics_node.main()`` only (it is the
whole process's setting: a DynamicsNode built inside another program, e.g. a test, leaves
that program's as it is; there a test's whole ros lane stalled after one in-process node). rclpy turns a request into Python messages (about 20 us per 7-joint trajectory
point on a loaded machine) and the answer back (about 7 us) in C holding the GIL,
preempted only where it calls the messages' Python constructors; the trajectory services
bound that by refusing requests beyond ``MAX_TRAJECTORY_POINTS``
(``services.trajectory_arrays``).

Queues: each service's request queue holds ``SERVICE_QUEUE_DEPTH`` waiting requests
(KEEP_LAST, reliable; rclpy's default is 10, and of 50 simultaneous requests the others
were dropped without an answer). Requests are answered one at a time, oldest first.
"""
from __future__ import annotations

import sys
import threading

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import (ExternalShutdownException, MultiThreadedExecutor,
                             ShutdownException, SingleThreadedExecutor)
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

SERVICE_QUEUE_DEPTH = 100     # waiting requests per service before the oldest is dropped
SERVICE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=SERVICE_QUEUE_DEPTH,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
SWITCH_INTERVAL = 0.0002      # s: sys.setswitchinterval of a process serving services
STOP_TIMEOUT = 5.0            # s: stop() waits this long for a call in progress
SPIN_TIMEOUT = 1.0            # s: the thread's longest wait for work (stop() wakes it at once)


def lower_switch_interval() -> None:
    """The process's interpreter switch interval down to SWITCH_INTERVAL (module doc); for a
    process that runs the node as its program."""
    if sys.getswitchinterval() > SWITCH_INTERVAL:
        sys.setswitchinterval(SWITCH_INTERVAL)


class ServiceThread:
    """A hidden node spun on its own thread, hosting services named after ``owner``
    (module doc). ``start()`` after the services are made; ``stop()`` before the owner is
    destroyed.

    ``suffix`` names the hidden node (``_<owner>_<suffix>``); ``threads`` > 1 answers that
    many requests at once (a MultiThreadedExecutor and one reentrant callback group: for a
    service whose call waits, e.g. ``~/calibrate_contact`` collecting states, so that a
    second request is answered meanwhile)."""

    def __init__(self, owner: Node, suffix: str = "services", threads: int = 1):
        self._owner = owner
        self.node = Node(f"_{owner.get_name()}_{suffix}", namespace=owner.get_namespace(),
                         context=owner.context, use_global_arguments=False,
                         start_parameter_services=False)
        self._group = ReentrantCallbackGroup() if threads > 1 else None
        self.executor = (SingleThreadedExecutor(context=owner.context) if threads == 1 else
                         MultiThreadedExecutor(num_threads=threads, context=owner.context))
        self.executor.add_node(self.node)
        self._stopping = threading.Event()
        # stop() triggers it: the executor runs its (empty) callback, so spin_once returns
        # now and the loop sees _stopping. (executor.wake() does not end a spin_once: the
        # executor only rebuilds its wait set and waits out SPIN_TIMEOUT, a second for
        # every node shut down.)
        self._wake = self.node.create_guard_condition(lambda: None,
                                                      callback_group=self._group)
        self._thread = threading.Thread(target=self._spin, daemon=True,
                                        name=f"{owner.get_name()}-services")

    def create_service(self, srv_type, name: str, callback):
        """A service ``name`` as the owner resolves it (``~/x`` -> ``/<ns>/<owner>/x``),
        answered on this thread, with a queue of SERVICE_QUEUE_DEPTH requests."""
        return self.node.create_service(srv_type, self._owner.resolve_service_name(name),
                                        callback, qos_profile=SERVICE_QOS,
                                        callback_group=self._group)

    def destroy_service(self, service) -> None:
        self.node.destroy_service(service)

    def start(self) -> None:
        self._thread.start()

    def _spin(self) -> None:
        context = self.node.context
        try:
            while context.ok() and not self._stopping.is_set():
                self.executor.spin_once(timeout_sec=SPIN_TIMEOUT)
        except (ExternalShutdownException, ShutdownException, KeyboardInterrupt):
            pass
        except Exception:   # (a wait set on a context shut down meanwhile: the end, quietly)
            if context.ok() and not self._stopping.is_set():
                raise

    def stop(self) -> None:
        """End the thread (after the call in progress, waiting at most STOP_TIMEOUT s), then
        the executor and the hidden node."""
        self._stopping.set()
        self._wake.trigger()
        if self._thread.is_alive():
            self._thread.join(STOP_TIMEOUT)
        self.executor.shutdown(timeout_sec=0.0)
        self.node.destroy_node()
