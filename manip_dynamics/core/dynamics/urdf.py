"""URDF -> kinematic tree (the frozen structure the algorithms run on).

``parse_urdf(xml, root_link)`` validates the description and returns a ``Structure``:
one *body* per moving joint (revolute, continuous, prismatic, including mimic joints).
Links attached by ``fixed`` joints are merged into the body they hang from (their
inertia is lumped; their frame stays available as a fixed offset). Links merged into the
root (the fixed base) carry no dynamics.

Packed arrays (read by the numba kernels in :mod:`manip_dynamics.core.dynamics.kernels`), body
``i`` in depth-first order, its parent body ``parent[i] < i`` (``-1`` = root):

- ``topo`` int64 (nb, 3): ``parent, jtype (0 revolute, 1 prismatic), master``.
  ``master`` is the q index driving the body's joint:
  ``q_full[i] = mult[i] * q[master[i]] + offset[i]``.
- ``geom`` float64 (nb, 17): ``axis (3, unit, joint frame), R_tree (9, row-major),
  p_tree (3), mult, offset``; ``X_parent_body(q) = (R_tree, p_tree) * joint(q)``.
- ``inert`` float64 (nb, 13): ``mass, com (3, body frame), I_com (9, body axes,
  about the com, row-major)``.

:func:`parse_urdf` runs in named stages, each linear in the number of links and joints and
iterative (no recursion on the description, so a chain of any depth and a mimic chain of
any length load): read the XML (:func:`_read`), collect and validate links and joints
(:func:`_collect`), check the tree and find the root (:func:`_check_tree`), order the
joints depth-first (:func:`_depth_first`), read each joint (:func:`_read_joints`), resolve
mimic chains (:func:`_resolve_mimic`), apply the inertia policy and lump the inertias
(:func:`_lump_inertias`, rules in :mod:`manip_dynamics.core.dynamics.inertia`), pack the arrays.
"""
from __future__ import annotations

import math
import re
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from . import inertia as inertia_rules
from ..errors import InertiaWarning, MasslessLinkWarning, UnsupportedJointError, URDFError

MOVING = ("revolute", "continuous", "prismatic")
KNOWN = MOVING + ("fixed", "floating", "planar")
REVOLUTE, PRISMATIC = 0, 1


@dataclass(frozen=True)
class Structure:
    """Parsed, validated, frozen kinematic tree (see module docstring for the arrays)."""

    root_link: str
    joint_names: tuple          # independent coordinates, q order
    full_joint_names: tuple     # one per body (includes mimic joints)
    body_links: tuple           # link name of each body
    topo: np.ndarray
    geom: np.ndarray
    inert: np.ndarray           # without payloads
    frames: dict                # link name -> (body index or -1, X_body_link 4x4)
    frame_names: tuple
    default_tip: str
    effort_limits: np.ndarray
    velocity_limits: np.ndarray
    position_lower: np.ndarray
    position_upper: np.ndarray
    viscous: np.ndarray
    coulomb: np.ndarray
    has_mimic: bool


# ----------------------------------------------------------------------------- parsing
# a decimal number as URDF writes it (ASCII digits only: Python's float() also takes
# "1_000", "\u0663" (Arabic-Indic 3) and full-width digits, which no URDF reader accepts);
# inf / nan pass here and are refused as not finite below
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)",
                     re.ASCII | re.IGNORECASE)


def _floats(elem, attr, count, default, where):
    """The ``count`` numbers of attribute ``attr`` of ``elem`` (``default`` if absent).
    URDFError naming ``where`` for xacro, non-numbers, a wrong count, inf or NaN."""
    text = elem.get(attr) if elem is not None else None
    if text is None:
        return np.array(default, dtype=float)
    if "${" in text or "$(" in text:
        raise URDFError(f"{where}: attribute {attr}={text!r} is an unexpanded xacro expression; "
                        "run xacro on the file first")
    tokens = text.split()
    if not all(_NUMBER.fullmatch(s) for s in tokens):
        raise URDFError(f"{where}: attribute {attr}={text!r} is not a list of numbers")
    vals = [float(s) for s in tokens]
    if len(vals) != count:
        raise URDFError(f"{where}: attribute {attr}={text!r} needs {count} numbers")
    if not all(math.isfinite(v) for v in vals):
        raise URDFError(f"{where}: attribute {attr}={text!r} is not finite")
    return np.array(vals)


