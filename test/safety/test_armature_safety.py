"""The safety outputs with the rotors' reflected inertia (armature, issue 34 item 3).

The monitored points' effective masses (:mod:`manip_dynamics.safety.kernel`, its own CRBA
pass through the core's ``mass_matrix`` kernel) and the permissible speeds built on them
must use M = M_rigid + diag(armature): compared with Pinocchio with ``model.armature`` set
(a frame per point, LOCAL_WORLD_ALIGNED Jacobian, ``crba``: m = 1 / (u^T J_p M^-1 J_p^T u)
along the kernel's direction), 1e-10 relative, on a UR5 with drawn armatures and on the real
UR10e of Mamedov et al. 2020 with the authors' pi_drvs (``shared/data``; skipped with the
reason where absent).
"""
import pathlib
import sys

import numpy as np
import pinocchio as pin
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from pin_points import pinocchio_with_points  # noqa: E402
from shared_data import missing_reason, shared_data  # noqa: E402

from manip_dynamics import RobotModel  # noqa: E402
from manip_dynamics.safety import (BodyModel, MonitoredPoint, SafetyMonitor,  # noqa: E402
                                   default_points, permissible_speed)

UR10E_DATA = "ur10e-mamedov2020"
UR10E_PI_DRVS = [0.0, 3.7434, 0.0, 0.0708, 0.2342, 0.4365]     # kg m^2, UR10E_parameters.txt


def ur5_path():
    return (pathlib.Path(pin.__file__).parents[4] / "share" / "example-robot-data" / "robots"
            / "ur_description" / "urdf" / "ur5_robot.urdf")


def ur10e_path():
    folder = shared_data(UR10E_DATA)
    if folder is None:
        pytest.skip(missing_reason(UR10E_DATA))
    return folder / "ur10e.urdf"


def pinocchio_point_inverses(path, model, points, armature, q):
    """A_i = J_p,i M^-1 J_p,i^T (P, 3, 3) from Pinocchio with model.armature set (our
    joint order)."""
    ref = pinocchio_with_points(path, model, points, armature)
    pm, data, v_order = ref.pm, ref.data, ref.v_order
    qp = np.zeros(pm.nq)
    qp[ref.q_order] = q
    pin.computeJointJacobians(pm, data, qp)
    pin.updateFramePlacements(pm, data)
    M = pin.crba(pm, data, qp)
    M = (np.triu(M) + np.triu(M, 1).T)[np.ix_(v_order, v_order)]
    A = []
    for k in range(len(points)):
        Jp = pin.getFrameJacobian(pm, data, pm.getFrameId(f"probe{k}"),
                                  pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3, v_order]
        A.append(Jp @ np.linalg.solve(M, Jp.T))
    return np.array(A)


@pytest.mark.parametrize("name", ["ur5", "ur10e"])
def test_point_masses_and_speed_limits_with_armature(name):
    path = ur10e_path() if name == "ur10e" else ur5_path()
    rigid = RobotModel.from_urdf_file(path)
    armature = (np.array(UR10E_PI_DRVS) if name == "ur10e"
                else np.random.default_rng(3).uniform(0.1, 2.0, rigid.n))
    model = rigid.with_armature(armature)
    points = default_points(model, extra=[MonitoredPoint("tool0", (0.0, 0.05, 0.1), "tcp")])
    region = BodyModel.load()["chest"]
    monitor = SafetyMonitor(model, points, region)
    rigid_monitor = SafetyMonitor(rigid, points, region)
    rng = np.random.default_rng(4)
    heavier = 0
    for trial in range(6):
        q = rng.uniform(-2.5, 2.5, model.n)
        qd = rng.uniform(-1, 1, model.n)
        state = monitor.assess(q, qd)
        A = pinocchio_point_inverses(path, model, points, armature, q)
        u = state.motion.direction
        for i in range(len(points)):
            if state.motion.speed[i] == 0:
                continue                         # a point on a link that does not move
            expect = 1.0 / (u[i] @ A[i] @ u[i])
            assert state.motion.effective_mass[i] == pytest.approx(expect, rel=1e-10), \
                (points[i].label, trial)
            assert state.v_max[i] == pytest.approx(
                float(permissible_speed(region, expect)), rel=1e-10)
        m_rigid = rigid_monitor.assess(q, qd).motion.effective_mass
        heavier += int(np.sum(state.motion.effective_mass > m_rigid * (1 + 1e-9)))
    assert heavier > 0            # the armature is felt (guards against a no-op reference)
