"""Pinocchio as the safety tests' reference: the model of a URDF with a frame ``probe<k>``
at every monitored point (its link's frame, shifted by the point's offset), and the
permutations between Pinocchio's coordinates and our joint order."""
from types import SimpleNamespace

import numpy as np
import pinocchio as pin


def pinocchio_with_points(path, model, points, armature=None):
    """SimpleNamespace(pm, data, q_order, v_order, frames): Pinocchio's model of ``path``
    with a frame per point of ``points`` (``frames[k]`` its id), ``armature`` (our joint
    order) set as ``pm.armature`` when given; q_order / v_order map our joints to
    Pinocchio's q / v indices."""
    pm = pin.buildModelFromUrdf(str(path))
    names = list(pm.names)
    v_order = [pm.joints[names.index(j)].idx_v for j in model.joint_names]
    q_order = [pm.joints[names.index(j)].idx_q for j in model.joint_names]
    if armature is not None:
        a = np.zeros(pm.nv)
        a[v_order] = armature
        pm.armature = a
    for k, p in enumerate(points):
        parent = pm.frames[pm.getFrameId(p.link)]
        pm.addFrame(pin.Frame(f"probe{k}", parent.parentJoint,
                              parent.placement * pin.SE3(np.eye(3), np.array(p.offset)),
                              pin.FrameType.OP_FRAME))
    frames = [pm.getFrameId(f"probe{k}") for k in range(len(points))]
    return SimpleNamespace(pm=pm, data=pm.createData(), q_order=q_order, v_order=v_order,
                           frames=frames)
