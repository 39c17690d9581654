"""URDF -> kinematic tree (the frozen structure the algorithms run on).

``parse_urdf(xml, root_link)`` validates the description and returns a ``Structure``:
one *body* per moving joint (revolute, continuous, prismatic, including mimic joints).
Links attached by ``fixed`` joints are merged into the body they hang from (their
inertia is lumped; their frame stays available as a fixed offset). Links merged into the
root (the fixed base) carry no dynamics.

Packed arrays (read by the numba kernels in :mod:`manip_dynamics.core.kernels`), body
``i`` in depth-first order, its parent body ``parent[i] < i`` (``-1`` = root):

- ``topo`` int64 (nb, 3): ``parent, jtype (0 revolute, 1 prismatic), master``.
  ``master`` is the q index driving the body's joint:
  ``q_full[i] = mult[i] * q[master[i]] + offset[i]``.
- ``geom`` float64 (nb, 17): ``axis (3, unit, joint frame), R_tree (9, row-major),
  p_tree (3), mult, offset``; ``X_parent_body(q) = (R_tree, p_tree) * joint(q)``.
- ``inert`` float64 (nb, 13): ``mass, com (3, body frame), I_com (9, body axes,
  about the com, row-major)``.
"""
from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from .errors import InertiaWarning, MasslessLinkWarning, UnsupportedJointError, URDFError

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
def _floats(elem, attr, count, default, where):
    text = elem.get(attr) if elem is not None else None
    if text is None:
        return np.array(default, dtype=float)
    if "${" in text or "$(" in text:
        raise URDFError(f"{where}: attribute {attr}={text!r} is an unexpanded xacro expression; "
                        "run xacro on the file first")
    try:
        vals = [float(s) for s in text.split()]
    except ValueError:
        raise URDFError(f"{where}: attribute {attr}={text!r} is not a list of numbers") from None
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
        rpy = _floats(o, "rpy", 3, (0, 0, 0), where + " <origin>")
        X[:3, :3] = Rotation.from_euler("xyz", rpy).as_matrix()
    return X


def _scalar(elem, attr, default, where):
    return float(_floats(elem, attr, 1, (default,), where)[0])


def _parse_inertial(link, unphysical=None):
    """-> (mass, com (3), I_com (3x3)) in the LINK frame, or None if no <inertial>.

    A tensor that is not positive semi-definite is an error; one that only violates the
    triangle inequality is appended to ``unphysical`` (the caller warns once)."""
    name = link.get("name")
    inertial = _child(link, "inertial", f"link '{name}'")
    if inertial is None:
        return None
    where = f"link '{name}' <inertial>"
    m_el = _child(inertial, "mass", where)
    if m_el is None or m_el.get("value") is None:
        raise URDFError(f"{where}: missing <mass value=...>")
    mass = _scalar(m_el, "value", 0.0, where + " <mass>")
    if mass < 0:
        raise URDFError(f"{where}: negative mass {mass}")
    X = _origin(inertial, where)
    i_el = _child(inertial, "inertia", where)
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    v = {k: (_scalar(i_el, k, 0.0, where + " <inertia>") if i_el is not None else 0.0) for k in keys}
    I = np.array([[v["ixx"], v["ixy"], v["ixz"]],
                  [v["ixy"], v["iyy"], v["iyz"]],
                  [v["ixz"], v["iyz"], v["izz"]]])
    ev = np.linalg.eigvalsh(I)
    # relative tolerance, plus 1e-15 kg m^2 of absolute round-off (exported URDFs carry
    # entries like ixy = 1.4e-20 on otherwise zero inertias)
    tol = 1e-9 * float(np.abs(ev).max()) + 1e-15
    if ev[0] < -tol:
        raise URDFError(f"{where}: inertia is not positive (semi-)definite, eigenvalues {ev}")
    if ev[2] > ev[0] + ev[1] + tol and unphysical is not None:
        unphysical.append(f"'{name}' {np.array2string(ev, precision=4)}")
    R = X[:3, :3]
    return mass, X[:3, 3].copy(), R @ I @ R.T


def _combine(parts):
    """Sum of rigid inertias given as (mass, com, I_com) in one frame."""
    m = sum(p[0] for p in parts)
    if m > 0:
        c = sum(p[0] * p[1] for p in parts) / m
    else:
        c = np.zeros(3)
    I = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = ci - c
        I += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, I


def _transform_inertia(X, mass, com, I):
    R = X[:3, :3]
    return mass, X[:3, :3] @ com + X[:3, 3], R @ I @ R.T