def _child(elem, tag, where):
    """The single <tag> child of elem (None if absent); URDFError if there are several."""
    if elem is None:
        return None
    found = elem.findall(tag)
    if len(found) > 1:
        raise URDFError(f"{where} has {len(found)} <{tag}> elements, expected at most one")
    return found[0] if found else None


def _origin(elem, where):
    """4x4 transform of an <origin xyz rpy> child (identity if absent). rpy: R = Rz Ry Rx."""
    o = _child(elem, "origin", where)
    X = np.eye(4)
    if o is not None:
        X[:3, 3] = _floats(o, "xyz", 3, (0, 0, 0), where + " <origin>")
        if o.get("rpy") is not None:
            X[:3, :3] = _rpy_matrix(*_floats(o, "rpy", 3, (0, 0, 0), where + " <origin>"))
    return X


def _rpy_matrix(roll, pitch, yaw):
    """R = Rz(yaw) Ry(pitch) Rx(roll) (URDF's fixed-axis roll, pitch, yaw), (3, 3)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _scalar(elem, attr, default, where):
    return float(_floats(elem, attr, 1, (default,), where)[0])


def _required(elem, attr, where):
    """The number in attribute ``attr`` of ``elem``, which the URDF spec requires: URDFError
    naming ``where`` and ``attr`` if it is absent (never a default for a required value)."""
    if elem.get(attr) is None:
        raise URDFError(f"{where}: missing attribute {attr} (required by the URDF spec)")
    return _scalar(elem, attr, 0.0, where)


def _parse_inertial(link):
    """-> (mass, com (3), I_com (3x3)) in the LINK frame, or None if no <inertial>.

    Reads and checks the numbers only (present, finite); whether the inertia is
    acceptable is the policy of :func:`_lump_inertias` (:mod:`.inertia`)."""
    name = link.get("name")
    inertial = _child(link, "inertial", f"link '{name}'")
    if inertial is None:
        return None
    where = f"link '{name}' <inertial>"
    m_el = _child(inertial, "mass", where)
    if m_el is None or m_el.get("value") is None:
        raise URDFError(f"{where}: missing <mass value=...>")
    mass = _scalar(m_el, "value", 0.0, where + " <mass>")
    X = _origin(inertial, where)
    i_el = _child(inertial, "inertia", where)
    if i_el is None:
        raise URDFError(f"{where}: missing <inertia> (the URDF spec requires it in <inertial>)")
    I = inertia_rules.inertia_matrix(*(_required(i_el, k, where + " <inertia>")
                                       for k in inertia_rules.INERTIA_KEYS))
    return inertia_rules.transform(X, mass, np.zeros(3), I)


# ----------------------------------------------------------------------------- stages
def _read(xml: str):
    """Stage 1: the <robot> element of the XML text. URDFError for bad XML (with the line and
    element of a character that cannot be encoded), another root element, or xacro left."""
    try:
        robot = ET.fromstring(xml)
    except ET.ParseError as e:
        hint = " (unexpanded xacro? run xacro on the file first)" if "xacro" in xml else ""
        raise URDFError(f"invalid URDF XML: {e}{hint}") from None
    except UnicodeEncodeError:              # lone surrogates: not text, cannot be XML
        at = re.search("[\ud800-\udfff]", xml)
        at = at.start() if at else 0
        tag_at = xml.rfind("<", 0, at)
        element = xml[tag_at:at + 1].split(None, 1)[0] if tag_at >= 0 else "(before any tag)"
        name = re.search(r'name\s*=\s*["\']([^"\']*)', xml[tag_at:at + 1]) if tag_at >= 0 else None
        named = f" name={name.group(1)!r}" if name else ""
        raise URDFError(f"invalid URDF: element {element}{named}> (line "
                        f"{xml.count(chr(10), 0, at) + 1}) holds the character {xml[at]!r}, "
                        "which cannot be encoded as UTF-8 (a lone surrogate)") from None
    if robot.tag != "robot":
        raise URDFError(f"URDF root element is <{robot.tag}>, expected <robot>")
    for el in robot.iter():
        if isinstance(el.tag, str) and el.tag.startswith("{") and "xacro" in el.tag:
            raise URDFError(f"unexpanded xacro element <xacro:{el.tag.split('}')[1]}"
                            + (f" name={el.get('name')!r}" if el.get("name") else "")
                            + ">; run xacro on the file first")
    return robot


def _collect(robot):
    """Stage 2: links {name: element}; joints {name: (element, type, parent, child)};
    parent_joint {child link: joint}; children {link: [joints] in document order}."""
    links = {}
    for el in robot.findall("link"):
        name = el.get("name")
        if not name:
            raise URDFError("a <link> has no name attribute")
        if name in links:
            raise URDFError(f"duplicate link '{name}'")
        links[name] = el
    if not links:
        raise URDFError("URDF has no <link>")
    joints, parent_joint, children = {}, {}, {n: [] for n in links}
    for el in robot.findall("joint"):
        name = el.get("name")
        if not name:
            raise URDFError("a <joint> has no name attribute")
        if name in joints:
            raise URDFError(f"duplicate joint '{name}'")
        jtype = el.get("type")
        if jtype is None:
            raise URDFError(f"joint '{name}' has no type attribute (required by the URDF spec)")
        if jtype not in KNOWN:
            raise UnsupportedJointError(f"joint '{name}' has unknown type {jtype!r}")
        ends = []
        for role in ("parent", "child"):
            r_el = _child(el, role, f"joint '{name}'")
            if r_el is None or r_el.get("link") is None:
                raise URDFError(f"joint '{name}' has no <{role} link=...>")
            if r_el.get("link") not in links:
                raise URDFError(f"joint '{name}': {role} link '{r_el.get('link')}' is not defined")
            ends.append(r_el.get("link"))
        parent, child = ends
        if child in parent_joint:
            raise URDFError(f"link '{child}' is the child of two joints: "
                            f"'{parent_joint[child]}' and '{name}'")
        joints[name] = (el, jtype, parent, child)
        parent_joint[child] = name
        children[parent].append(name)
    return links, joints, parent_joint, children


def _check_tree(links, joints, parent_joint, children, root_link):
    """Stage 3: the links form one tree; returns its root (or the given ``root_link``).

    Every link has at most one parent (checked in :func:`_collect`), so the links reachable
    from the parentless ones are exactly the links on no cycle: one walk, O(links)."""
    roots = [n for n in links if n not in parent_joint]
    reached, stack = set(roots), list(roots)
    while stack:
        for j in children[stack.pop()]:
            reached.add(joints[j][3])
            stack.append(joints[j][3])
    if len(reached) != len(links):
        start = next(n for n in links if n not in reached)
        seen, lk = {}, start
        while lk not in seen:               # every unreached link leads into a cycle
            seen[lk] = len(seen)
            lk = joints[parent_joint[lk]][2]
        cycle = list(seen)[seen[lk]:]
        raise URDFError("kinematic cycle through links " + " -> ".join(cycle + [lk]))
    if len(roots) > 1:
        shown = ", ".join(roots[:10]) + (", ..." if len(roots) > 10 else "")
        raise URDFError(f"URDF has several root links: {shown} (expected a tree)")
    if root_link is None:
        return roots[0]
    if root_link not in links:
        raise URDFError(f"root_link '{root_link}' is not a link of this URDF")
    return root_link


def _depth_first(root_link, children, joints):
    """Stage 4: [(joint, depth)] below ``root_link``, depth-first, children in document
    order (an explicit stack: no recursion)."""
    order = []
    stack = [(j, 1) for j in reversed(children[root_link])]
    while stack:
        j, depth = stack.pop()
        order.append((j, depth))
        stack.extend((c, depth + 1) for c in reversed(children[joints[j][3]]))
    return order


def _limits(el, jtype, where):
    """(lower, upper, effort, velocity) of a moving joint's <limit>: effort and velocity are
    required inside a <limit> (URDFError naming the joint and attribute); no <limit> gives
    (-inf, inf, inf, inf), an absent lower / upper -inf / inf (docs/math.md, URDF defaults)."""
    lim = _child(el, "limit", where)
    if lim is None:
        return -np.inf, np.inf, np.inf, np.inf
    w = where + " <limit>"
    effort, velocity = _required(lim, "effort", w), _required(lim, "velocity", w)
    if effort < 0 or velocity < 0:
        raise URDFError(f"{w}: negative effort or velocity")
    if jtype == "continuous" or (lim.get("lower") is None and lim.get("upper") is None):
        return -np.inf, np.inf, effort, velocity
    lo, hi = _scalar(lim, "lower", -np.inf, w), _scalar(lim, "upper", np.inf, w)
    if lo > hi:
        raise URDFError(f"{w}: lower {lo} > upper {hi}")
    return lo, hi, effort, velocity


def _moving_joint(j, el, jtype, child, pbody, X_tree):
    """One body's dict from the moving joint ``j`` (axis, limits, dynamics, mimic)."""
    where = f"joint '{j}'"
    axis_el = _child(el, "axis", where)             # absent: the spec's default 1 0 0
    if axis_el is not None and axis_el.get("xyz") is None:
        raise URDFError(f"{where} <axis>: missing attribute xyz (required by the URDF spec "
                        "inside <axis>; only an absent <axis> means 1 0 0)")
    axis = _floats(axis_el, "xyz", 3, (1, 0, 0), where + " <axis>")
    if np.abs(axis).max() < 1e-12:
        raise URDFError(f"{where} has a zero <axis>")
    axis = axis / np.abs(axis).max()            # no overflow for 1e300
    axis = axis / np.linalg.norm(axis)
    lo, hi, effort, velocity = _limits(el, jtype, where)
    dyn = _child(el, "dynamics", where)
    damping = _scalar(dyn, "damping", 0.0, where + " <dynamics>") if dyn is not None else 0.0
    friction = _scalar(dyn, "friction", 0.0, where + " <dynamics>") if dyn is not None else 0.0
    if damping < 0 or friction < 0:
        raise URDFError(f"{where} <dynamics>: negative damping or friction")
    mim = _child(el, "mimic", where)
    if mim is not None and not mim.get("joint"):
        raise URDFError(f"{where} <mimic> has no joint attribute")
    mimic = None if mim is None else (mim.get("joint"),
                                      _scalar(mim, "multiplier", 1.0, where + " <mimic>"),
                                      _scalar(mim, "offset", 0.0, where + " <mimic>"))
    return dict(joint=j, link=child, parent=pbody,
                jtype=PRISMATIC if jtype == "prismatic" else REVOLUTE, axis=axis,
                X_tree=X_tree, effort=effort, velocity=velocity, lower=lo, upper=hi,
                damping=damping, friction=friction, mimic=mimic)


