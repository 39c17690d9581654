"""The dynamics node with a dynamics side file (``dynamics_file``, docs/side_file.md), over
real DDS: the side file beside its ``urdf_file`` is applied, so the mass-matrix and
effective-inertia services equal Pinocchio with ``model.armature`` set (1e-10); a side file
that cannot be used is reported in one error line, set to 'none', and the node keeps
serving the URDF's model."""
from __future__ import annotations

import pathlib

import numpy as np
import pinocchio as pin
import pytest

import ros_utils

MODULE = "manip_dynamics.nodes.dynamics_node"
UR5 = (pathlib.Path(pin.__file__).parents[4] / "share" / "example-robot-data" / "robots"
       / "ur_description" / "urdf" / "ur5_robot.urdf")
ARMATURE = [0.5, 3.7434, 1.25, 0.0708, 0.2342, 0.4365]        # kg m^2
Q = np.array([0.3, -1.1, 1.4, -0.6, 0.9, 0.2])
TIMEOUT = 120.0        # the node's first answer may wait for numba compilation


def pinocchio_terms(armature):
    """(M, Lambda 6x6 of tool0) at Q from Pinocchio with model.armature = armature."""
    model = pin.buildModelFromUrdf(str(UR5))
    model.armature = np.asarray(armature, dtype=float)
    data = model.createData()
    M = pin.crba(model, data, Q)
    M = np.triu(M) + np.triu(M, 1).T
    J = pin.computeFrameJacobian(model, data, Q, model.getFrameId("tool0"),
                                 pin.LOCAL_WORLD_ALIGNED)
    return M, np.linalg.inv(J @ np.linalg.solve(M, J.T))


def serve(node_process, tmp_path, namespace, side_text):
    urdf = tmp_path / "ur5.urdf"
    urdf.write_text(UR5.read_text())
    (tmp_path / "ur5.dynamics.yaml").write_text(side_text)
    return node_process([MODULE, "--ros-args", "-r", f"__ns:=/{namespace}",
                         "-r", "__node:=dynamics_node", "-p", f"urdf_file:={urdf}",
                         "-p", "tip_link:=tool0"])


def ask(node, proc, namespace):
    """(M (6, 6), Lambda (6, 6)) from the node's services at Q."""
    from manip_dynamics_interfaces import srv
    prefix = f"/{namespace}/dynamics_node/"
    res = ros_utils.call_service(node, srv.GetMassMatrix, prefix + "get_mass_matrix",
                                 srv.GetMassMatrix.Request(position=Q.tolist()),
                                 timeout=TIMEOUT, process=proc)
    assert res.success, res.message
    M = np.reshape(res.mass_matrix, (6, 6))
    res = ros_utils.call_service(node, srv.GetEffectiveInertia, prefix + "get_effective_inertia",
                                 srv.GetEffectiveInertia.Request(position=Q.tolist(),
                                                                 frame="tool0"),
                                 timeout=TIMEOUT, process=proc)
    assert res.success, res.message
    return M, np.reshape(res.effective_inertia, (6, 6))


def assert_close(actual, expected, what):
    scale = max(1.0, float(np.max(np.abs(expected))))
    err = float(np.max(np.abs(actual - expected)))
    assert err <= 1e-10 * scale, f"{what}: max error {err:.3e} > 1e-10 * {scale:.3g}"


@pytest.mark.timeout(300)
def test_the_side_file_beside_the_urdf_reaches_the_services(node_process, ros_node, tmp_path):
    joints = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
              "wrist_2_joint", "wrist_3_joint"]
    side = "joints:\n" + "".join(f"  {j}: {{armature: {a!r}}}\n" for j, a in zip(joints, ARMATURE))
    proc = serve(node_process, tmp_path, "armature", side)
    M, Lam = ask(ros_node, proc, "armature")
    M_pin, Lam_pin = pinocchio_terms(ARMATURE)
    assert_close(M, M_pin, "M")
    assert_close(Lam, Lam_pin, "Lambda")
    assert "with side file" in ros_utils.read_log(proc)


@pytest.mark.timeout(300)
def test_a_bad_side_file_is_reported_and_the_node_serves_the_urdf(node_process, ros_node,
                                                                   tmp_path):
    proc = serve(node_process, tmp_path, "bad_side", "joints: {elbow: {armature: 1.0}}\n")
    M, Lam = ask(ros_node, proc, "bad_side")
    M_pin, Lam_pin = pinocchio_terms(np.zeros(6))
    assert_close(M, M_pin, "M")
    assert_close(Lam, Lam_pin, "Lambda")
    log = ros_utils.read_log(proc)
    assert "parameter dynamics_file reset to 'none'" in log and "unknown joint 'elbow'" in log
    assert "Traceback" not in log
