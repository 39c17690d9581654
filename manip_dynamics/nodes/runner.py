"""What the nodes share: ``main()`` (init, spin on one thread, clean shutdown), declaring
a parameter table (:mod:`manip_dynamics.rules.parameter_table`) with its descriptors, and
reading the table's current values."""
from __future__ import annotations

import math
import signal
from typing import Any, Callable, Sequence

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future

from manip_dynamics.rules import gc_pauses
from manip_dynamics.rules.parameter_table import ParameterTypeError, ParamSpec


EXECUTORS = ("events", "single_threaded")


def make_executor(kind: str):
    """rclpy's EventsExecutor ('events') or SingleThreadedExecutor ('single_threaded')."""
    if kind == "events":
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    if kind == "single_threaded":
        return SingleThreadedExecutor()
    raise ValueError(f"executor must be one of {EXECUTORS}, got {kind!r}")


# How often the spin loop looks at a stop request (Ctrl-C, SIGTERM): the longest a node
# takes to begin its shutdown after the signal, s.
STOP_CHECK_PERIOD = 0.1


class StopRequest:
    """Ctrl-C (SIGINT) and SIGTERM as a flag that ``spin`` looks at, set by Python signal
    handlers (``install``), instead of rclpy's own handlers: those shut the context down
    from a thread of their own while the main thread shuts the executor down and destroys
    the node, and that race crashed a node with SIGSEGV about once in 20 Ctrl-Cs
    (test/nodes/test_recorder.py::test_file_closed_on_sigint; the crash the rclpy issues
    #215, #253 and #327 describe). With the flag everything happens on the main thread, in
    order: the spin returns, the executor shuts down, the node is destroyed (the recorder
    writes its file's summary), then rclpy shuts down."""

    def __init__(self):
        self.requested = False

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._handler)

    def _handler(self, signum, frame) -> None:
        self.requested = True


def spin(node: Node, executor, stop: StopRequest) -> None:
    """Spin ``node`` on ``executor`` until rclpy shuts down (external) or ``stop`` is
    requested (Ctrl-C, SIGTERM).

    Not ``executor.spin()``: rclpy 9.1.2's EventsExecutor.spin() runs no callback at all
    and does not return on shutdown (docs/realtime.md); ``spin_until_future_complete`` on
    a future that never completes, in slices of STOP_CHECK_PERIOD while ``rclpy.ok()``,
    works for both.
    """
    executor.add_node(node)
    never = Future()
    context = node.context
    while context.ok() and not stop.requested:
        executor.spin_until_future_complete(never, timeout_sec=STOP_CHECK_PERIOD)


def take_waiting(subscription) -> list:
    """Every message already waiting in ``subscription``'s queue, oldest first, taken now (as
    rclpy's executors take one; raw bytes for a raw subscription), so a node can act on
    them at once: the dynamics node's latest wins, the recorder's ``~/stop``."""
    taken = []
    with subscription.handle:
        while True:
            message = subscription.handle.take_message(subscription.msg_type, subscription.raw)
            if message is None:
                return taken
            taken.append(message[0])


def run_node(make_node: Callable[[], Node], args=None,
             fatal: tuple[type[BaseException], ...] = (), name: str = "node") -> int:
    """Build the node with ``make_node()`` and spin it on one thread.

    Once built, the garbage collector's objects so far are frozen (rules/gc_pauses.py: a
    full collection would otherwise walk them all, a pause of tens of milliseconds). The
    executor is the node's read-only parameter ``executor`` if it declares one
    (``events`` or ``single_threaded``), else a SingleThreadedExecutor. Ctrl-C and an
    external shutdown end the spin quietly (exit code 0). An exception of a type in
    ``fatal`` raised while building the node (a bad start-up configuration) is logged as
    FATAL ``cannot start: ...`` under the logger ``name`` and gives exit code 2. The node
    is always destroyed and rclpy shut down. Ctrl-C and SIGTERM are this module's
    (``StopRequest``), not rclpy's: the shutdown runs on the main thread alone.
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = StopRequest()
    stop.install()
    node = None
    executor = None
    try:
        node = make_node()
        gc_pauses.freeze()      # start-up's objects out of every later collection
        kind = "single_threaded"
        if node.has_parameter("executor"):
            kind = node.get_parameter("executor").value
            node.get_logger().info(f"spinning on the {kind} executor")
        executor = make_executor(kind)
        spin(node, executor, stop)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except fatal as exc:
        rclpy.logging.get_logger(name).fatal(f"cannot start: {exc}")
        return 2
    finally:
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


def table_values(node: Node, specs: Sequence[ParamSpec]) -> dict[str, Any]:
    """Every table parameter's current value by name; an unset array is ``[]`` (a ROS 2
    parameter file cannot express an empty list, so "unset" is how an empty one arrives),
    a set array a list."""
    values = {}
    for spec in specs:
        p = node.get_parameter_or(spec.name, None)
        unset = p is None or p.type_ == Parameter.Type.NOT_SET or p.value is None
        if spec.kind.endswith("_array"):
            values[spec.name] = [] if unset else list(p.value)
        else:
            values[spec.name] = spec.default if unset else p.value
    return values


def descriptor(spec: ParamSpec, final: bool = True) -> ParameterDescriptor:
    """The ParameterDescriptor of a table entry: description, constraints in words and,
    when ``final``, read-only and for a bounded double / integer its FloatingPointRange /
    IntegerRange (inclusive ends; a strict ``low_open`` bound is enforced by
    ParamSpec.check). ``final=False`` is the descriptor a parameter is declared with
    until its start-up value has passed the table's check."""
    d = ParameterDescriptor(name=spec.name, type=spec.type, description=spec.description,
                            additional_constraints=spec.constraints_text(),
                            read_only=final and spec.read_only)
    if final and spec.bounded and spec.kind == "double":
        d.floating_point_range = [FloatingPointRange(
            from_value=-math.inf if spec.low is None else float(spec.low),
            to_value=math.inf if spec.high is None else float(spec.high), step=0.0)]
    elif final and spec.bounded and spec.kind == "integer":
        big = 2 ** 63 - 1
        d.integer_range = [IntegerRange(
            from_value=-big - 1 if spec.low is None else int(spec.low),
            to_value=big if spec.high is None else int(spec.high), step=0)]
    return d


