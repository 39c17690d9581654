"""core.description: URDF files read as written, xacro files expanded (arguments, includes,
$(find pkg)), package:// resolved; what cannot be resolved is a URDFError naming it.

The xacro fixture is test/data/hobby_arm_description (a 4-DOF arm; an include through
$(find hobby_arm_description); camera_tilt mimics the shoulder with multiplier -1).
"""
import math
import os

import numpy as np
import pytest

from manip_dynamics import RobotModel, robots
from manip_dynamics.core.dynamics.description import (find_package, load_description,
                                              parse_xacro_args, resolve_package_uri)
from manip_dynamics.core.errors import URDFError

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(os.path.dirname(os.path.dirname(HERE)), "data", "hobby_arm_description")
XACRO = os.path.join(PKG, "urdf", "hobby_arm.urdf.xacro")
pytestmark = pytest.mark.filterwarnings("ignore::manip_dynamics.MasslessLinkWarning")


@pytest.fixture(autouse=True)
def no_ros_paths(monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)


def test_plain_urdf_is_read_as_written():
    assert load_description(robots.path("panda")) == robots.read("panda")


def test_xacro_with_arguments_include_and_mimic():
    xml = load_description(XACRO, ["prefix:=a_", "scale:=1.0"], [PKG])
    model = RobotModel.from_urdf_string(xml)
    assert model.joint_names == ("a_waist", "a_shoulder", "a_elbow", "a_wrist")
    assert model.mimic_joint_names == ("a_camera_tilt",)
    # shoulder at +pi/2: the arm horizontal along +x. Holding torque about +y, closed form
    # -g sum m_i x_i: upper arm 0.06 kg at 0.06 m, forearm 0.05 at 0.18, hand 0.06 at
    # 0.27, camera 0.02 kg at 0.06 m (its mount, 0.02 m off the arm, turns level).
    expected = -9.81 * (0.06 * 0.06 + 0.05 * 0.18 + 0.06 * 0.27 + 0.02 * 0.06)
    g = model.gravity_torques([0.0, math.pi / 2, 0.0, 0.0])
    assert g[1] == pytest.approx(expected, abs=1e-12)


def test_xacro_arguments_change_the_model():
    small = RobotModel.from_urdf_file(XACRO, xacro_args="scale:=0.5", package_paths=[PKG])
    big = RobotModel.from_urdf_file(XACRO, xacro_args={"scale": 2}, package_paths=[PKG])
    tip = small.default_tip
    z_small, z_big = (m.frame_pose(np.zeros(4), tip)[2, 3] for m in (small, big))
    assert z_big == pytest.approx(4 * z_small)          # every length scaled


@pytest.mark.parametrize("variable", ["ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH"])
def test_find_through_the_environment(monkeypatch, tmp_path, variable):
    if variable == "ROS_PACKAGE_PATH":
        monkeypatch.setenv(variable, os.path.dirname(PKG))
        expected = PKG
    else:                                   # an install prefix: <prefix>/share/<pkg>
        share = tmp_path / "share"
        share.mkdir()
        (share / "hobby_arm_description").symlink_to(PKG)
        monkeypatch.setenv(variable, str(tmp_path))
        expected = str(share / "hobby_arm_description")
    assert str(find_package("hobby_arm_description")) == expected
    assert "a_waist" not in load_description(XACRO)   # no prefix: the default ""
    assert 'name="waist"' in load_description(XACRO)


def test_package_uri():
    assert resolve_package_uri("package://hobby_arm_description/urdf/macros.xacro",
                               [PKG]).is_file()
    assert str(resolve_package_uri("mesh.stl", base_dir="/a")) == "/a/mesh.stl"
    with pytest.raises(URDFError, match="package 'nope' not found"):
        resolve_package_uri("package://nope/mesh.stl", [PKG])


def test_unresolvable_find_names_the_package():
    with pytest.raises(URDFError, match="hobby_arm.urdf.xacro.*package 'hobby_arm_description' "
                                        "not found.*ROS_PACKAGE_PATH"):
        load_description(XACRO)


def test_missing_include_names_the_file(tmp_path):
    path = tmp_path / "arm.xacro"
    path.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                    '<xacro:include filename="parts/missing.xacro"/><link name="a"/></robot>')
    with pytest.raises(URDFError, match=r"arm.xacro: cannot open included file .*"
                                        r"parts/missing.xacro"):
        load_description(path)


def test_undefined_argument_and_bad_argument_syntax(tmp_path):
    path = tmp_path / "arm.urdf.xacro"
    path.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                    '<link name="$(arg base)"/></robot>')
    with pytest.raises(URDFError, match="arm.urdf.xacro.*base"):
        load_description(path)
    assert '<link name="root"/>' in load_description(path, "base:=root")
    with pytest.raises(URDFError, match="'base=root' is not of the form name:=value"):
        parse_xacro_args(["base=root"])


def test_unreadable_file():
    with pytest.raises(URDFError, match="cannot read '/no/such.urdf': No such file"):
        load_description("/no/such.urdf")
