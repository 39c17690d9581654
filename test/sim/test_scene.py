"""The MuJoCo plant built from a URDF (sim.scene, no ROS): what transfers, and the truth
perturbations, each against an independent expectation.

* URDF numbers -> MuJoCo fields: ranges, damping, friction loss, motor ranges (Panda).
* Collision meshes that cannot be found do not matter: example-robot-data's Panda names
  ``package://`` meshes; it loads, with one capsule or sphere per link segment.
* mass_factors = k for all links scales every mass and inertia tensor, so MuJoCo's M(q)
  and g(q) must be exactly k times our core's (both are linear in the inertial parameters).
* com_factors and per-joint mass factors: the same URDF with those numbers edited into
  its text, read by OUR core, must equal the perturbed plant (1e-10).
* payload: our core's ``with_payload`` (a solid sphere's inertia) must equal the plant.
"""
import os
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from manip_dynamics import RobotModel, robots
from manip_dynamics.sim.mujoco_plant import MujocoPlant
from manip_dynamics.sim.scene import SceneOptions, build_model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
Q = [np.array([0.1, -0.5, 0.3, -2.0, 0.4, 1.2, -0.3]),
     np.array([-1.0, 0.6, -0.8, -1.2, -1.5, 2.5, 1.0])]


def _mujoco_M_and_g(plant, q):
    plant.reset(q)
    M = np.zeros((plant.m.nv, plant.m.nv))
    mujoco.mj_fullM(plant.m, plant.d, M)
    return M[np.ix_(plant.dadr, plant.dadr)], plant.d.qfrc_bias[plant.dadr].copy()


def _plant(xml, model, **options):
    zero = np.zeros(model.n)
    return MujocoPlant(xml, model, SceneOptions(viscous=zero, coulomb=zero, floor=False,
                                                **options))


def _assert_equal(plant, reference, scale=1.0):
    for q in Q:
        M, g = _mujoco_M_and_g(plant, q)
        np.testing.assert_allclose(M, scale * reference.mass_matrix(q), rtol=0, atol=1e-10)
        np.testing.assert_allclose(g, scale * reference.gravity_torques(q), rtol=0, atol=1e-10)


def test_urdf_numbers_reach_mujoco():
    xml = robots.read("panda")
    model = RobotModel.from_urdf_string(xml)
    m = build_model(xml, model)
    joints = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in model.joint_names]
    np.testing.assert_array_equal(m.jnt_range[joints, 0], model.position_lower)
    np.testing.assert_array_equal(m.jnt_range[joints, 1], model.position_upper)
    assert np.all(m.jnt_limited[joints] == 1)
    dofs = m.jnt_dofadr[joints]
    np.testing.assert_array_equal(m.dof_damping[dofs], model.viscous)
    np.testing.assert_array_equal(m.dof_frictionloss[dofs], model.coulomb)
    assert np.all(m.dof_armature == 0)
    np.testing.assert_array_equal(m.actuator_ctrlrange[:, 1], model.effort_limits)
    assert m.nu == 7 and np.all(m.actuator_trnid[:, 0] == joints)


def test_unfindable_meshes_are_replaced_by_capsules():
    path = os.path.join(os.path.dirname(pin.__file__), *[os.pardir] * 4, "share",
                        "example-robot-data", "robots", "panda_description", "urdf",
                        "panda.urdf")
    xml = open(os.path.normpath(path), encoding="utf-8").read()
    assert "package://" in xml and "<mesh" in xml
    model = RobotModel.from_urdf_string(xml)
    m = build_model(xml, model)
    arm = [g for g in range(m.ngeom) if m.geom_bodyid[g] > 0]
    assert len(arm) >= m.nbody - 1
    kinds = {int(m.geom_type[g]) for g in arm}
    assert kinds <= {int(mujoco.mjtGeom.mjGEOM_CAPSULE), int(mujoco.mjtGeom.mjGEOM_SPHERE)}
    assert np.all(m.geom_contype[arm] & m.geom_conaffinity[arm] == 0)   # no self-collision


def test_scaling_every_mass_scales_M_and_g():
    xml = robots.read("panda")
    model = RobotModel.from_urdf_string(xml)
    _assert_equal(_plant(xml, model, mass_factors=np.array([1.7])), model, scale=1.7)


def _edited_urdf(xml, model, mass_factors, com_factors):
    """The URDF with the child link of joint i given mass * m_i, inertia * m_i, com * c_i."""
    root = ET.fromstring(xml)
    child = {j.get("name"): j.find("child").get("link") for j in root.findall("joint")}
    links = {link.get("name"): link for link in root.findall("link")}
    for name, fm, fc in zip(model.joint_names, mass_factors, com_factors):
        inertial = links[child[name]].find("inertial")
        mass = inertial.find("mass")
        mass.set("value", repr(float(mass.get("value")) * float(fm)))
        inertia = inertial.find("inertia")
        for key, value in inertia.attrib.items():
            inertia.set(key, repr(float(value) * float(fm)))
        origin = inertial.find("origin")
        xyz = np.array(origin.get("xyz").split(), dtype=float) * fc
        origin.set("xyz", " ".join(repr(float(x)) for x in xyz))
    return ET.tostring(root, encoding="unicode")


def test_per_joint_mass_and_com_factors_equal_the_edited_urdf():
    xml = robots.read("panda")
    model = RobotModel.from_urdf_string(xml)
    fm = np.array([1.1, 0.9, 1.3, 0.8, 1.2, 1.05, 0.7])
    fc = np.array([1.2, 0.8, 1.1, 0.9, 1.3, 0.7, 1.15])
    truth = RobotModel.from_urdf_string(_edited_urdf(xml, model, fm, fc))
    plant = _plant(xml, model, mass_factors=fm, com_factors=fc)
    _assert_equal(plant, truth)
    with pytest.raises(AssertionError):
        _assert_equal(plant, model)                 # and the nominal model is now wrong


def test_payload_equals_the_core_with_that_payload():
    xml = robots.read("panda")
    model = RobotModel.from_urdf_string(xml)
    mass, com, radius = 1.5, (0.02, -0.01, 0.12), 0.05
    plant = _plant(xml, model, payload_link="panda_link7", payload_mass=mass,
                   payload_com=com, payload_radius=radius)
    truth = model.with_payload("panda_link7", mass, com, np.eye(3) * 0.4 * mass * radius ** 2)
    _assert_equal(plant, truth)