def declare_table(node: Node, specs: Sequence[ParamSpec]) -> dict[str, Any]:
    """Declare every parameter of the table on ``node``; -> {name: start-up value}.

    Each start-up value (default or override) is checked by its spec: ParameterTypeError
    (wrong type, with a hint that matches the mistake: ParamSpec.type_hint) or
    ParameterValueError (out of bounds), naming the parameter. A string override that
    YAML read as a boolean (``-p mode:=off``) is taken as the one allowed choice YAML reads
    that way (ParamSpec.word_for_bool); so is a SetParameters request holding a bool for
    such a parameter (``ros2 param set ... mode off``), through a pre-set callback. A
    parameter gets its final descriptor (range, read-only) once its value is known to
    fit, so a bad override is reported in the table's words, not as rclpy's
    InvalidParameterValueException. Per-joint lengths need the model: the node checks
    them itself (``ParamSpec.check(value, joints)``).
    """
    values = {}
    for spec in specs:
        param = _declare(node, spec)
        if param.type_ == Parameter.Type.NOT_SET:     # no override given: the default
            node.set_parameters([Parameter(spec.name, Parameter.Type(spec.type), spec.default)])
        values[spec.name] = node.get_parameter(spec.name).value
        spec.check(values[spec.name])
        if spec.bounded or spec.read_only:
            node.set_descriptor(spec.name, descriptor(spec))
    by_name = {spec.name: spec for spec in specs}
    node.add_pre_set_parameters_callback(lambda params: _words_for_bools(by_name, params))
    return values


def _declare(node: Node, spec: ParamSpec) -> Parameter:
    """Declare one table parameter (start-up descriptor): its override if it has the
    spec's type, the allowed word for a boolean override of a string (``off``), else
    ParameterTypeError with the hint of ParamSpec.type_hint."""
    kind = Parameter.Type(spec.type)
    # An empty list does not tell its type: declare those by type, then set them.
    untyped_default = isinstance(spec.default, list) and not spec.default
    start = kind if untyped_default else spec.default
    try:
        return node.declare_parameter(spec.name, start, descriptor(spec, final=False))
    except InvalidParameterTypeException:
        pass
    # The override has another type: read it through a dynamically typed declaration.
    given = node.declare_parameter(spec.name, None,
                                   ParameterDescriptor(dynamic_typing=True)).value
    node.undeclare_parameter(spec.name)
    word = spec.word_for_bool(given)
    if word is None:
        raise ParameterTypeError(spec.name, f"must be of type {kind.name}: "
                                            f"{spec.type_hint(given)}") from None
    return node.declare_parameter(spec.name, word, descriptor(spec, final=False),
                                  ignore_override=True)


def _words_for_bools(specs: dict, params: list) -> list:
    """Pre-set callback: a bool sent for a string parameter whose choices hold exactly one
    word YAML reads as that bool (``ros2 param set ... mode off``) becomes that word."""
    out = []
    for p in params:
        spec = specs.get(p.name)
        word = spec.word_for_bool(p.value) if spec is not None else None
        out.append(p if word is None else Parameter(p.name, Parameter.Type.STRING, word))
    return out
