"""URDF strings built from chosen parameters, for the reference tests of the core.

Every arm here is a plain XML string whose dynamics are known independently of the core:
either in closed form (``planar_2r``, ``rp_arm``; see docs/math.md) or through Pinocchio
(``random_tree``). Numbers are written with ``repr`` so the parsed model carries exactly
the floats the closed forms use.

Conventions of the planar arms (docs/math.md, "Planar arms"): the arm moves in the x-y
plane of the root link ``base``, every revolute axis is +z, link frames sit at their
joints (link i's frame origin is joint i), and gravity is passed to the model as
``(0, -g0, 0)`` -- the seeds' "gravity along -y".
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

WIDE_LIMIT = '<limit lower="-1000" upper="1000" effort="1000" velocity="1000"/>'


def _v(values):
    return " ".join(repr(float(x)) for x in values)


def inertial_xml(mass, com=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0), inertia=None):
    """``<inertial>`` block; ``inertia`` is a 3x3 tensor about the COM in the inertial frame."""
    I = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
    ixx, ixy, ixz, iyy, iyz, izz = (repr(float(x)) for x in
                                    (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2]))
    return (
        f'<inertial><origin xyz="{_v(com)}" rpy="{_v(rpy)}"/>'
        f'<mass value="{float(mass)!r}"/>'
        f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" '
        f'iyy="{iyy}" iyz="{iyz}" izz="{izz}"/></inertial>'
    )


def link_xml(name, inertial=""):
    return f'<link name="{name}">{inertial}</link>'


def joint_xml(name, jtype, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=(0, 0, 1),
              damping=0.0, friction=0.0, mimic=None):
    """One joint. ``mimic`` = (master_name, multiplier, offset) or None."""
    body = f'<parent link="{parent}"/><child link="{child}"/>'
    body += f'<origin xyz="{_v(xyz)}" rpy="{_v(rpy)}"/>'
    if jtype != "fixed":
        body += f'<axis xyz="{_v(axis)}"/>'
        if damping or friction:
            body += f'<dynamics damping="{float(damping)!r}" friction="{float(friction)!r}"/>'
    if jtype in ("revolute", "prismatic"):
        body += WIDE_LIMIT
    if mimic is not None:
        master, mult, off = mimic
        body += f'<mimic joint="{master}" multiplier="{float(mult)!r}" offset="{float(off)!r}"/>'
    return f'<joint name="{name}" type="{jtype}">{body}</joint>'


def robot_xml(name, parts):
    return f'<?xml version="1.0"?><robot name="{name}">' + "".join(parts) + "</robot>"


def planar_inertia(izz):
    """A physically valid body inertia whose z moment is ``izz`` (ixx = iyy = 0.6 izz).

    Only izz enters planar motion about z; the other moments make the tensor satisfy the
    triangle inequality so no parser has a reason to reject it."""
    return np.diag([0.6 * izz, 0.6 * izz, izz])


def rod_inertia(m, L):
    """Thin rod along x about its centre: diag(0, mL^2/12, mL^2/12) (seed 003, L >> r)."""
    return np.diag([0.0, m * L * L / 12.0, m * L * L / 12.0])


def planar_2r(m1, m2, l1, l2, com1, com2, I1=None, I2=None, inertial_yaw=(0.0, 0.0),
              damping=(0.0, 0.0), friction=(0.0, 0.0), payload_on_link2=None,
              tip_inertial=None):
    """Planar 2R arm: base -> joint1 (z) -> link1 -> joint2 (z, at x=l1) -> link2 -> tip.

    ``com_i`` = (cx, cy) of link i in its own frame (frame at joint i). ``I_i`` = 3x3 body
    inertia about the COM in the inertial frame, which is yawed by ``inertial_yaw[i]``
    about z (a rotation about z leaves the planar moment izz unchanged). The massless link
    ``tip`` is fixed at (l2, 0, 0) in link2: the end point of the seeds.
    ``payload_on_link2`` = (mass, com(3) in link2, inertia(3x3) about its com in link2
    axes): merged into link2's inertial by the parallel-axis theorem (reference for
    ``with_payload``). ``tip_inertial`` = (mass, com(3), inertia(3x3)) gives the tip link
    a body of its own (reference for a payload on the fixed-joint frame ``tip``).
    """
    I1 = np.zeros((3, 3)) if I1 is None else np.asarray(I1, float)
    I2 = np.zeros((3, 3)) if I2 is None else np.asarray(I2, float)
    inertial2 = inertial_xml(m2, (com2[0], com2[1], 0.0), (0, 0, inertial_yaw[1]), I2)
    if payload_on_link2 is not None:
        Rz = rot_z(inertial_yaw[1])
        mass, com, inertia = merge_bodies(
            (m2, np.array([com2[0], com2[1], 0.0]), Rz @ I2 @ Rz.T), payload_on_link2)
        inertial2 = inertial_xml(mass, com, (0, 0, 0), inertia)
    parts = [
        link_xml("base"),
        link_xml("link1", inertial_xml(m1, (com1[0], com1[1], 0.0), (0, 0, inertial_yaw[0]), I1)),
        link_xml("link2", inertial2),
        link_xml("tip", "" if tip_inertial is None else inertial_xml(
            tip_inertial[0], tip_inertial[1], (0, 0, 0), tip_inertial[2])),
        joint_xml("joint1", "revolute", "base", "link1", damping=damping[0], friction=friction[0]),
        joint_xml("joint2", "revolute", "link1", "link2", xyz=(l1, 0, 0),
                  damping=damping[1], friction=friction[1]),
        joint_xml("tip_joint", "fixed", "link2", "tip", xyz=(l2, 0, 0)),
    ]
    return robot_xml("planar_2r", parts)


def point_mass_2r(m1, m2, l1, l2, **kw):
    """Seed 001 (Lynch & Park): point masses at the link ends, zero inertia."""
    return planar_2r(m1, m2, l1, l2, (l1, 0.0), (l2, 0.0), **kw)


def rod_2r(m1, m2, l1, l2, **kw):
    """Seed 003: uniform thin rods, COM at mid-length, I = m L^2 / 12 about the centre."""
    return planar_2r(m1, m2, l1, l2, (l1 / 2, 0.0), (l2 / 2, 0.0),
                     rod_inertia(m1, l1), rod_inertia(m2, l2), **kw)


def rp_arm(m1, m2, c1, H1, H2, damping=(0.0, 0.0), friction=(0.0, 0.0)):
    """Seed 000 RP arm: base -> theta (revolute z) -> link1 -> r (prismatic along link1's x,
    zero offset) -> link2. Link 1's COM is ``c1`` = (cx, cy) in link1; link 2's COM is at
    its frame origin (c_2^L = 0), i.e. at R(theta) (r, 0). H1, H2 are the planar moments."""
    parts = [
        link_xml("base"),
        link_xml("link1", inertial_xml(m1, (c1[0], c1[1], 0.0), inertia=planar_inertia(H1))),
        link_xml("link2", inertial_xml(m2, inertia=planar_inertia(H2))),
        joint_xml("theta", "revolute", "base", "link1", damping=damping[0],
                  friction=friction[0]),
        joint_xml("r", "prismatic", "link1", "link2", axis=(1, 0, 0), damping=damping[1],
                  friction=friction[1]),
    ]
    return robot_xml("rp_arm", parts)


# ---------------------------------------------------------------- rigid-body helpers

def rot_z(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy_matrix(rpy):
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def merge_bodies(a, b):
    """Two rigid bodies (mass, com(3), inertia about own com(3x3)), all in one frame's axes,
    merged into one: mass sum, mass-weighted com, parallel-axis theorem for the inertia."""
    ma, ca, Ia = a[0], np.asarray(a[1], float), np.asarray(a[2], float)
    mb, cb, Ib = b[0], np.asarray(b[1], float), np.asarray(b[2], float)
    m = ma + mb
    c = (ma * ca + mb * cb) / m

    def shift(mass, d):
        return mass * (d @ d * np.eye(3) - np.outer(d, d))

    return m, c, Ia + shift(ma, ca - c) + Ib + shift(mb, cb - c)


def random_inertia(rng, scale=0.05):
    """A random physically valid inertia tensor (principal moments obey the triangle
    inequality), rotated by a random rotation so it has products of inertia."""
    a, b = rng.uniform(0.3, 1.0, 2) * scale
    principal = np.array([a, b, rng.uniform(abs(a - b) + 0.1 * scale, a + b)])
    R = rpy_matrix(rng.uniform(-math.pi, math.pi, 3))
    return R @ np.diag(principal) @ R.T


def _unit(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def random_tree(seed=0, with_mimic=True):
    """A two-branch tree with every feature the core must handle, random numbers:

    base (has an inertial, which a fixed base must ignore)
      |- a1 revolute (random axis)      -> la1
      |    |- a2 prismatic (random axis)  -> la2
      |         |- a3 fixed (rpy)            -> la3 (massive: merged into la2 by a fixed joint)
      |              |- a4 continuous          -> la4
      |                   |- a_tip fixed         -> tool_a (massless)
      |- b0 fixed (rpy)                  -> lb0 (massive, on the base: ignored)
           |- b1 revolute                  -> lb1
                |- b2 revolute               -> lb2
                     |- b3 revolute, mimic of b2 (multiplier -0.7, offset 0.3) -> lb3
                          |- b_tip fixed          -> tool_b
    Joint origins and inertial frames carry random rpy (rotated inertial frames), inertia
    tensors random with products of inertia. Without mimic, b3 is an ordinary revolute.
    """
    rng = np.random.default_rng(seed)

    def inert():
        return inertial_xml(rng.uniform(0.5, 3.0), rng.uniform(-0.2, 0.2, 3),
                            rng.uniform(-math.pi, math.pi, 3), random_inertia(rng))

    def origin():
        return dict(xyz=rng.uniform(-0.4, 0.4, 3), rpy=rng.uniform(-math.pi, math.pi, 3))

    parts = [link_xml("base", inert())]
    for name in ("la1", "la2", "la3", "la4", "lb0", "lb1", "lb2", "lb3"):
        parts.append(link_xml(name, inert()))
    parts += [link_xml("tool_a"), link_xml("tool_b")]
    parts += [
        joint_xml("a1", "revolute", "base", "la1", axis=_unit(rng), **origin()),
        joint_xml("a2", "prismatic", "la1", "la2", axis=_unit(rng), **origin()),
        joint_xml("a3", "fixed", "la2", "la3", **origin()),
        joint_xml("a4", "continuous", "la3", "la4", axis=_unit(rng), **origin()),
        joint_xml("a_tip", "fixed", "la4", "tool_a", **origin()),
        joint_xml("b0", "fixed", "base", "lb0", **origin()),
        joint_xml("b1", "revolute", "lb0", "lb1", axis=_unit(rng), **origin()),
        joint_xml("b2", "revolute", "lb1", "lb2", axis=_unit(rng), **origin()),
        joint_xml("b3", "revolute", "lb2", "lb3", axis=_unit(rng),
                  mimic=("b2", -0.7, 0.3) if with_mimic else None, **origin()),
        joint_xml("b_tip", "fixed", "lb3", "tool_b", **origin()),
    ]
    return robot_xml("random_tree", parts)


# ---------------------------------------------------------------- URDF facts (no core)

def urdf_joints(xml):
    """{joint name: dict(type, parent, child, mimic=(master, multiplier, offset) or None)}
    read with ElementTree, in document order -- independent of the core's parser."""
    root = ET.fromstring(xml)
    out = {}
    for j in root.findall("joint"):
        m = j.find("mimic")
        mimic = None
        if m is not None:
            mimic = (m.get("joint"), float(m.get("multiplier", "1")), float(m.get("offset", "0")))
        out[j.get("name")] = dict(type=j.get("type"), parent=j.find("parent").get("link"),
                                  child=j.find("child").get("link"), mimic=mimic)
    return out


def dfs_coordinates(xml):
    """Names of the generalized coordinates in the order design.md fixes: revolute,
    continuous and prismatic joints that are not mimic joints, depth-first from the root
    link, children in document order."""
    joints = urdf_joints(xml)
    children = {}
    for name, j in joints.items():  # dict keeps document order
        children.setdefault(j["parent"], []).append(name)
    child_links = {j["child"] for j in joints.values()}
    roots = [p for p in children if p not in child_links]
    assert len(roots) == 1, roots
    order = []

    def visit(link):
        for name in children.get(link, []):
            j = joints[name]
            if j["type"] in ("revolute", "continuous", "prismatic") and j["mimic"] is None:
                order.append(name)
            visit(j["child"])

    visit(roots[0])
    return order
