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
  ``choices``, ``min_items``, ``length``, ``unique`` names; element-wise for arrays;
  with the model's joint names also ``per_joint`` lengths. It raises
  :class:`ParameterValueError` naming the parameter;
- reading: ``manip_dynamics.nodes.runner.table_values(node, specs)`` gives every current
  value by name (an unset array as ``[]``), and :meth:`ParamSpec.joint_values` turns a
  per-joint array into one float per joint (broadcasting a single value).

An empty array means "unset, use the default the description gives" (a ROS 2 parameter
file cannot express an empty list); it is allowed unless ``min_items`` says otherwise.

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
from typing import Any, Mapping, Optional, Sequence

from manip_dynamics.core.errors import ManipDynamicsError

# YAML 1.1 (and rcl's parameter parser, for ``-p name:=value``) reads these unquoted words
# as booleans, each in lower case, Capitalised or UPPER case (rcl: also y / n; mixed case
# stays a string): ``-p mode:=off`` arrives as the boolean false, ``ros2 param set ... mode
# off`` as a SetParameters request holding a bool.
YAML_BOOL_WORDS = {True: ("y", "yes", "true", "on"), False: ("n", "no", "false", "off")}
# kind -> rcl_interfaces/ParameterType value (PARAMETER_BOOL = 1, ... as in the .msg)
TYPE_OF_KIND = {"bool": 1, "integer": 2, "double": 3, "string": 4, "double_array": 8,
                "string_array": 9}
