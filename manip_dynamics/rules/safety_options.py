"""The dynamics node's collaborative-safety options (``safety.*`` parameters), judged
without ROS: the body model and region, the extra monitored points, the contact area.

``safety.points`` entries are ``link`` (the link's origin) or ``link:x,y,z`` (a point in
the link's axes, m). A body model is read once per file and modification time.
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Any, Mapping

from manip_dynamics.core.errors import ManipDynamicsError
from manip_dynamics.rules.parameter_table import ParameterValueError
from manip_dynamics.safety import BodyModel, MonitoredPoint


@dataclass(frozen=True)
class SafetyOptions:
    """enabled, rate (Hz, 0: every computed state), region (a BodyRegion), contact_area
    (m^2 or None), points (extra (link, (x, y, z)) pairs), markers (bool)."""
    enabled: bool
    rate: float
    region: Any
    contact_area: Any
    points: tuple
    markers: bool


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> BodyModel:
    return BodyModel.load(path or None)


def body_model(path: str) -> BodyModel:
    """The body model at ``path`` ('' = the packaged ISO/TS 15066 table), cached."""
    if not path:
        return _load("", 0.0)
    try:
        mtime = os.stat(path).st_mtime
    except OSError as exc:
        raise ParameterValueError("safety.body_model",
                                  f"cannot read {path!r}: {exc.strerror}") from None
    try:
        return _load(path, mtime)
    except ManipDynamicsError as exc:
        raise ParameterValueError("safety.body_model", str(exc)) from None


def parse_point(text: str, index: int):
    """'link' -> (link, (0, 0, 0)); 'link:x,y,z' -> (link, (x, y, z)). ParameterValueError."""
    link, sep, rest = text.partition(":")
    if not link.strip():
        raise ParameterValueError("safety.points", f"entry {index} {text!r} names no link")
    if not sep:
        return link.strip(), (0.0, 0.0, 0.0)
    try:
        xyz = tuple(float(x) for x in rest.split(","))
    except ValueError:
        xyz = ()
    if len(xyz) != 3 or not all(math.isfinite(x) for x in xyz):
        raise ParameterValueError("safety.points", f"entry {index} {text!r}: expected "
                                  "'link' or 'link:x,y,z' with 3 finite numbers (m)")
    return link.strip(), xyz


def options_from_values(values: Mapping[str, Any]) -> SafetyOptions:
    """SafetyOptions from the parameter values; ParameterValueError naming the parameter."""
    model = body_model(values["safety.body_model"])
    region_key = values["safety.body_region"]
    if region_key not in model:
        raise ParameterValueError("safety.body_region", f"{region_key!r} is not a region of "
                                  f"the body model (regions: {', '.join(model.keys())})")
    area = float(values["safety.contact_area"])
    points = tuple(parse_point(t, i) for i, t in enumerate(values["safety.points"]))
    return SafetyOptions(bool(values["safety.enabled"]), float(values["safety.rate"]),
                         model[region_key], area if area > 0 else None, points,
                         bool(values["safety.markers"]))


def point_conflicts(values: Mapping[str, Any], frames) -> dict:
    """safety.points naming links the model lacks -> {parameter: reason}."""
    for i, text in enumerate(values["safety.points"]):
        link = parse_point(text, i)[0]
        if link not in frames:
            return {"safety.points": f"entry {i}: link {link!r} is not in the robot model"}
    return {}


def monitored_extra(options: SafetyOptions):
    """The extra points as MonitoredPoint (labels 'link' or 'link+[x, y, z]')."""
    return [MonitoredPoint(link, xyz, link if xyz == (0.0, 0.0, 0.0)
                           else f"{link}+[{xyz[0]:g}, {xyz[1]:g}, {xyz[2]:g}]")
            for link, xyz in options.points]