def parse_urdf(xml: str, root_link: str | None = None) -> Structure:
    """Validate a URDF string and build the :class:`Structure` below ``root_link``."""
    try:
        robot = ET.fromstring(xml)
    except ET.ParseError as e:
        hint = " (unexpanded xacro? run xacro on the file first)" if "xacro" in xml else ""
        raise URDFError(f"invalid URDF XML: {e}{hint}") from None
    if robot.tag != "robot":
        raise URDFError(f"URDF root element is <{robot.tag}>, expected <robot>")
    for el in robot.iter():
        if isinstance(el.tag, str) and el.tag.startswith("{") and "xacro" in el.tag:
            raise URDFError(f"unexpanded xacro element <xacro:{el.tag.split('}')[1]}"
                            + (f" name={el.get('name')!r}" if el.get("name") else "")
                            + ">; run xacro on the file first")

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

    joints = {}
    parent_joint = {}       # child link -> joint name
    children = {n: [] for n in links}   # link -> [joint names] in document order
    for el in robot.findall("joint"):
        name = el.get("name")
        if not name:
            raise URDFError("a <joint> has no name attribute")
        if name in joints:
            raise URDFError(f"duplicate joint '{name}'")
        jtype = el.get("type")
        if jtype not in KNOWN:
            raise UnsupportedJointError(f"joint '{name}' has unknown type {jtype!r}")
        p_el, c_el = el.find("parent"), el.find("child")
        if p_el is None or p_el.get("link") is None:
            raise URDFError(f"joint '{name}' has no <parent link=...>")
        if c_el is None or c_el.get("link") is None:
            raise URDFError(f"joint '{name}' has no <child link=...>")
        parent, child = p_el.get("link"), c_el.get("link")
        for role, lk in (("parent", parent), ("child", child)):
            if lk not in links:
                raise URDFError(f"joint '{name}': {role} link '{lk}' is not defined")
        if child in parent_joint:
            raise URDFError(f"link '{child}' is the child of two joints: "
                            f"'{parent_joint[child]}' and '{name}'")
        joints[name] = el
        parent_joint[child] = name
        children[parent].append(name)

    # cycles: follow parent pointers from every link
    for start in links:
        seen, lk = [start], start
        while lk in parent_joint:
            lk = joints[parent_joint[lk]].find("parent").get("link")
            if lk in seen:
                cyc = seen[seen.index(lk):]
                raise URDFError("kinematic cycle through links " + " -> ".join(cyc))
            seen.append(lk)
    roots = [n for n in links if n not in parent_joint]
    if len(roots) > 1:
        raise URDFError(f"URDF has several root links: {', '.join(roots)} (expected a tree)")
    if root_link is None:
        root_link = roots[0]
    elif root_link not in links:
        raise URDFError(f"root_link '{root_link}' is not a link of this URDF")

    # depth-first walk below the root, children in document order
    order = []          # (joint name, depth) pairs in DFS order
    stack = [(j, 1) for j in reversed(children[root_link])]
    while stack:
        j, depth = stack.pop()
        order.append((j, depth))
        child = joints[j].find("child").get("link")
        stack.extend((c, depth + 1) for c in reversed(children[child]))

    sub_links = [root_link] + [joints[j].find("child").get("link") for j, _ in order]

    # joint data
    frames = {root_link: (-1, np.eye(4))}
    body_of_joint = {}
    bodies = []            # dicts
    for j, _ in order:
        el = joints[j]
        jtype = el.get("type")
        where = f"joint '{j}'"
        if jtype in ("floating", "planar"):
            raise UnsupportedJointError(f"{where} has type '{jtype}', which is not supported "
                                        "(fixed-base trees of revolute/continuous/prismatic/fixed only)")
        parent = el.find("parent").get("link")
        child = el.find("child").get("link")
        pbody, X_pb_parent = frames[parent]
        X_origin = _origin(el, where)
        if jtype == "fixed":
            frames[child] = (pbody, X_pb_parent @ X_origin)
            continue
        axis = _floats(_child(el, "axis", where), "xyz", 3, (1, 0, 0), where + " <axis>")
        norm = np.linalg.norm(axis / max(np.abs(axis).max(), 1e-300))   # no overflow for 1e300
        if np.abs(axis).max() < 1e-12:
            raise URDFError(f"{where} has a zero <axis>")
        axis = axis / np.abs(axis).max() / norm
        lim = _child(el, "limit", where)
        dyn = _child(el, "dynamics", where)
        mim = _child(el, "mimic", where)
        if mim is not None and not mim.get("joint"):
            raise URDFError(f"{where} <mimic> has no joint attribute")
        b = len(bodies)
        body_of_joint[j] = b
        frames[child] = (b, np.eye(4))
        X_tree = X_pb_parent @ X_origin
        if jtype == "continuous":
            lo, hi = -np.inf, np.inf
        else:
            lo = _scalar(lim, "lower", -np.inf, where + " <limit>") if lim is not None else -np.inf
            hi = _scalar(lim, "upper", np.inf, where + " <limit>") if lim is not None else np.inf
            if lim is not None and lim.get("lower") is None and lim.get("upper") is None:
                lo, hi = -np.inf, np.inf
            if lo > hi:
                raise URDFError(f"{where} <limit>: lower {lo} > upper {hi}")
        bodies.append(dict(
            joint=j, link=child, parent=pbody,
            jtype=PRISMATIC if jtype == "prismatic" else REVOLUTE,
            axis=axis, X_tree=X_tree,
            effort=_scalar(lim, "effort", np.inf, where + " <limit>") if lim is not None else np.inf,
            velocity=_scalar(lim, "velocity", np.inf, where + " <limit>") if lim is not None else np.inf,
            lower=lo, upper=hi,
            damping=_scalar(dyn, "damping", 0.0, where + " <dynamics>") if dyn is not None else 0.0,
            friction=_scalar(dyn, "friction", 0.0, where + " <dynamics>") if dyn is not None else 0.0,
            mimic=None if mim is None else (
                mim.get("joint"),
                _scalar(mim, "multiplier", 1.0, where + " <mimic>"),
                _scalar(mim, "offset", 0.0, where + " <mimic>")),
        ))
        if bodies[-1]["damping"] < 0 or bodies[-1]["friction"] < 0:
            raise URDFError(f"{where} <dynamics>: negative damping or friction")
        if bodies[-1]["effort"] < 0 or bodies[-1]["velocity"] < 0:
            raise URDFError(f"{where} <limit>: negative effort or velocity")

    # mimic joints -> (master q index, multiplier, offset), resolved transitively
    def resolve(b, seen):
        mim = bodies[b]["mimic"]
        if mim is None:
            return b, 1.0, 0.0
        master, mult, off = mim
        j = bodies[b]["joint"]
        if master not in body_of_joint:
            raise URDFError(f"joint '{j}' mimics '{master}', which is not a moving joint "
                            f"below root link '{root_link}'")
        mb = body_of_joint[master]
        if mb in seen:
            raise URDFError(f"joint '{j}': cyclic <mimic> chain")
        root_b, m2, o2 = resolve(mb, seen | {mb})
        return root_b, mult * m2, mult * o2 + off

    resolved = [resolve(b, {b}) for b in range(len(bodies))]
    independent = [b for b in range(len(bodies)) if bodies[b]["mimic"] is None]
    qindex = {b: i for i, b in enumerate(independent)}

    # inertias: lump every link of the subtree into its body
    parts = [[] for _ in bodies]
    massless, unphysical = [], []
    for lk in sub_links:
        b, X = frames[lk]
        inr = _parse_inertial(links[lk], unphysical)
        if inr is None:
            if lk != root_link:
                massless.append(lk)
            continue
        if b >= 0:
            parts[b].append(_transform_inertia(X, *inr))
    if massless:
        warnings.warn("links without <inertial> are treated as massless: " + ", ".join(massless),
                      MasslessLinkWarning, stacklevel=3)
    if unphysical:
        warnings.warn("link inertias violate the triangle inequality (no rigid body has them; "
                      "loaded as given): " + ", ".join(unphysical), InertiaWarning, stacklevel=3)

    nb = len(bodies)
    topo = np.zeros((nb, 3), dtype=np.int64)
    geom = np.zeros((nb, 17))
    inert = np.zeros((nb, 13))
    for b, body in enumerate(bodies):
        master_b, mult, off = resolved[b]
        topo[b] = (body["parent"], body["jtype"], qindex[master_b])
        geom[b, 0:3] = body["axis"]
        geom[b, 3:12] = body["X_tree"][:3, :3].ravel()
        geom[b, 12:15] = body["X_tree"][:3, 3]
        geom[b, 15:17] = (mult, off)
        with np.errstate(all="ignore"):
            m, c, I = _combine(parts[b]) if parts[b] else (0.0, np.zeros(3), np.zeros((3, 3)))
        if not (np.isfinite(m) and np.isfinite(c).all() and np.isfinite(I).all()):
            raise URDFError(f"link '{body['link']}': the inertia lumped from its links "
                            f"({', '.join(lk for lk in sub_links if frames[lk][0] == b)}) "
                            "overflows to inf/NaN (masses, com or inertias too large)")
        inert[b, 0], inert[b, 1:4], inert[b, 4:13] = m, c, I.ravel()
    for a in (topo, geom, inert):
        a.setflags(write=False)

    # default tip: leaf at the end of the longest chain (first in DFS order on ties)
    depth = {root_link: 0}
    for j, d in order:
        depth[joints[j].find("child").get("link")] = d
    leaves = [lk for lk in sub_links if not children[lk]]
    default_tip = max(leaves, key=lambda lk: depth[lk]) if leaves else root_link

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
        has_mimic=len(independent) != nb,
    )