KINDS = tuple(TYPE_OF_KIND)
# per_joint: "each" = exactly one value per joint (model order); "one_or_each" = one value
# for every joint, or one per joint.
PER_JOINT = ("", "each", "one_or_each")


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
    min_items: the least number of elements of an array. length: the number of elements
    a non-empty array must have. unique: a string array of non-empty names, each at most
    once. per_joint: one of PER_JOINT (judged when the joints are known). constraints:
    prose for what the fields above cannot say (published with the bounds).
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
    length: Optional[int] = None
    unique: bool = False
    per_joint: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"parameter {self.name}: kind {self.kind!r} is not one of {KINDS}")
        if self.per_joint not in PER_JOINT:
            raise ValueError(f"parameter {self.name}: per_joint {self.per_joint!r} is not "
                             f"one of {PER_JOINT}")

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
        if self.length is not None:
            parts.append(f"{self.length} values")
        elif self.min_items:
            parts.append(f"at least {self.min_items} value{'s' if self.min_items > 1 else ''}")
        if self.per_joint:
            parts.append({"each": "one value per joint",
                          "one_or_each": "1 value (all joints) or one per joint"}[self.per_joint])
        if self.unique:
            parts.append("non-empty names, no duplicates")
        if self.kind.endswith("_array") and parts:
            parts[0] = "each " + parts[0] if self.bounded else parts[0]
        return ", ".join(parts)

    def word_for_bool(self, value: bool) -> Optional[str]:
        """The one allowed choice of this string parameter that YAML 1.1 reads as the
        boolean ``value`` (e.g. 'off' for False when 'off' is a choice), or None (not a
        string parameter with choices, or no such choice, or more than one)."""
        if self.kind != "string" or not isinstance(value, bool):
            return None
        words = [c for c in self.choices
                 if c.lower() in YAML_BOOL_WORDS[value] and c in (c.lower(), c.capitalize(),
                                                                  c.upper())]
        return words[0] if len(words) == 1 else None

    def type_hint(self, value) -> str:
        """Why ``value`` (of the wrong type for this parameter) is refused, in words that
        match the mistake: a boolean read from an unquoted on/off/yes/no/true/false for a
        string, an integer for a double, a number for a string, a word for a bool."""
        first = _first(value)
        if self.kind in ("string", "string_array") and isinstance(first, bool):
            words = YAML_BOOL_WORDS[first]
            said = (f"got the boolean {str(first).lower()}: YAML reads an unquoted "
                    f"{'/'.join(words)} as a boolean")
            if self.choices:
                return f"{said}; write one of {', '.join(self.choices)}"
            return f"{said}; quote the word, e.g. -p '{self.name}:=\"{words[-1]}\"'"
        if isinstance(first, bool):
            return f"got the boolean {str(first).lower()}"
        if self.kind in ("double", "double_array") and isinstance(first, int):
            return ("got an integer: write doubles with a decimal point, e.g. 1.0 or "
                    "[0.0, 0.0, -9.81]")
        if self.kind in ("string", "string_array") and isinstance(first, (int, float)):
            return f"got the number {first!r}: quote it, e.g. -p '{self.name}:=\"{first}\"'"
        if self.kind == "bool":
            return f"got {value!r}: write true or false"
        return f"got {value!r} ({type(value).__name__})"

    def constraints_text(self) -> str:
        """What ParameterDescriptor.additional_constraints says: bounds, then prose."""
        return "; ".join(t for t in (self.bounds_text(), self.constraints) if t)

    def check(self, value, joints: Optional[Sequence[str]] = None) -> None:
        """ParameterValueError naming this parameter if ``value`` breaks the table's rules.

        ``joints``: the model's joint names, to judge a ``per_joint`` length (skipped when
        None)."""
        if self.choices and value not in self.choices:
            raise ParameterValueError(self.name, f"{value!r} is not one of {self.choices}")
        if self.kind.endswith("_array"):
            items = list(value or [])
            self._check_length(items, joints)
            if self.kind == "double_array":
                for i, x in enumerate(items):
                    x = float(x)
                    if not math.isfinite(x):
                        raise ParameterValueError(self.name,
                                                  f"element {i} is {x} (must be finite)")
                    self._check_bounds(x, f"element {i} ({x})")
            if self.unique:
                self._check_unique(items)
        elif self.kind in ("double", "integer"):
            x = float(value)
            if not math.isfinite(x):
                raise ParameterValueError(self.name, f"{value} is not finite")
            self._check_bounds(x, f"{value}")

    def joint_values(self, value, joints: Sequence[str], default=None) -> list:
        """This per-joint array as one float per joint of ``joints``: empty -> ``default``
        (None: []), one value of a 'one_or_each' array -> that value for every joint.
        ParameterValueError if ``value`` breaks the table's rules for these joints."""
        self.check(value, joints)
        items = [float(x) for x in (value or [])]
        if not items:
            return [float(x) for x in (default if default is not None else [])]
        return items * len(joints) if len(items) == 1 else items

    def _check_length(self, items: list, joints: Optional[Sequence[str]]) -> None:
        if not items and not self.min_items:
            return                                  # unset: the default applies
        if self.length is not None and len(items) != self.length:
            raise ParameterValueError(self.name, f"needs {self.length} values, got {len(items)}")
        if len(items) < self.min_items:
            raise ParameterValueError(self.name, f"needs at least {self.min_items} "
                                                 f"value(s), got {len(items)}")
        if self.per_joint and joints is not None:
            n = len(joints)
            allowed = (n,) if self.per_joint == "each" else tuple(sorted({1, n}))
            if len(items) not in allowed:
                raise ParameterValueError(
                    self.name, f"expected {' or '.join(map(str, allowed))} values (joints "
                               f"{', '.join(joints)}), got {items}")

    def _check_unique(self, items: list) -> None:
        for i, item in enumerate(items):
            if not item:
                raise ParameterValueError(self.name, f"element {i} is an empty name")
            if item in items[:i]:
                raise ParameterValueError(
                    self.name, f"{item!r} is listed twice (no duplicates allowed)")

    def _check_bounds(self, x: float, what: str) -> None:
        low, high = self.low, self.high
        if low is not None and (x < low or (self.low_open and x == low)):
            sign = " (negative)" if x < 0 <= low else ""
            raise ParameterValueError(
                self.name, f"{what} must be {'>' if self.low_open else '>='} {low:g}{sign}")
        if high is not None and x > high:
            raise ParameterValueError(self.name, f"{what} must be <= {high:g}")


def _first(value):
    """The value itself, or the first element of a list / tuple (None if empty)."""
    if isinstance(value, (list, tuple)):
        return value[0] if value else None
    return value


def check_table(specs: Mapping[str, ParamSpec], values: Mapping[str, Any],
                joints: Optional[Sequence[str]] = None) -> None:
    """Check every value of ``values`` that has a spec (per-joint lengths too when
    ``joints`` is given); the first failure raises."""
    for name, value in values.items():
        spec = specs.get(name)
        if spec is not None:
            spec.check(value, joints)
