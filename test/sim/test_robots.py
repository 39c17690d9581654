"""The embedded robots: loadable, physically valid, and equal to the numbers they cite."""
import math

import numpy as np
import pytest

from manip_dynamics import RobotModel, robots

# Tip frames (tool, panda_link8) are massless on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::manip_dynamics.MasslessLinkWarning")


def test_names_and_paths():
    assert set(robots.names()) >= {"planar_2r", "planar_rp", "panda"}
    for name in robots.names():
        assert robots.path(name).endswith(name + ".urdf")
        assert f'<robot name="{name}"' in robots.read(name)
    with pytest.raises(KeyError, match="planar_2r"):
        robots.path("no_such_robot")


@pytest.mark.parametrize("name", ["planar_2r", "planar_rp", "panda"])
def test_every_joint_has_limits_and_friction(name):
    model = RobotModel.from_urdf_file(robots.path(name))
    assert np.all(np.isfinite(model.effort_limits)) and np.all(model.effort_limits > 0)
    assert np.all(np.isfinite(model.velocity_limits)) and np.all(model.velocity_limits > 0)
    assert np.all(model.position_lower < model.position_upper)
    assert np.all(model.coulomb > 0)
    assert np.all(model.viscous >= 0)


@pytest.mark.parametrize("name", ["planar_2r", "planar_rp", "panda"])
def test_inertias_are_physical(name):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(robots.read(name))
    inertials = root.findall("link/inertial")
    assert inertials
    for inertial in inertials:
        assert float(inertial.find("mass").get("value")) > 0
        i = {k: float(v) for k, v in inertial.find("inertia").attrib.items()}
        tensor = np.array([[i["ixx"], i["ixy"], i["ixz"]],
                           [i["ixy"], i["iyy"], i["iyz"]],
                           [i["ixz"], i["iyz"], i["izz"]]])
        ev = np.sort(np.linalg.eigvalsh(tensor))
        assert ev[0] > 0                       # positive definite
        assert ev[0] + ev[1] >= ev[2] - 1e-12  # triangle inequality of principal moments


def test_planar_2r_gravity_matches_the_seed_closed_form():
    model = RobotModel.from_urdf_file(robots.path("planar_2r"))
    m1, m2, l1, d1, d2, g0 = 2.0, 1.2, 0.6, 0.3, 0.2, 9.81
    for q1, q2 in [(0.0, 0.0), (0.3, 0.5), (-1.2, 2.0)]:
        expected = [g0 * ((m1 * d1 + m2 * l1) * math.cos(q1) + m2 * d2 * math.cos(q1 + q2)),
                    g0 * m2 * d2 * math.cos(q1 + q2)]
        np.testing.assert_allclose(model.gravity_torques([q1, q2]), expected, atol=1e-10)


def test_planar_rp_mass_matrix_matches_the_seed_closed_form():
    model = RobotModel.from_urdf_file(robots.path("planar_rp"))
    # link 1: 2 kg rod, 0.6 m, radius 0.025 m, CoM 0.3 m out; link 2: 1 kg 0.1 m cube at r
    h1 = 2.0 * (3 * 0.025 ** 2 + 0.6 ** 2) / 12
    h2 = 1.0 * (0.1 ** 2 + 0.1 ** 2) / 12
    h_bar = h1 + 2.0 * 0.3 ** 2 + h2              # the URDF rounds h2 to 8 digits
    for theta, r in [(0.0, 0.2), (0.7, 0.55), (-2.0, 1.0)]:
        np.testing.assert_allclose(model.mass_matrix([theta, r]),
                                   [[h_bar + 1.0 * r ** 2, 0.0], [0.0, 1.0]], atol=1e-8)
        np.testing.assert_allclose(model.gravity_torques([theta, r]),
                                   [9.81 * (2.0 * 0.3 + 1.0 * r) * math.cos(theta),
                                    9.81 * 1.0 * math.sin(theta)], atol=1e-10)


def _modified_dh(a, d, alpha, theta):
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array([[ct, -st, 0, a],
                     [st * ca, ct * ca, -sa, -d * sa],
                     [st * sa, ct * sa, ca, d * ca],
                     [0, 0, 0, 1]])


def test_panda_flange_pose_equals_the_published_dh_table():
    """Franka's modified-DH table, chained independently of the URDF."""
    dh = [(0, 0.333, 0), (0, 0, -math.pi / 2), (0, 0.316, math.pi / 2),
          (0.0825, 0, math.pi / 2), (-0.0825, 0.384, -math.pi / 2), (0, 0, math.pi / 2),
          (0.088, 0, math.pi / 2)]
    model = RobotModel.from_urdf_file(robots.path("panda"))
    rng = np.random.default_rng(5)
    for q in [np.zeros(7), rng.uniform(model.position_lower, model.position_upper)]:
        pose = np.eye(4)
        for (a, d, alpha), qi in zip(dh, q):
            pose = pose @ _modified_dh(a, d, alpha, qi)
        pose = pose @ _modified_dh(0, 0.107, 0, 0)
        np.testing.assert_allclose(model.frame_pose(q, "panda_link8"), pose, atol=1e-12)


def test_panda_masses_are_gaz_et_al_2019():
    model = RobotModel.from_urdf_file(robots.path("panda"))
    import xml.etree.ElementTree as ET

    masses = [float(e.get("value")) for e in ET.fromstring(robots.read("panda")).iter("mass")]
    np.testing.assert_allclose(masses, [4.970684, 0.646926, 3.228604, 3.587895, 1.225946,
                                        1.666555, 0.735522])
    assert model.n == 7
    np.testing.assert_allclose(model.effort_limits, [87] * 4 + [12] * 3)
