"""The dynamics side file: per-joint terms a URDF has no field for (docs/side_file.md).

A YAML file beside the robot description, by default ``<name>.dynamics.yaml`` for
``<name>.urdf`` / ``<name>.urdf.xacro`` / ``<name>.xacro`` (:func:`side_file_beside`)::

    version: 1
    joints:
      shoulder_lift_joint:
        armature: 3.7434          # kg m^2 (kg on a prismatic joint): M = M_rigid + diag
        friction:
          viscous: 20.2209        # N m s/rad (N s/m)
          coulomb: 13.2656        # N m (N), both directions; or coulomb_positive (qd > 0)
                                  # and coulomb_negative (qd < 0, the magnitude)
          offset: -0.7535         # N m (N), any sign (default 0)
          width: 0.0              # rad/s (m/s): tanh(qd / width) for sign(qd); 0 = sign
        drive_gain: 10.6956       # N m/A (N/A): torque = drive_gain * effort as measured

The friction torque (RobotModel.friction_torques, model.friction_torque)::

    tau_fr = viscous qd + c(qd) s(qd) + offset,  c = coulomb_positive (qd > 0) or
             coulomb_negative (qd < 0),  s = tanh(qd / width) (width > 0) or sign(qd)

Every key is optional: a joint or a field not listed keeps the model's value (armature 0,
the URDF's ``<dynamics damping friction>``, drive gain 1: the efforts are torques). Joint
names are the model's coordinates (a mimic joint has no entry of its own: its rotor's
inertia, reflected through the mimic multiplier k, is k^2 I on its master's armature).
Values are finite numbers; armature, viscous, the Coulomb terms and width >= 0, drive_gain
> 0, offset of any sign. Files with friction {viscous, coulomb} only (version 1 as first
written) mean the same as before: a symmetric Coulomb term, no offset, sign(qd).

:func:`load_side_file` reads one and returns the model with the armature and friction
applied and the drive gains; every error is one :class:`InputError` line naming the file,
the joint and the field. :func:`write_side_file` writes a model's values (``identify``
writes what it identified); reading what it wrote gives the same numbers, bit for bit.

PyYAML is imported on use (:func:`manip_dynamics.core.extras.import_extra`).
"""
from __future__ import annotations

import math
from collections import namedtuple
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..extras import import_extra

VERSION = 1
FIELDS = ("armature", "friction", "drive_gain")
FRICTION_FIELDS = ("viscous", "coulomb", "coulomb_positive", "coulomb_negative", "offset",
                   "width")
# friction field -> (the values key, lower bound or None for any sign)
_FRICTION_VALUES = {"viscous": ("viscous", 0.0), "coulomb_positive": ("coulomb", 0.0),
                    "coulomb_negative": ("coulomb_negative", 0.0), "offset": ("offset", None),
                    "width": ("width", 0.0)}

SideFile = namedtuple("SideFile", "model drive_gain path")
SideFile.__doc__ = """What :func:`load_side_file` returns: ``model`` (the RobotModel with the
file's armature and friction), ``drive_gain`` (n,) N m/A in q order (1 where the file gives
none), ``path`` (the file read, None for :func:`side_file_from_dict`)."""


def beside_description(description_path, suffix) -> Path:
    """``<dir>/<name><suffix>`` for a robot description ``<dir>/<file>``, ``name`` the file
    name without ``.xacro`` and then ``.urdf`` (``ur10e.urdf`` and ``ur10e.urdf.xacro`` ->
    ``ur10e``)."""
    path = Path(description_path)
    name = path.name
    for ending in (".xacro", ".urdf"):
        if name.endswith(ending) and len(name) > len(ending):
            name = name[:-len(ending)]
    return path.with_name(name + suffix)


def side_file_beside(description_path) -> Path:
    """The default side file of a robot description: ``<dir>/<name>.dynamics.yaml``
    (:func:`beside_description`: ``ur10e.urdf`` and ``ur10e.urdf.xacro`` ->
    ``ur10e.dynamics.yaml``). The file may not exist."""
    return beside_description(description_path, ".dynamics.yaml")


