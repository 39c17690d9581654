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


# --------------------------------------------------------------- what goes through xacro
def _shape(node):
    """A minidom node as nested tuples: elements (tag, attributes but xmlns:xacro, children),
    text and CDATA (whitespace-only dropped), comments; what xacro's output is compared by."""
    if node.nodeType == node.ELEMENT_NODE:
        attrs = sorted((k, v) for k, v in node.attributes.items() if k != "xmlns:xacro")
        kids = [s for s in (_shape(c) for c in node.childNodes) if s is not None]
        return (node.tagName, attrs, kids)
    if node.nodeType in (node.TEXT_NODE, node.CDATA_SECTION_NODE):
        return ("text", node.data) if node.data.strip() else None
    if node.nodeType == node.COMMENT_NODE:
        return ("comment", node.data)
    return None


def _xacro_changes(path):
    """Whether xacro itself (its process_file, no arguments) changes the document at
    ``path``: the independent answer :func:`needs_xacro` must give."""
    import xml.dom.minidom

    import xacro
    before = _shape(xml.dom.minidom.parse(str(path)).documentElement)
    try:
        after = _shape(xacro.process_file(str(path)).documentElement)
    except Exception:            # noqa: BLE001  (e.g. an unresolvable $(find ...))
        return True
    return before != after


XACRO_NS = 'xmlns:xacro="http://www.ros.org/wiki/xacro"'
NEEDS_XACRO_CASES = {     # body of <robot ...>: does xacro change it?
    "declaration only": ('<link name="a"><visual><geometry><box size="1 2 3"/></geometry>'
                         '</visual></link>', False),
    "comment with ${...}": ('<!-- <link name="${prefix}b"/> --><link name="a"/>', False),
    "CDATA with ${...}": ('<link name="a"/><gazebo><![CDATA[x = ${y}]]></gazebo>', False),
    "a lone $ in text": ('<link name="a"/><gazebo>costs $5 {a} (b)</gazebo>', False),
    "property": ('<xacro:property name="l" value="1"/><link name="a"/>', True),
    "expression in an attribute": ('<link name="a${1+1}"/>', True),
    "substitution in an attribute": ('<link name="$(arg n)"/><xacro:arg name="n" '
                                     'default="a"/>', True),
    "expression in text": ('<link name="a"/><gazebo>${2*3}</gazebo>', True),
    "escaped expression": ('<link name="a"/><gazebo>$${x}</gazebo>', True),
    "xacro: attribute": ('<link name="a"/>', True),       # xacro:targetNamespace below
    "eval-comments": ('<!-- xacro:eval-comments --><!-- ${1+1} --><link name="a"/>', True),
}


@pytest.mark.parametrize("case", sorted(NEEDS_XACRO_CASES))
def test_xacro_runs_exactly_where_it_changes_the_file(case, tmp_path):
    """needs_xacro against xacro itself, on what it acts on and what only looks like it;
    a file needing no xacro is returned as written."""
    from manip_dynamics.core.dynamics.description import needs_xacro
    body, expected = NEEDS_XACRO_CASES[case]
    extra = ' xacro:targetNamespace="urn:x"' if case == "xacro: attribute" else ""
    text = f'<?xml version="1.0"?>\n<robot name="r" {XACRO_NS}{extra}>{body}</robot>\n'
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    assert _xacro_changes(path) is expected           # the cases mean what they say
    assert needs_xacro(text) is expected
    if not expected:
        assert load_description(path) == text


def test_example_robot_data_needs_xacro_only_where_xacro_changes_it():
    """example-robot-data: no URDF of the 69 needs xacro, and for the 38 that declare
    xmlns:xacro (xacro output; ur3.urdf an empty xacro wrapper) xacro itself agrees: it
    changes nothing but the declaration."""
    import glob

    from manip_dynamics.core.dynamics.description import needs_xacro

    from .test_pinocchio import ERD
    files = sorted(glob.glob(f"{ERD}/**/*.urdf", recursive=True))
    declaring = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        assert not needs_xacro(text), f
        if "xmlns:xacro" in text:
            declaring.append(f)
    assert (len(files), len(declaring)) == (69, 38)
    assert [f for f in declaring if _xacro_changes(f)] == []


def test_broken_xml_is_named_with_its_file(tmp_path):
    """Not well-formed: with xacro constructs in it, xacro's error names the file; without,
    the text goes to the URDF parser as written (which names the XML error)."""
    path = tmp_path / "arm.urdf.xacro"
    path.write_text(f'<robot name="r" {XACRO_NS}><xacro:property name="a" value="1"/>'
                    '<link name="${a}"></robot>')
    with pytest.raises(URDFError, match="arm.urdf.xacro"):
        load_description(path)
    plain = tmp_path / "arm.urdf"
    plain.write_text(f'<robot name="r" {XACRO_NS}><link name="a"></robot>')
    assert load_description(plain) == plain.read_text()
    with pytest.raises(URDFError, match="invalid URDF XML"):
        RobotModel.from_urdf_file(plain)