def _read_joints(root_link, order, joints):
    """Stage 5: frames {link: (body or -1, X_body_link 4x4)}, bodies [dict] (one per moving
    joint, depth-first) and body_of_joint {moving joint: body}."""
    frames = {root_link: (-1, np.eye(4))}
    bodies, body_of_joint = [], {}
    for j, _ in order:
        el, jtype, parent, child = joints[j]
        if jtype in ("floating", "planar"):
            raise UnsupportedJointError(
                f"joint '{j}' has type '{jtype}', which is not supported (fixed-base trees "
                "of revolute/continuous/prismatic/fixed only)")
        pbody, X_pb_parent = frames[parent]
        X = X_pb_parent @ _origin(el, f"joint '{j}'")
        if jtype == "fixed":
            frames[child] = (pbody, X)
            continue
        body_of_joint[j] = len(bodies)
        frames[child] = (len(bodies), np.eye(4))
        bodies.append(_moving_joint(j, el, jtype, child, pbody, X))
    return frames, bodies, body_of_joint


def _resolve_mimic(bodies, body_of_joint, root_link):
    """Stage 6: [(master body, multiplier, offset)] per body, mimic chains followed to their
    independent joint: q_full[b] = mult * q[master] + offset. Iterative, each body resolved
    once (memo), so chains of any length cost O(bodies); a cycle is an error."""
    resolved = [None] * len(bodies)
    for start in range(len(bodies)):
        path, b, on_path = [], start, set()
        while resolved[b] is None and bodies[b]["mimic"] is not None:
            master = bodies[b]["mimic"][0]
            if master not in body_of_joint:
                raise URDFError(f"joint '{bodies[b]['joint']}' mimics '{master}', which is not "
                                f"a moving joint below root link '{root_link}'")
            path.append(b)
            on_path.add(b)
            b = body_of_joint[master]
            if b in on_path:
                raise URDFError(f"joint '{bodies[b]['joint']}': cyclic <mimic> chain")
        acc = resolved[b] if resolved[b] is not None else (b, 1.0, 0.0)
        resolved[b] = acc
        for p in reversed(path):             # q_p = m_p q_b + o_p, q_b = M q_root + O
            _, mult, off = bodies[p]["mimic"]
            acc = (acc[0], mult * acc[1], mult * acc[2] + off)
            resolved[p] = acc
    return resolved