def load_side_file(path, model) -> SideFile:
    """Read the side file at ``path`` and apply it to ``model`` (a RobotModel) -> SideFile.

    InputError, one line naming the file (and the joint and field): unreadable file, not
    YAML, not a mapping, an unknown key or joint, a value of the wrong type, not finite,
    negative (drive_gain: not > 0)."""
    yaml = import_extra("yaml", __name__)         # (PyYAML: only to read a side file)
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as e:
        raise InputError(f"cannot read side file {str(path)!r}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"side file {str(path)!r} is not UTF-8 text") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise InputError(f"side file {str(path)!r} is not valid YAML{where}: {problem}") from None
    return side_file_from_dict(doc, model, source=str(path))._replace(path=path)


def side_file_from_dict(doc, model, source="<dict>") -> SideFile:
    """Apply a parsed side file (the YAML's structure: ``{version: 1, joints: {name:
    {armature, friction: {viscous, coulomb | coulomb_positive, coulomb_negative, offset,
    width}, drive_gain}}}``) to ``model`` -> SideFile."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise InputError(f"side file {source!r}: expected a mapping with 'joints', got "
                         f"{type(doc).__name__}")
    _known_keys(doc, ("version", "joints"), f"side file {source!r}")
    if doc.get("version", VERSION) != VERSION:
        raise InputError(f"side file {source!r}: version {doc['version']!r} is not "
                         f"supported (this reader knows version {VERSION})")
    joints = doc.get("joints") or {}
    if not isinstance(joints, dict):
        raise InputError(f"side file {source!r}: 'joints' must be a mapping of joint names, "
                         f"got {type(joints).__name__}")
    values = {"armature": model.armature.copy(), "viscous": model.viscous.copy(),
              "coulomb": model.coulomb.copy(), "coulomb_negative": model.coulomb_negative.copy(),
              "offset": model.friction_offset.copy(), "width": model.friction_width.copy(),
              "drive_gain": np.ones(model.n)}
    index = {name: j for j, name in enumerate(model.joint_names)}
    for name, entry in joints.items():
        j = _joint_index(name, index, model, source)
        _read_joint(entry, f"side file {source!r}: joint {name!r}", values, j)
    model = model.with_armature(values["armature"]).with_friction(
        values["viscous"], values["coulomb"], values["coulomb_negative"], values["offset"],
        values["width"])
    gain = values["drive_gain"]
    gain.setflags(write=False)
    return SideFile(model, gain, None)


def _joint_index(name, index, model, source):
    if name in index:
        return index[name]
    if name in model.mimic_joint_names:
        raise InputError(f"side file {source!r}: joint {name!r} is a mimic joint (no "
                         "coordinate of its own): give its rotor on its master joint")
    raise InputError(f"side file {source!r}: unknown joint {name!r}; the model's joints: "
                     + ", ".join(model.joint_names))


def _read_joint(entry, where, values, j):
    """The fields of one joint's entry into values[field][j]."""
    if entry is None:
        return
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected a mapping of {', '.join(FIELDS)}, got {entry!r}")
    _known_keys(entry, FIELDS, where)
    if "armature" in entry:
        values["armature"][j] = _number(entry["armature"], f"{where}: armature", 0.0, True)
    if "drive_gain" in entry:
        values["drive_gain"][j] = _number(entry["drive_gain"], f"{where}: drive_gain", 0.0,
                                          False)
    friction = entry.get("friction")
    if friction is None:
        return
    if not isinstance(friction, dict):
        raise InputError(f"{where}: friction must be a mapping of {', '.join(FRICTION_FIELDS)}, "
                         f"got {friction!r}")
    _read_friction(friction, f"{where}: friction", values, j)


def _read_friction(friction, where, values, j):
    """One joint's friction mapping into values[...][j]: ``coulomb`` sets both directions,
    ``coulomb_positive`` / ``coulomb_negative`` one each (not together with ``coulomb``)."""
    _known_keys(friction, FRICTION_FIELDS, where)
    if "coulomb" in friction:
        both = [k for k in ("coulomb_positive", "coulomb_negative") if k in friction]
        if both:
            raise InputError(f"{where}: give coulomb (both directions) or coulomb_positive / "
                             f"coulomb_negative, not coulomb and {both[0]}")
        c = _number(friction["coulomb"], f"{where}.coulomb", 0.0, True)
        values["coulomb"][j] = values["coulomb_negative"][j] = c
    for field, (key, bound) in _FRICTION_VALUES.items():
        if field in friction:
            values[key][j] = (_signed(friction[field], f"{where}.{field}") if bound is None
                              else _number(friction[field], f"{where}.{field}", bound, True))


def _known_keys(mapping, allowed, where):
    unknown = [k for k in mapping if k not in allowed]
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(allowed)})")


