"""The body table: the parsed tree as one record per body, with named fields, for the kernels.

``body_table(structure, inert)`` builds it once per model from what the parser returns
(:class:`manip_dynamics.core.dynamics.urdf.Structure`: its ``topo`` and ``geom`` arrays and the
model's inertias ``inert``, payloads included). Body ``i`` is the moving joint ``i`` in
depth-first order and the links it carries; the kernels read ``bodies[i].parent``,
``bodies[i].R_tree`` ... instead of packed columns.

========================  ===========  ===================================================
field                     shape        meaning
========================  ===========  ===================================================
``parent``                ()           parent body, ``parent < i``; -1 = the root (fixed base)
``jtype``                 ()           ``REVOLUTE`` (0) or ``PRISMATIC`` (1); the kernels
                                       refuse any other value
``q_index``               ()           the coordinate driving the joint: its own, or its
                                       mimic master's
``axis``                  (3,)         unit joint axis in the joint frame
``R_tree``, ``p_tree``    (3, 3), (3,) ``X_parent_joint``: the joint frame in the parent
                                       body's frame (fixed): ``X_parent_body(q) =
                                       X_parent_joint * joint(q)``
``mimic_multiplier``,     (), ()       ``q_full[i] = mimic_multiplier * q[q_index] +
``mimic_offset``                       mimic_offset`` (1 and 0 for a coordinate)
``mass``, ``com``,        (), (3,),    kg; centre of mass (m) and inertia about it (kg m^2)
``I_com``                 (3, 3)       in the body frame, payloads included
``armature``              ()           the reflected rotor inertia of the body's own
                                       coordinate (kg m^2, or kg for a prismatic joint),
                                       added to M_full[i, i] by the CRBA; 0 on a mimic
                                       joint's body (armature is per coordinate)
========================  ===========  ===================================================

Why a structured array and not a namedtuple of arrays: a numba kernel unboxes one array
argument in ~0.1 us, a namedtuple of eleven arrays in ~8 us, more than a 6-dof bundle's
arithmetic; the fields are read the same way (``b = bodies[i]; b.R_tree[r, c]``).
"""
from __future__ import annotations

import numpy as np

REVOLUTE, PRISMATIC = 0, 1

BODY = np.dtype([
    ("parent", np.int64),
    ("jtype", np.int64),
    ("q_index", np.int64),
    ("axis", np.float64, (3,)),
    ("R_tree", np.float64, (3, 3)),
    ("p_tree", np.float64, (3,)),
    ("mimic_multiplier", np.float64),
    ("mimic_offset", np.float64),
    ("mass", np.float64),
    ("com", np.float64, (3,)),
    ("I_com", np.float64, (3, 3)),
    ("armature", np.float64),
])


def body_table(structure, inert, armature=None) -> np.ndarray:
    """The read-only (nb,) BODY array of ``structure`` with the inertias ``inert`` and the
    per-coordinate ``armature`` ((n,) in q order, kg m^2 or kg; None: zeros).

    ``structure.topo`` (nb, 3) int: parent, jtype, master; ``structure.geom`` (nb, 17):
    axis (3), R_tree (9, row-major), p_tree (3), mimic multiplier, offset; ``inert``
    (nb, 13): mass, com (3), I_com (9, row-major) -- the parser's packed layout, read here
    and nowhere else. ``armature[j]`` goes to the body of coordinate j itself (the body
    whose joint is ``structure.joint_names[j]``), not to the mimic joints it drives.
    """
    topo, geom = structure.topo, structure.geom
    nb = topo.shape[0]
    bodies = np.zeros(nb, dtype=BODY)
    bodies["parent"] = topo[:, 0]
    bodies["jtype"] = topo[:, 1]
    bodies["q_index"] = topo[:, 2]
    bodies["axis"] = geom[:, 0:3]
    bodies["R_tree"] = geom[:, 3:12].reshape(nb, 3, 3)
    bodies["p_tree"] = geom[:, 12:15]
    bodies["mimic_multiplier"] = geom[:, 15]
    bodies["mimic_offset"] = geom[:, 16]
    bodies["mass"] = inert[:, 0]
    bodies["com"] = inert[:, 1:4]
    bodies["I_com"] = inert[:, 4:13].reshape(nb, 3, 3)
    if armature is not None:
        own = np.array([structure.full_joint_names[b] == structure.joint_names[topo[b, 2]]
                        for b in range(nb)], dtype=bool)
        bodies["armature"] = np.where(own, np.asarray(armature, dtype=float)[topo[:, 2]], 0.0)
    bodies.setflags(write=False)
    return bodies