def _link_inertias(links, sub_links, frames, bodies):
    """[(link, welded, mass, I_com, body, inertia in the body frame)] of the links with an
    <inertial>, and the inertias in the root frame at q = 0 (for the robot's scale S)."""
    X_root = []                                     # body poses at q = 0 (joint(0) = 1)
    for body in bodies:
        X_root.append(body["X_tree"] if body["parent"] < 0
                      else X_root[body["parent"]] @ body["X_tree"])
    found, at_zero = [], []
    with np.errstate(all="ignore"):
        for lk in sub_links:
            inr = _parse_inertial(links[lk])
            if inr is None:
                continue
            b, X = frames[lk]
            mass, com, I = inr                     # link frame, about the com
            in_body = inertia_rules.transform(X, mass, com, I)
            found.append((lk, b < 0, mass, I, b, in_body))
            if b >= 0:
                at_zero.append(inertia_rules.transform(X_root[b], *in_body))
    return found, at_zero


def _lump_inertias(links, sub_links, frames, bodies):
    """Stage 7: the inertia policy (:func:`.inertia.judge_link_inertias`) and ``inert``
    (nb, 13), every link's inertia lumped into its body. Returns (inert, warning notes,
    joints that move no mass)."""
    found, at_zero = _link_inertias(links, sub_links, frames, bodies)
    scale = inertia_rules.robot_inertia_scale(at_zero)
    errors, notes = inertia_rules.judge_link_inertias(
        [(lk, welded, mass, I) for lk, welded, mass, I, _, _ in found], scale)
    if errors:
        name, why = errors[0]
        more = f" (and {len(errors) - 1} more: {', '.join(n for n, _ in errors[1:])})" \
            if len(errors) > 1 else ""
        raise URDFError(f"link '{name}' <inertial>: {why}{more}")
    parts = [[] for _ in bodies]
    for _, welded, _, _, b, in_body in found:
        if not welded:
            parts[b].append(in_body)
    inert = np.zeros((len(bodies), 13))
    for b, body in enumerate(bodies):
        with np.errstate(all="ignore"):
            m, c, I = inertia_rules.combine(parts[b])    # m c overflows for a huge com
            # the passes use m c and the inertia about the body origin: both must be finite
            I_origin = I + m * (c @ c * np.eye(3) - np.outer(c, c))
        if not (np.isfinite(m) and np.isfinite(m * c).all() and np.isfinite(I_origin).all()):
            raise URDFError(f"link '{body['link']}': the inertia lumped from its links "
                            f"({', '.join(lk for lk in sub_links if frames[lk][0] == b)}) "
                            "overflows to inf/NaN (masses, com or inertias too large)")
        inert[b, 0], inert[b, 1:4], inert[b, 4:13] = m, c, I.ravel()
    return inert, notes