def _number(value, where, bound, inclusive):
    """value as a float, finite and >= bound (inclusive) or > bound; InputError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ""
        if isinstance(value, str) and _is_number(value):
            hint = " (YAML reads a number like 1e-3 as text: write 1.0e-3)"
        raise InputError(f"{where} must be a number, got {value!r}{hint}")
    x = float(value)
    if not math.isfinite(x) or (x < bound if inclusive else x <= bound):
        raise InputError(f"{where} = {value!r} must be finite and {'>=' if inclusive else '>'} "
                         f"{bound:g}")
    return x


def _signed(value, where):
    """value as a finite float of any sign; InputError otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(float(value)):
            raise InputError(f"{where} = {value!r} must be finite")
        return float(value)
    return _number(value, where, 0.0, True)        # not a number: raises, with the hint


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def side_file_dict(model, drive_gain=None) -> dict:
    """The side file's structure for ``model``: every coordinate with its armature, friction
    (viscous; coulomb where both directions are equal, else coulomb_positive and
    coulomb_negative; offset; width) and drive gain ((n,) N m/A; None: 1)."""
    gain = np.ones(model.n) if drive_gain is None else np.asarray(drive_gain, dtype=float)
    if gain.shape != (model.n,):
        raise InputError(f"drive_gain must have shape ({model.n},), got {gain.shape}")
    joints = {}
    for j, name in enumerate(model.joint_names):
        g = _number(gain[j].item(), f"drive_gain[{j}] (joint {name!r})", 0.0, False)
        joints[name] = {"armature": float(model.armature[j]),
                        "friction": _friction_dict(model, j), "drive_gain": g}
    return {"version": VERSION, "joints": joints}


def _friction_dict(model, j):
    out = {"viscous": float(model.viscous[j])}
    if model.coulomb[j] == model.coulomb_negative[j]:
        out["coulomb"] = float(model.coulomb[j])
    else:
        out["coulomb_positive"] = float(model.coulomb[j])
        out["coulomb_negative"] = float(model.coulomb_negative[j])
    out["offset"] = float(model.friction_offset[j])
    out["width"] = float(model.friction_width[j])
    return out


def write_side_file(path, model, drive_gain=None, comment=None) -> Path:
    """Write :func:`side_file_dict` as YAML to ``path`` (floats in Python's shortest
    round-trip form: :func:`load_side_file` reads back the same bits); ``comment`` (str,
    optional) goes on top as '#' lines. Returns the path."""
    yaml = import_extra("yaml", __name__)
    text = yaml.safe_dump(side_file_dict(model, drive_gain), sort_keys=False,
                          default_flow_style=False)
    head = "".join(f"# {line}\n" for line in (comment or "").splitlines())
    head += ("# manip_dynamics dynamics side file (docs/side_file.md): armature kg m^2, "
             "friction viscous N m s/rad,\n# coulomb N m, offset N m, width rad/s, drive_gain "
             "N m/A (per unit: kg, N s/m, N, N, m/s,\n# N/A on a prismatic joint)\n")
    path = Path(path)
    path.write_text(head + text)
    return path
