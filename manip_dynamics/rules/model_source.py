"""Where the dynamics node's robot model comes from, and the state each change leads to.

Sources, by precedence: the ``robot_description`` parameter, else the ``urdf_file``
parameter, else the last description received on the ``robot_description`` topic.

One path builds every state (:meth:`ModelSource.fit`): parse the description (a small
cache of recent parses), judge ``root_link`` against the whole URDF, parse it rooted
there, judge the other parameters naming links / joints against that model, apply the
dynamics side file (armature, friction, drive gains: ``dynamics_file``,
:func:`side_file_path`), then gravity, friction and payload (:func:`make_snapshot`). It
runs in one of two modes:

- strict (a parameter change, :meth:`ModelSource.for_parameters`): the first misfit
  refuses the change with a :class:`ParameterValueError` naming the parameter;
- lenient (a new description, :meth:`ModelSource.for_description`): a description
  cannot be refused for not fitting the parameters (it is what the robot is), so each
  misfit parameter goes back to its default and is reported in ``resets``.

No rclpy here: warnings of the parser go to the ``warn`` callable given at construction.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional

from manip_dynamics.core.dynamics.description import load_description
from manip_dynamics.core.errors import ManipDynamicsError, MissingDependencyError, URDFError
from manip_dynamics.core.dynamics.model import RobotModel
from manip_dynamics.core.dynamics.side_file import load_side_file, side_file_beside
from manip_dynamics.rules.dynamics_parameters import (SPECS, ParameterValueError,
                                                      make_snapshot, model_conflicts)
from manip_dynamics.rules.snapshot import Snapshot

PARSE_CACHE_SIZE = 4      # recent (xml, root_link) parses kept, for quick switches


@dataclass(frozen=True)
class Applied:
    """What the node's callbacks see: the snapshot and the parameter values it was built from."""

    snapshot: Optional[Snapshot]
    base_model: Optional[RobotModel]          # as parsed (rooted), with the side file,
                                              # before gravity etc.
    values: Mapping[str, Any]
    origin: str = ""                          # where the robot description came from
                                              # (and the side file, if one is applied)
    resets: Mapping[str, str] = field(default_factory=dict)   # lenient mode: name -> reason
    side_file: Optional[str] = None           # the side file applied (path), if any


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


NO_SIDE_FILE = "none"      # dynamics_file value: no side file, not even the one beside


def side_file_path(values: Mapping[str, Any], desc: Description) -> Optional[str]:
    """The side file ``values`` select for ``desc``: ``dynamics_file`` if set ('none':
    None), else ``<name>.dynamics.yaml`` beside ``urdf_file`` when the description comes from
    that file and the side file exists, else None."""
    chosen = values.get("dynamics_file", "")
    if chosen:
        return None if chosen == NO_SIDE_FILE else chosen
    if desc.responsible == "urdf_file" and values.get("urdf_file"):
        beside = side_file_beside(values["urdf_file"])
        return str(beside) if beside.is_file() else None
    return None


class ModelSource:
    """The robot-model rules of the dynamics node (see the module docstring)."""

    def __init__(self, warn: Callable[[str], None] = lambda text: None):
        self._warn = warn
        self._parsed: dict[tuple[str, str], RobotModel] = {}
        self._sided: dict[tuple, RobotModel] = {}   # (xml, root, file, size, mtime) -> model
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
        base, side_file, gain = self._with_side_file(base, desc, values, misfit)
        for name, reason in model_conflicts(values, base).items():
            misfit(name, reason)
        try:
            snapshot = make_snapshot(base, values, gain)
        except ManipDynamicsError as exc:      # e.g. the core refusing the payload here
            misfit("payload.frame", str(exc))
            snapshot = make_snapshot(base, values, gain)
        origin = desc.origin + (f" with side file {side_file}" if side_file else "")
        return Applied(snapshot, base, MappingProxyType(values), origin,
                       MappingProxyType(resets), side_file)

    def _with_side_file(self, base: RobotModel, desc: Description, values: dict[str, Any],
                        misfit: Callable[[str, str], None]) -> tuple:
        """(``base`` with the side file :func:`side_file_path` selects (armature, friction),
        that file or None, its drive gains (n,) or None). The same model object while the
        file is unchanged (its path, size and modification time), so a parameter change is
        no new model. A file that cannot be used is a misfit of ``dynamics_file``; in the
        lenient mode it becomes 'none' (not the default '', which may select it again)."""
        path = side_file_path(values, desc)
        if path is None:
            return base, None, None
        try:
            st = os.stat(path)
            key = (desc.xml, values["root_link"], path, st.st_size, st.st_mtime_ns)
            sided = self._sided.get(key)
            if sided is None:
                side = load_side_file(path, base)
                sided = (side.model, side.drive_gain)
        except OSError as exc:
            return self._side_file_misfit(base, values, misfit,
                                          f"cannot read side file {path!r}: {exc.strerror}")
        except ManipDynamicsError as exc:
            return self._side_file_misfit(base, values, misfit, str(exc))
        if len(self._sided) >= PARSE_CACHE_SIZE:
            self._sided.pop(next(iter(self._sided)))
        self._sided[key] = sided
        return sided[0], path, sided[1]

    @staticmethod
    def _side_file_misfit(base, values, misfit, reason):
        misfit("dynamics_file", reason)          # strict: raises ParameterValueError
        values["dynamics_file"] = NO_SIDE_FILE
        return base, None, None