def _joints_moving_nothing(bodies, inert, resolved):
    """Independent joints whose bodies (with everything below them) carry no mass and no
    inertia: their row and column of M(q) are zero, M is singular. One pass from the leaves
    (parent < child)."""
    carries = ((inert[:, 0] > 0) | (np.abs(inert[:, 4:13]).max(axis=1, initial=0.0) > 0)).tolist()
    for b in range(len(bodies) - 1, -1, -1):
        if carries[b] and bodies[b]["parent"] >= 0:
            carries[bodies[b]["parent"]] = True
    moves = {}
    for b, (master, _, _) in enumerate(resolved):
        moves[master] = moves.get(master, False) or bool(carries[b])
    return [f"'{bodies[b]['joint']}'" for b, ok in moves.items() if not ok]


def _pack(bodies, resolved, inert):
    """Stage 8: topo, geom (module docstring), inert read-only, and the independent bodies."""
    independent = [b for b in range(len(bodies)) if bodies[b]["mimic"] is None]
    qindex = {b: i for i, b in enumerate(independent)}
    topo = np.zeros((len(bodies), 3), dtype=np.int64)
    geom = np.zeros((len(bodies), 17))
    for b, body in enumerate(bodies):
        master_b, mult, off = resolved[b]
        topo[b] = (body["parent"], body["jtype"], qindex[master_b])
        geom[b, 0:3] = body["axis"]
        geom[b, 3:12] = body["X_tree"][:3, :3].ravel()
        geom[b, 12:15] = body["X_tree"][:3, 3]
        geom[b, 15:17] = (mult, off)
    for a in (topo, geom, inert):
        a.setflags(write=False)
    return topo, geom, independent


