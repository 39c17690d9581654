"""Where the dynamics node's robot model comes from, and the state each change leads to.

Sources, by precedence: the ``robot_description`` parameter, else the ``urdf_file``
parameter, else the last description received on the ``robot_description`` topic.

One path builds every state (:meth:`ModelSource.fit`): parse the description (a small
cache of recent parses), judge ``root_link`` against the whole URDF, parse it rooted
there, judge the other parameters naming links / joints against that model, apply
gravity, friction and payload (:func:`make_snapshot`). It runs in one of two modes:

- strict (a parameter change, :meth:`ModelSource.for_parameters`): the first misfit
  refuses the change with a :class:`ParameterValueError` naming the parameter;
- lenient (a new description, :meth:`ModelSource.for_description`): a description
  cannot be refused for not fitting the parameters (it is what the robot is), so each
  misfit parameter goes back to its default and is reported in ``resets``.

No rclpy here: warnings of the parser go to the ``warn`` callable given at construction.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional

from manip_dynamics.core.dynamics.description import load_description
from manip_dynamics.core.errors import ManipDynamicsError, MissingDependencyError, URDFError
from manip_dynamics.core.dynamics.model import RobotModel
from manip_dynamics.rules.dynamics_parameters import (SPECS, ParameterValueError,
                                                      make_snapshot, model_conflicts)
from manip_dynamics.rules.snapshot import Snapshot

PARSE_CACHE_SIZE = 4      # recent (xml, root_link) parses kept, for quick switches


@dataclass(frozen=True)
class Applied:
    """What the node's callbacks see: the snapshot and the parameter values it was built from."""

    snapshot: Optional[Snapshot]
    base_model: Optional[RobotModel]          # as parsed (rooted), before gravity etc.
    values: Mapping[str, Any]
    origin: str = ""                          # where the robot description came from
    resets: Mapping[str, str] = field(default_factory=dict)   # lenient mode: name -> reason


@dataclass(frozen=True)
class Description:
    """A robot description and where it came from."""

    xml: str
    origin: str          # e.g. "parameter robot_description", "file arm.urdf"
    responsible: str     # the parameter a broken description is blamed on


def read_text(path: str, xacro_args: str = "") -> str:
    """The URDF text of ``path`` (a xacro file expanded with ``xacro_args``);
    ParameterValueError on urdf_file if it cannot be read or expanded (MissingExtraError
    included: a xacro file without the xacro extra installed)."""
    try:
        return load_description(path, xacro_args or None)
    except (URDFError, MissingDependencyError) as exc:
        raise ParameterValueError("urdf_file", str(exc))


class ModelSource:
    """The robot-model rules of the dynamics node (see the module docstring)."""

    def __init__(self, warn: Callable[[str], None] = lambda text: None):
        self._warn = warn
        self._parsed: dict[tuple[str, str], RobotModel] = {}
        self.topic_xml: Optional[str] = None     # last description received on the topic

    def description(self, values: Mapping[str, Any]) -> Optional[Description]:
        """The description ``values`` select (None: none yet). ParameterValueError if the
        urdf_file cannot be read."""
        if values["robot_description"]:
            return Description(values["robot_description"], "parameter robot_description",
                               "robot_description")
        if values["urdf_file"]:
            return Description(read_text(values["urdf_file"], values.get("xacro_args", "")),
                               f"file {values['urdf_file']}", "urdf_file")
        if self.topic_xml is not None:
            return Description(self.topic_xml, "topic robot_description", "robot_description")
        return None

    def parse(self, xml: str, root_link: str = "") -> RobotModel:
        """RobotModel of ``xml`` rooted at ``root_link`` ('' = the URDF's root); the core's
        errors propagate, as URDFError a description with no movable joint."""
        key = (xml, root_link)
        model = self._parsed.get(key)
        if model is None:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model = RobotModel.from_urdf_string(xml, root_link=root_link or None)
            if model.n == 0:      # the core accepts it; the node would publish empty messages
                raise URDFError("the robot description has no movable joints (every joint "
                                "is fixed): there are no dynamics to compute")
            for warning in caught:              # e.g. MasslessLinkWarning
                self._warn(f"robot description: {warning.message}")
            if len(self._parsed) >= PARSE_CACHE_SIZE:
                self._parsed.pop(next(iter(self._parsed)))
            self._parsed[key] = model
        return model

    def for_parameters(self, values: dict[str, Any], current: Applied) -> Applied:
        """Strict: the state for new parameter ``values``, or ParameterValueError."""
        desc = self.description(values)
        if desc is None:
            if current.snapshot is not None:
                raise ParameterValueError(
                    "robot_description", "this leaves no robot description (nothing "
                    "received on the robot_description topic)")
            return Applied(None, None, MappingProxyType(values))
        try:
            self.parse(desc.xml)
        except ManipDynamicsError as exc:
            raise ParameterValueError(desc.responsible,
                                      f"robot description from {desc.origin}: {exc}")
        return self.fit(desc, dict(values), strict=True)

    def for_description(self, desc: Description, values: Mapping[str, Any]) -> Applied:
        """Lenient: the state for a new (parseable) description; misfit parameters reset."""
        return self.fit(desc, dict(values), strict=False)

    def fit(self, desc: Description, values: dict[str, Any], strict: bool) -> Applied:
        """The one path from a parseable description and parameter values to a state."""
        resets: dict[str, str] = {}

        def misfit(name: str, reason: str) -> None:
            if strict:
                raise ParameterValueError(name, reason)
            resets[name] = reason
            values[name] = SPECS[name].default

        full = self.parse(desc.xml)
        root_conflict = model_conflicts(values, full, urdf_links=full.frame_names)
        if "root_link" in root_conflict:
            misfit("root_link", root_conflict["root_link"])
        try:
            base = self.parse(desc.xml, values["root_link"])
        except ManipDynamicsError as exc:     # e.g. nothing movable below that link
            misfit("root_link", f"robot description rooted at {values['root_link']!r}: {exc}")
            base = self.parse(desc.xml, values["root_link"])
        for name, reason in model_conflicts(values, base).items():
            misfit(name, reason)
        try:
            snapshot = make_snapshot(base, values)
        except ManipDynamicsError as exc:      # e.g. the core refusing the payload here
            misfit("payload.frame", str(exc))
            snapshot = make_snapshot(base, values)
        return Applied(snapshot, base, MappingProxyType(values), desc.origin,
                       MappingProxyType(resets))
