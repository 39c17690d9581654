"""The model's armature (RobotModel.with_armature) reaches the MuJoCo plant as
``dof_armature``, and MuJoCo's M(q) (its own CRBA, ``mj_fullM``) and its forward dynamics
(``qacc`` under a torque) then equal the core's with the armature (1e-10): two independent
engines adding the rotors' inertia the same way (the package's 7-joint Panda)."""
import mujoco
import numpy as np
import pytest

from manip_dynamics import RobotModel, robots
from manip_dynamics.sim.mujoco_plant import MujocoPlant
from manip_dynamics.sim.scene import SceneOptions, build_model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ARMATURE = np.array([0.5, 1.5, 0.25, 0.75, 0.125, 0.3, 0.05])      # kg m^2
Q = [np.array([0.1, -0.5, 0.3, -2.0, 0.4, 1.2, -0.3]),
     np.array([-1.0, 0.6, -0.8, -1.2, -1.5, 2.5, 1.0])]


def test_armature_reaches_mujoco_and_its_dynamics():
    xml = robots.read("panda")
    model = RobotModel.from_urdf_string(xml).with_armature(ARMATURE)
    m = build_model(xml, model)
    joints = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in model.joint_names]
    np.testing.assert_array_equal(m.dof_armature[m.jnt_dofadr[joints]], ARMATURE)
    zero = np.zeros(model.n)
    plant = MujocoPlant(xml, model, SceneOptions(viscous=zero, coulomb=zero, floor=False))
    tau = np.array([3.0, -2.0, 1.0, 4.0, -1.0, 0.5, 0.2])
    for q in Q:
        plant.reset(q)
        M = np.zeros((plant.m.nv, plant.m.nv))
        mujoco.mj_fullM(plant.m, plant.d, M)
        M = M[np.ix_(plant.dadr, plant.dadr)]
        np.testing.assert_allclose(M, model.mass_matrix(q), rtol=0, atol=1e-10)
        assert np.min(np.diag(M) - np.diag(RobotModel.from_urdf_string(xml).mass_matrix(q))
                      - ARMATURE) > -1e-10
        plant.d.ctrl[:] = tau                    # one motor per joint, gear 1
        mujoco.mj_forward(plant.m, plant.d)
        assert plant.d.nefc == 0                  # no limit or contact force at these q
        np.testing.assert_allclose(plant.d.qacc[plant.dadr], model.forward_dynamics(q, zero, tau),
                                   rtol=0, atol=1e-10)
