"""The parameter-table idiom of the nodes: every parameter declared once, with its bounds.

A node lists its parameters as a tuple of :class:`ParamSpec` (name, kind, default,
description, bounds); everything else is derived from that one table:

- declaration: ``manip_dynamics.nodes.runner.declare_table(node, specs)`` declares each
  parameter with a ``ParameterDescriptor`` built from its spec (description, read-only,
  ``additional_constraints`` = :meth:`ParamSpec.constraints_text`, and for a bounded
  double / integer a ``FloatingPointRange`` / ``IntegerRange``, which rclpy then enforces
  on every change, inclusive of the ends);
- validation: :meth:`ParamSpec.check` (or :func:`check_table` for a whole dict of
  values) enforces the same bounds in plain Python: finiteness, ``low`` / ``high``
  (``low_open`` makes the lower bound strict, which a descriptor range cannot say),
  ``choices``, ``min_items``; element-wise for arrays. It raises
  :class:`ParameterValueError` naming the parameter.

Adopting it in a node::

    PARAMETERS = (ParamSpec("rate", "double", 100.0, "Publish rate [Hz].", low=0.0,
                            low_open=True), ...)
    values = declare_table(self, PARAMETERS)          # start-up values, checked
    ... on-set callback: check_table(SPECS, new_values) -> refuse with str(exc)

Rules that relate several parameters, or a parameter and the robot model, stay with the
node's own checks (e.g. :mod:`manip_dynamics.rules.dynamics_parameters`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from manip_dynamics.core.errors import ManipDynamicsError

# kind -> rcl_interfaces/ParameterType value (PARAMETER_BOOL = 1, ... as in the .msg)
TYPE_OF_KIND = {"bool": 1, "integer": 2, "double": 3, "string": 4, "double_array": 8,
                "string_array": 9}
KINDS = tuple(TYPE_OF_KIND)


class ParameterValueError(ManipDynamicsError, ValueError):
    """A parameter value a node refuses; ``name`` is the parameter at fault."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


class ParameterTypeError(ParameterValueError):
    """A value of the wrong type for its parameter (e.g. an integer list for doubles)."""

    def __init__(self, name: str, reason: str):
        super().__init__(name, reason)
        self.args = (f"parameter {name} {reason}",)


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: what it is, its default, and the bounds every value must meet.

    kind: one of KINDS. low / high: bounds of a double or integer (element-wise for a
    double array); low_open: value > low instead of >= low. choices: the allowed strings.
    min_items: the least number of elements of an array. constraints: prose for what the
    fields above cannot say (published with the bounds).
    """

    name: str
    kind: str
    default: Any
    description: str
    constraints: str = ""
    read_only: bool = False
    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    choices: tuple = ()
    min_items: int = 0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"parameter {self.name}: kind {self.kind!r} is not one of {KINDS}")

    @property
    def type(self) -> int:
        """The rcl_interfaces/ParameterType value of this kind."""
        return TYPE_OF_KIND[self.kind]

    @property
    def bounded(self) -> bool:
        return self.low is not None or self.high is not None

    def bounds_text(self) -> str:
        """The bounds in words, e.g. '> 0, finite' or '0 <= value <= 1'."""
        parts = []
        if self.low is not None and self.high is not None:
            parts.append(f"{self.low:g} {'<' if self.low_open else '<='} value <= {self.high:g}")
        elif self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        elif self.high is not None:
            parts.append(f"<= {self.high:g}")
        if self.kind in ("double", "double_array") and self.bounded:
            parts.append("finite")
        if self.choices:
            parts.append("one of " + ", ".join(repr(c) for c in self.choices))
        if self.min_items:
            parts.append(f"at least {self.min_items} value{'s' if self.min_items > 1 else ''}")
        if self.kind.endswith("_array") and parts:
            parts[0] = "each " + parts[0] if self.bounded else parts[0]
        return ", ".join(parts)

    def constraints_text(self) -> str:
        """What ParameterDescriptor.additional_constraints says: bounds, then prose."""
        return "; ".join(t for t in (self.bounds_text(), self.constraints) if t)

    def check(self, value) -> None:
        """ParameterValueError naming this parameter if ``value`` breaks the table's bounds."""
        if self.choices and value not in self.choices:
            raise ParameterValueError(self.name, f"{value!r} is not one of {self.choices}")
        if self.kind.endswith("_array"):
            items = list(value or [])
            if len(items) < self.min_items:
                raise ParameterValueError(self.name, f"needs at least {self.min_items} "
                                                     f"value(s), got {len(items)}")
            if self.kind == "double_array":
                for i, x in enumerate(items):
                    x = float(x)
                    if not math.isfinite(x):
                        raise ParameterValueError(self.name,
                                                  f"element {i} is {x} (must be finite)")
                    self._check_bounds(x, f"element {i} ({x})")
        elif self.kind in ("double", "integer"):
            x = float(value)
            if not math.isfinite(x):
                raise ParameterValueError(self.name, f"{value} is not finite")
            self._check_bounds(x, f"{value}")

    def _check_bounds(self, x: float, what: str) -> None:
        low, high = self.low, self.high
        if low is not None and (x < low or (self.low_open and x == low)):
            sign = " (negative)" if x < 0 <= low else ""
            raise ParameterValueError(
                self.name, f"{what} must be {'>' if self.low_open else '>='} {low:g}{sign}")
        if high is not None and x > high:
            raise ParameterValueError(self.name, f"{what} must be <= {high:g}")


def check_table(specs: Mapping[str, ParamSpec], values: Mapping[str, Any]) -> None:
    """Check every value of ``values`` that has a spec; the first failure raises."""
    for name, value in values.items():
        spec = specs.get(name)
        if spec is not None:
            spec.check(value)
