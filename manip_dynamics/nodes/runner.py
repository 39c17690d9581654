"""What the nodes share: ``main()`` (init, spin on one thread, clean shutdown), declaring
a parameter table (:mod:`manip_dynamics.rules.parameter_table`) and reading array
parameters that may be unset."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from manip_dynamics.rules.parameter_table import ParameterTypeError, ParamSpec


def run_node(make_node: Callable[[], Node], args=None,
             fatal: tuple[type[BaseException], ...] = (), name: str = "node") -> int:
    """Build the node with ``make_node()`` and spin it on a SingleThreadedExecutor.

    Ctrl-C and an external shutdown end the spin quietly (exit code 0). An exception of a
    type in ``fatal`` raised while building the node (a bad start-up configuration) is
    logged as FATAL ``cannot start: ...`` under the logger ``name`` and gives exit
    code 2. The node is always destroyed and rclpy shut down.
    """
    rclpy.init(args=args)
    node = None
    try:
        node = make_node()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except fatal as exc:
        rclpy.logging.get_logger(name).fatal(f"cannot start: {exc}")
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


def array_parameter(node: Node, name: str) -> list:
    """The value of an array parameter as a list; [] when it is unset (a ROS 2 parameter
    file cannot express an empty list, so "unset" is how an empty default arrives)."""
    p = node.get_parameter_or(name, None)
    if p is None or p.type_ == Parameter.Type.NOT_SET or p.value is None:
        return []
    return list(p.value)


def descriptor(spec: ParamSpec, with_range: bool = True) -> ParameterDescriptor:
    """The ParameterDescriptor of a table entry: description, read-only, constraints in
    words and, for a bounded double / integer, its FloatingPointRange / IntegerRange
    (inclusive ends; a strict ``low_open`` bound is enforced by ParamSpec.check)."""
    d = ParameterDescriptor(name=spec.name, type=spec.type, description=spec.description,
                            additional_constraints=spec.constraints_text(),
                            read_only=spec.read_only)
    if with_range and spec.bounded and spec.kind == "double":
        d.floating_point_range = [FloatingPointRange(
            from_value=-math.inf if spec.low is None else float(spec.low),
            to_value=math.inf if spec.high is None else float(spec.high), step=0.0)]
    elif with_range and spec.bounded and spec.kind == "integer":
        big = 2 ** 63 - 1
        d.integer_range = [IntegerRange(
            from_value=-big - 1 if spec.low is None else int(spec.low),
            to_value=big if spec.high is None else int(spec.high), step=0)]
    return d


def declare_table(node: Node, specs: Sequence[ParamSpec]) -> dict[str, Any]:
    """Declare every parameter of the table on ``node``; -> {name: start-up value}.

    Each start-up value (default or override) is checked by its spec: ParameterTypeError
    (wrong type) or ParameterValueError (out of bounds), naming the parameter. A bounded parameter's
    range goes into its descriptor once its value is known to fit, so a bad override is
    reported in the table's words, not as rclpy's InvalidParameterValueException.
    """
    values = {}
    for spec in specs:
        kind = Parameter.Type(spec.type)
        # An empty list does not tell its type: declare those by type, then set them.
        untyped_default = isinstance(spec.default, list) and not spec.default
        late_range = spec.bounded and not spec.read_only
        try:
            param = node.declare_parameter(spec.name, kind if untyped_default else spec.default,
                                           descriptor(spec, with_range=not late_range))
        except InvalidParameterTypeException as exc:
            raise ParameterTypeError(
                spec.name, f"must be of type {kind.name} ({exc}); write doubles with a "
                "decimal point, e.g. 1.0 or [0.0, 0.0, -9.81]") from None
        if param.type_ == Parameter.Type.NOT_SET:     # no override given: the default
            node.set_parameters([Parameter(spec.name, kind, spec.default)])
        values[spec.name] = node.get_parameter(spec.name).value
        spec.check(values[spec.name])
        if late_range:
            node.set_descriptor(spec.name, descriptor(spec))
    return values
