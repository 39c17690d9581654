"""The serial chain the symbolic path derives from: the core's parsed URDF, checked and named.

:func:`serial_chain` reads the core's :class:`manip_dynamics.core.dynamics.urdf.Structure` (the
core's own parser: fixed joints already merged, inertias already lumped into the moving bodies) and
returns a :class:`Chain`: one :class:`ChainBody` per moving body from the root to the tip, in
q order, with every number that can be a named parameter turned into a sympy symbol
(``m_i``, ``r_ci``, ``I_ixx``, ``l_i``, ``b_i``, ``fc_i``, ``g_0``) and its URDF value kept in
``Chain.values``. Only nonzero numbers become symbols, so the equations keep the URDF's
structure (a link along x has one length ``l_1``, not three).

Names (``i`` = body index from 1, in chain order):

``m_i``                 mass of body i (kg)
``r_ci`` (``r_cix`` ..)  its centre of mass in its own frame (m; De Luca's r_ci; one
                        symbol when only one component is nonzero)
``I_ixx ... I_izz``     its inertia about the com, body axes (kg m^2)
``l_i`` (``l_ix`` ...)  origin of joint i+1 (or of the tip frame) in body i's frame (m):
                        the length of link i (``l_0``: joint 1 from the root); one symbol
                        when only one component is nonzero
``b_i``, ``fc_i``       viscous (N m s/rad or N s/m) and Coulomb (N m or N) friction of
                        coordinate i, when the URDF (or the side file) gives them
``fcn_i``, ``f0_i``     its Coulomb friction for qd < 0 (when the side file's differs) and
                        offset (N m or N), from a side file
``Ia_i``                armature of coordinate i (reflected rotor inertia, kg m^2 or kg:
                        M + diag(Ia)), from a side file or ``armature=``
``g_0``                 magnitude of gravity (m/s^2), along the given gravity direction

Limits, as errors of :mod:`manip_dynamics.core.errors` that name the limit: a branching tree
(URDFError naming the branch joints), a mimic joint (UnsupportedJointError), more than
``max_joints`` coordinates (InputError; lock some with ``joints=``).

Rotations (joint-origin rpy, axes) stay numbers: entries within 1e-15 of 0 or +-1 are
snapped to them, so an rpy of pi/2 gives the exact rotation (the change is below the
float's last bit of the products).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from ..core.errors import InputError, UnsupportedJointError, URDFError
from ..core.dynamics.urdf import PRISMATIC, parse_urdf

MAX_JOINTS = 6          # beyond this, simplification time grows too large (docs/equations.md)
_SNAP = 1e-15
_AXES = "xyz"


@dataclass(frozen=True)
class ChainBody:
    """One moving body: ``X_parent_body(q) = (R_tree, p_tree) * joint(q)``.

    kind: "revolute" / "prismatic" (a coordinate) or "locked" (a moving joint held at 0);
    q_index: its coordinate (None when locked); axis (3,) unit, joint frame; R_tree (3, 3)
    numbers; p_tree (3, 1), com (3, 1), I_com (3, 3): sympy, symbols or numbers."""

    joint: str
    link: str
    kind: str
    q_index: int | None
    axis: sp.Matrix
    R_tree: sp.Matrix
    p_tree: sp.Matrix
    mass: sp.Expr
    com: sp.Matrix
    I_com: sp.Matrix


@dataclass(frozen=True)
class Chain:
    """The chain root -> tip: bodies (ChainBody, root first), joint_names (the coordinates, q
    order), tip (link), tip_body (index into bodies, -1 = the root), X_tip (4x4 sympy, the tip
    link in its body's frame), gravity (3, 1 sympy), viscous / coulomb (n sympy), values
    {symbol: URDF value} of every parameter symbol."""

    name: str
    bodies: tuple
    joint_names: tuple
    tip: str
    tip_body: int
    X_tip: sp.Matrix
    gravity: sp.Matrix
    viscous: tuple
    coulomb: tuple
    values: dict = field(default_factory=dict)
    armature: tuple = ()              # (n sympy) per coordinate; () = none
    coulomb_negative: tuple = ()      # () = coulomb (symmetric)
    offset: tuple = ()                # () = none
    width: tuple = ()                 # floats; () or 0 = sign(qd), else tanh(qd / width)

    @property
    def n(self):
        return len(self.joint_names)


def snap(x):
    """sympy number of x: the exact Integer 0, 1 or -1 when x is within 1e-15 of it
    (rotation entries, axes), else a Float."""
    x = float(x)
    for target in (0, 1, -1):
        if abs(x - target) < _SNAP:
            return sp.Integer(target)
    return sp.Float(x)


class _Namer:
    """Turns nonzero numbers into named symbols (or keeps them as numbers), recording values."""

    def __init__(self, symbolic):
        self.symbolic, self.values = symbolic, {}

    def scalar(self, name, value):
        value = float(value)
        if value == 0.0:
            return sp.S.Zero
        if not self.symbolic:
            return sp.Float(value)
        s = sp.Symbol(name, real=True)
        self.values[s] = value
        return s

    def vector(self, stem, v):
        """A (3, 1) matrix; one component nonzero -> the bare ``stem``, else ``stem`` + x/y/z."""
        nonzero = [k for k in range(3) if v[k] != 0.0]
        single = len(nonzero) == 1
        return sp.Matrix([self.scalar(stem if single else stem + _AXES[k], v[k])
                          for k in range(3)])

    def inertia(self, stem, I):
        out = sp.zeros(3, 3)
        for r in range(3):
            for c in range(r, 3):
                out[r, c] = out[c, r] = self.scalar(f"{stem}{_AXES[r]}{_AXES[c]}", I[r, c])
        return out


def _chain_path(structure, tip):
    """Body indices root -> the body carrying ``tip``; UnsupportedJointError for a mimic
    joint, URDFError for a branching tree."""
    if structure.has_mimic:
        mimic = [j for j in structure.full_joint_names if j not in structure.joint_names]
        raise UnsupportedJointError(
            f"mimic joints ({', '.join(repr(j) for j in mimic)}) are not supported by the "
            "symbolic path (serial chains of independent revolute, continuous and prismatic "
            "joints only)")
    parent = structure.topo[:, 0]
    if tip not in structure.frames:
        raise URDFError(f"tip link '{tip}' is not a link below root '{structure.root_link}'")
    b = structure.frames[tip][0]
    if b < 0:
        where = "is the root" if tip == structure.root_link else \
            f"is fixed to the root '{structure.root_link}'"
        raise URDFError(f"tip link '{tip}' {where}: no joint moves it, so there are no "
                        "equations to derive; choose a link below a moving joint as --tip")
    path = []
    while b >= 0:
        path.append(int(b))
        b = parent[b]
    path.reverse()
    off = [i for i in range(len(parent)) if i not in set(path)]
    if off:
        names = ", ".join(f"'{structure.full_joint_names[i]}'" for i in off)
        raise URDFError(
            f"the symbolic path derives serial chains only: joints {names} branch off the "
            f"chain from '{structure.root_link}' to '{tip}' (a tree); choose another --tip or "
            "remove the branch")
    return path


def _check_joints(structure, path, joints, max_joints):
    """The coordinates (joint names in q order) of the chain, checked against the limits."""
    chain_joints = [structure.full_joint_names[b] for b in path]
    if joints is None:
        joints = chain_joints
    joints = list(joints)
    unknown = [j for j in joints if j not in chain_joints]
    if unknown or len(set(joints)) != len(joints):
        raise InputError(f"joints: {unknown or joints} are not distinct moving joints of the "
                         f"chain ({', '.join(chain_joints)})")
    if len(joints) > max_joints:
        raise InputError(
            f"the chain has {len(joints)} joints ({', '.join(joints)}); the symbolic path's "
            f"limit is {max_joints} joints (max_joints): pass at most {max_joints} with "
            "--joints (the others are locked at q = 0) or raise --max-joints")
    return [j for j in chain_joints if j in joints]


def _numbers(M):
    a = np.asarray(M, dtype=float)
    return sp.Matrix(a.shape[0], a.shape[1] if a.ndim == 2 else 1,
                     [snap(x) for x in a.ravel()])


def serial_chain(xml, tip=None, joints=None, gravity=(0.0, 0.0, -9.81),
                 symbolic_parameters=False, max_joints=MAX_JOINTS, root_link=None,
                 armature=None, side_file=None):
    """Parse ``xml`` (URDF text) with the core's parser and build the :class:`Chain` root ->
    ``tip`` (default: the core's default tip, the leaf of the longest chain).

    joints: the coordinates to keep (others locked at q = 0); None = every moving joint.
    symbolic_parameters: nonzero masses, coms, inertias, link offsets, friction and the
    gravity magnitude as symbols (values in ``Chain.values``), else as numbers.
    side_file: a dynamics side file (docs/side_file.md) whose armature and friction replace
    the URDF's (InputError naming the file and field if it is bad); armature: a mapping
    {joint: kg m^2} or a sequence in the model's joint order (after the side file's)."""
    structure = parse_urdf(xml, root_link)
    structure, model = _with_side_terms(structure, side_file, armature)
    tip = structure.default_tip if tip is None else tip
    path = _chain_path(structure, tip)
    coords = _check_joints(structure, path, joints, max_joints)
    namer = _Namer(symbolic_parameters)
    bodies = []
    for k, b in enumerate(path, start=1):
        geom, inert, name = structure.geom[b], structure.inert[b], structure.full_joint_names[b]
        kind = ("prismatic" if structure.topo[b, 1] == PRISMATIC else "revolute") \
            if name in coords else "locked"
        bodies.append(ChainBody(
            joint=name, link=structure.body_links[b], kind=kind,
            q_index=coords.index(name) if name in coords else None,
            axis=_numbers(geom[0:3]), R_tree=_numbers(geom[3:12].reshape(3, 3)),
            p_tree=namer.vector(f"l_{k - 1}", geom[12:15]),
            mass=namer.scalar(f"m_{k}", inert[0]), com=namer.vector(f"r_c{k}", inert[1:4]),
            I_com=namer.inertia(f"I_{k}", inert[4:13].reshape(3, 3))))
    name = ET.fromstring(xml).get("name") or structure.root_link    # parsed above: valid XML
    return _finish(structure, model, name, bodies, coords, tip, path, gravity, namer)


def _with_side_terms(structure, side_file, armature):
    """(structure, a RobotModel of it carrying the side file's armature and friction, then
    ``armature``)."""
    from ..core.dynamics.model import RobotModel
    from ..core.dynamics.side_file import load_side_file
    model = RobotModel(structure)
    if side_file is not None:
        model = load_side_file(side_file, model).model
    if armature is not None:
        if isinstance(armature, dict):
            unknown = [j for j in armature if j not in model.joint_names]
            if unknown:
                raise InputError(f"armature: unknown joint {unknown[0]!r}; the model's joints: "
                                 + ", ".join(model.joint_names))
            values = model.armature.copy()
            for j, v in armature.items():
                values[model.joint_names.index(j)] = v
            armature = values
        model = model.with_armature(armature)
    return structure, model


def _finish(structure, model, name, bodies, coords, tip, path, gravity, namer):
    """The Chain: tip frame, gravity, armature and friction of the coordinates (``model``:
    the RobotModel carrying the side file's terms)."""
    tb, X = structure.frames[tip]
    X_tip = sp.eye(4)
    X_tip[:3, :3] = _numbers(X[:3, :3])
    X_tip[:3, 3] = namer.vector(f"l_{path.index(tb) + 1 if tb >= 0 else 0}", X[:3, 3])
    gvec = np.asarray(gravity, dtype=float)
    if gvec.shape != (3,) or not np.all(np.isfinite(gvec)):
        raise InputError(f"gravity: must be three finite numbers (m/s^2), got {gravity!r}")
    g0 = float(np.linalg.norm(gvec))
    if namer.symbolic and g0 > 0:
        gravity = _numbers(gvec / g0) * namer.scalar("g_0", g0)
    else:
        gravity = sp.Matrix([sp.Float(x) if x else sp.S.Zero for x in gvec])
    q_of = {structure.joint_names[i]: i for i in range(len(structure.joint_names))}

    def per_coordinate(stem, values):
        return tuple(namer.scalar(f"{stem}_{i + 1}", values[q_of[j]])
                     for i, j in enumerate(coords))

    viscous = per_coordinate("b", model.viscous)
    coulomb = per_coordinate("fc", model.coulomb)
    negative = tuple(c if model.coulomb[q_of[j]] == model.coulomb_negative[q_of[j]] else
                     namer.scalar(f"fcn_{i + 1}", model.coulomb_negative[q_of[j]])
                     for i, (j, c) in enumerate(zip(coords, coulomb)))
    return Chain(name=name, bodies=tuple(bodies), joint_names=tuple(coords),
                 tip=tip, tip_body=path.index(tb) if tb >= 0 else -1, X_tip=X_tip,
                 gravity=gravity, viscous=viscous, coulomb=coulomb,
                 armature=per_coordinate("Ia", model.armature),
                 coulomb_negative=negative,
                 offset=per_coordinate("f0", model.friction_offset),
                 width=tuple(float(model.friction_width[q_of[j]]) for j in coords),
                 values=dict(namer.values))