def parse_urdf(xml: str, root_link: str | None = None) -> Structure:
    """Validate a URDF string and build the :class:`Structure` below ``root_link``.

    Raises URDFError (UnsupportedJointError) naming the element at fault. Warns once per
    kind: InertiaWarning (inertias kept as written or ignored, :mod:`.inertia`),
    MasslessLinkWarning (joints that move no mass: M(q) singular). Massless leaf frames
    (flanges, tool frames) are normal and not warned about."""
    robot = _read(xml)
    links, joints, parent_joint, children = _collect(robot)
    root_link = _check_tree(links, joints, parent_joint, children, root_link)
    order = _depth_first(root_link, children, joints)
    sub_links = [root_link] + [joints[j][3] for j, _ in order]
    frames, bodies, body_of_joint = _read_joints(root_link, order, joints)
    resolved = _resolve_mimic(bodies, body_of_joint, root_link)
    inert, notes = _lump_inertias(links, sub_links, frames, bodies)
    idle = _joints_moving_nothing(bodies, inert, resolved)
    if notes:
        warnings.warn("; ".join(notes), InertiaWarning, stacklevel=3)
    if idle:
        warnings.warn("joints that move no mass or inertia (their row of M(q) is zero, M is "
                      "singular): " + ", ".join(idle), MasslessLinkWarning, stacklevel=3)
    topo, geom, independent = _pack(bodies, resolved, inert)
    depth = {root_link: 0}
    depth.update((joints[j][3], d) for j, d in order)
    leaves = [lk for lk in sub_links if not children[lk]]
    default_tip = max(leaves, key=depth.__getitem__) if leaves else root_link

    def arr(key):
        a = np.array([bodies[b][key] for b in independent], dtype=float)
        a.setflags(write=False)
        return a

    return Structure(
        root_link=root_link,
        joint_names=tuple(bodies[b]["joint"] for b in independent),
        full_joint_names=tuple(b["joint"] for b in bodies),
        body_links=tuple(b["link"] for b in bodies),
        topo=topo, geom=geom, inert=inert,
        frames=frames, frame_names=tuple(sub_links), default_tip=default_tip,
        effort_limits=arr("effort"), velocity_limits=arr("velocity"),
        position_lower=arr("lower"), position_upper=arr("upper"),
        viscous=arr("damping"), coulomb=arr("friction"),
        has_mimic=len(independent) != len(bodies),
    )
