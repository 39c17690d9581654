"""sim/visuals.add_visuals: the URDF's visual shapes put onto the MuJoCo bodies for the
demo's pictures (primitives, STL meshes through package://), massless and contact-free;
what cannot be found is listed with why."""
import os
import struct

import mujoco
import numpy as np
import pytest

from manip_dynamics.core.dynamics.description import load_description
from manip_dynamics.sim.plants import load_robot
from manip_dynamics.sim.scene import build_model, build_spec
from manip_dynamics.sim.visuals import add_visuals

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(os.path.dirname(HERE), "data", "hobby_arm_description")
XACRO = os.path.join(PKG, "urdf", "hobby_arm.urdf.xacro")
pytestmark = pytest.mark.filterwarnings("ignore::manip_dynamics.MasslessLinkWarning")


def _tetrahedron_stl(path):
    """A binary STL of the tetrahedron (0,0,0), (1,0,0), (0,1,0), (0,0,1) (m)."""
    p = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    with open(path, "wb") as f:
        f.write(b"\0" * 80 + struct.pack("<I", len(faces)))
        for a, b, c in faces:
            f.write(struct.pack("<12fH", 0, 0, 0, *p[a], *p[b], *p[c], 0))


def test_primitives_of_the_xacro_arm_are_added_without_mass_or_contact():
    model, xml = load_robot("", XACRO, None, [PKG])
    spec = build_spec(xml, model)
    added, missing = add_visuals(spec, xml)
    assert (added, missing) == (5, [])                # one cylinder on each of 5 links
    m = spec.compile()
    plain = build_model(xml, model)
    np.testing.assert_array_equal(m.body_mass, plain.body_mass)     # no mass added
    g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "upper_arm_visual0")
    assert m.geom_type[g] == mujoco.mjtGeom.mjGEOM_CYLINDER
    assert m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0
    np.testing.assert_allclose(m.geom_size[g][:2], [0.015, 0.06])  # radius, half length
    np.testing.assert_allclose(m.geom_pos[g], [0, 0, 0.06])        # its <origin>


def test_mesh_through_package_uri_and_what_is_missing(tmp_path):
    pkg = tmp_path / "my_arm"
    (pkg / "meshes").mkdir(parents=True)
    _tetrahedron_stl(pkg / "meshes" / "link.stl")
    xml = load_description(XACRO, package_paths=[PKG]).replace(
        '<cylinder length="0.06" radius="0.015"/>',
        '<mesh filename="package://my_arm/meshes/link.stl" scale="0.1 0.1 0.1"/>').replace(
        '<cylinder length="0.02" radius="0.01"/>',
        '<mesh filename="package://other_arm/meshes/cam.dae"/>')
    model, _ = load_robot("", XACRO, None, [PKG])
    spec = build_spec(xml, model)
    added, missing = add_visuals(spec, xml, package_paths=[tmp_path])
    assert added == 4 and len(missing) == 1
    assert "package://other_arm/meshes/cam.dae" in missing[0]
    m = spec.compile()
    g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "hand_visual0")
    assert m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH
    mesh = m.geom_dataid[g]
    verts = m.mesh_vert[m.mesh_vertadr[mesh]:m.mesh_vertadr[mesh] + m.mesh_vertnum[mesh]]
    assert verts.shape[0] == 4                                       # the tetrahedron


def test_reset_puts_mimic_joints_where_their_equality_holds():
    """MujocoPlant.reset with the xacro arm leaned (shoulder 0.6 rad): the camera's mimic
    joint goes to -0.6 rad (multiplier -1), so g(q) of our core holds the arm: drift 0
    over 1.6 s with the plant's friction off. Left at 0, MuJoCo's equality constraint
    kicked the arm (2.4e-3 rad after 10 ms, 1.5 rad after 1.6 s)."""
    from manip_dynamics.sim.mujoco_plant import MujocoPlant
    from manip_dynamics.sim.scene import SceneOptions
    model, xml = load_robot("", XACRO, None, [PKG])
    plant = MujocoPlant(xml, model, SceneOptions(viscous=np.zeros(4), coulomb=np.zeros(4)))
    q0 = np.array([0.0, 0.6, -0.3, 0.2])
    plant.reset(q0)
    cam = plant.m.jnt_qposadr[mujoco.mj_name2id(plant.m, mujoco.mjtObj.mjOBJ_JOINT,
                                                "camera_tilt")]
    assert plant.d.qpos[cam] == pytest.approx(-0.6)
    for _ in range(160):
        plant.advance(model.gravity_torques(plant.q), 10)
    assert np.abs(plant.q - q0).max() < 1e-9
