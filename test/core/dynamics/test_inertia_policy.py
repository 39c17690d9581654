"""The URDF inertia policy (manip_dynamics/core/dynamics/inertia.py) and the rules it is built on.

Expected values are closed forms: a single revolute joint about x through the origin feels
M = I_xx + m (y_c^2 + z_c^2) of its link (com c, tensor about the com, link axes = joint
axes), whatever the sign of I_xx.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pinocchio as pin
import pytest

from manip_dynamics import InertiaWarning, RobotModel, URDFError
from manip_dynamics.core.dynamics import inertia as IN

from .test_model_api import joint, link, robot

ERD = os.path.normpath(os.path.join(os.path.dirname(pin.__file__), *[os.pardir] * 4,
                                    "share", "example-robot-data", "robots"))


def load_recording(xml):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = RobotModel.from_urdf_string(xml)
    return m, [x for x in w if issubclass(x.category, InertiaWarning)]


def test_combine_is_the_parallel_axis_sum():
    """Two point masses m at +-l on x about their middle: a rod's m_tot l^2 about y and z."""
    m, c, I = IN.combine([(2.0, np.array([0.5, 1, 0]), np.zeros((3, 3))),
                          (2.0, np.array([-0.5, 1, 0]), np.zeros((3, 3)))])
    assert m == 4.0 and np.allclose(c, [0, 1, 0])
    np.testing.assert_allclose(I, np.diag([0.0, 1.0, 1.0]), atol=1e-15)
    assert IN.combine([]) == (0.0, pytest.approx(np.zeros(3)), pytest.approx(np.zeros((3, 3))))


def test_defects_and_the_scale():
    assert IN.inertia_defect(np.diag([1.0, 2.0, 2.5])) is None
    assert IN.inertia_defect(np.diag([1e-20, 0.0, 0.0])) is None          # round-off
    assert IN.inertia_defect(np.diag([-0.1, 1.0, 1.0]))[0] == "negative"
    assert IN.inertia_defect(np.diag([1.0, 1.0, 5.0]))[0] == "triangle"
    # S of one body is half the trace of its inertia about its com, wherever it is
    part = (3.0, np.array([4.0, 5.0, 6.0]), np.diag([1.0, 2.0, 3.0]))
    assert IN.robot_inertia_scale([part]) == pytest.approx(3.0)


def test_negligible_negative_moment_is_kept_as_written():
    """I_xx = -1e-5 with S = 0.5 kg m^2 (2e-5 S): loaded unchanged, one InertiaWarning naming
    the link; M = I_xx + m y_c^2 exactly as written (what Pinocchio computes)."""
    xml = robot(link("a"), link("b", 2.0, com="0 0.3 0", I=(-1e-5, 0.5, 0.5, 0, 0, 0)),
                joint("j", "a", "b", axis="1 0 0"))
    m, warned = load_recording(xml)
    assert len(warned) == 1 and "'b'" in str(warned[0].message)
    assert "kept as written" in str(warned[0].message)
    np.testing.assert_allclose(m.mass_matrix([0.3]), [[-1e-5 + 2.0 * 0.09]], rtol=1e-14)


def test_negative_moment_that_matters_is_an_error_naming_the_link():
    xml = robot(link("a"), link("b", 2.0, com="0 0.3 0", I=(-0.1, 0.5, 0.5, 0, 0, 0)),
                joint("j", "a", "b", axis="1 0 0"))
    with pytest.raises(URDFError, match=r"link 'b' .*not positive semi-definite"):
        RobotModel.from_urdf_string(xml)
    with pytest.raises(URDFError, match=r"link 'b' .*negative mass"):
        RobotModel.from_urdf_string(xml.replace('value="2.0"', 'value="-2.0"'))


def test_links_welded_to_the_root_are_never_judged():
    """A root-welded link with a negative mass and a tensor far from PSD: it cannot move, so
    the model loads (one warning naming it) and its numbers change nothing."""
    base = robot(link("a"), link("b", 2.0, com="0 0.3 0", I=(0.1, 0.5, 0.5, 0, 0, 0)),
                 joint("j", "a", "b", axis="1 0 0"))
    xml = base.replace("</robot>", link("w", -5.0, I=(-3, 1, 1, 0, 0, 0))
                       + joint("jw", "a", "w", jtype="fixed", axis=None) + "</robot>")
    m, warned = load_recording(xml)
    assert len(warned) == 1 and "'w'" in str(warned[0].message)
    ref = RobotModel.from_urdf_string(base)
    for q in ([0.0], [1.2]):
        np.testing.assert_array_equal(m.mass_matrix(q), ref.mass_matrix(q))
        np.testing.assert_array_equal(m.gravity_torques(q), ref.gravity_torques(q))


@pytest.mark.parametrize("path, warned_links", [
    ("tiago_description/robots/tiago.urdf", ["base_antenna_left_link"]),
    ("tiago_description/robots/tiago_dual.urdf", ["base_antenna_left_link"]),
    ("romeo_description/urdf/romeo_laas_small.urdf", ["'body'", "LHipPitch_link",
                                                      "RHipPitch_link"]),
])
def test_vendor_files_with_inertia_defects_load(path, warned_links):
    """The files the issue found refused: TIAGo (antennas welded to the base: mass 1e-6 kg,
    a principal moment of -3.5e-8 kg m^2) and romeo_laas_small (root link 'body'; hip links
    with -0.0027 kg m^2, 4e-4 of the robot's S = 6.7 kg m^2). They load with one
    InertiaWarning naming those links (agreement with Pinocchio: test_erd_all.py)."""
    with open(os.path.join(ERD, path), encoding="utf-8") as f:
        m, warned = load_recording(f.read())
    assert m.n > 0 and len(warned) == 1
    assert all(name in str(warned[0].message) for name in warned_links)


@pytest.mark.parametrize("text, element", [
    ('<robot name="r"><link name="a\ud800b"/></robot>', "<link name='a"),
    ('<robot name="r"><link name="a"/><link name="b"/><joint name="j\udfff" type="fixed">'
     '<parent link="a"/><child link="b"/></joint></robot>', "<joint"),
])
def test_unencodable_names_are_refused_naming_the_element(text, element):
    with pytest.raises(URDFError, match="lone surrogate") as e:
        RobotModel.from_urdf_string(text)
    assert element in str(e.value)


@pytest.mark.parametrize("path", ["PANDA", "planar_2r", "planar_rp",
                                  "ur_description/urdf/ur5_robot.urdf",
                                  "panda_description/urdf/panda.urdf"])
def test_flanges_and_tool_frames_load_without_any_warning(path):
    """Massless leaf frames (panda_link8, tool0, the 2R's tool) are normal: no warning."""
    from manip_dynamics import robots
    file = (robots.path(path.lower()) if "/" not in path else os.path.join(ERD, path))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        RobotModel.from_urdf_file(file)
    assert [str(x.message) for x in w] == []
