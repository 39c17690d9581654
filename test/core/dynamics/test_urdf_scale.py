"""Long and deep descriptions: the parser is iterative and linear (issue 9).

Load times are measured in benchmarks/bench_urdf_load.py, not asserted here. These tests
check that long chains and long mimic chains load (no RecursionError) and are right:
positions against a planar closed form computed here with numpy, independently of the core.
"""
from __future__ import annotations

import numpy as np
import pytest

from manip_dynamics import NonFiniteResultError, RobotModel, URDFError

L = 0.1      # m, link length along x


def chain(n, mimic=False, mimic_offset=0.001, cycle=False):
    """n revolute joints about z, each 0.1 m along x of its parent; unit masses at 0.05 m.
    mimic: joint i > 1 mimics joint i - 1 (multiplier 1, offset ``mimic_offset``)."""
    parts = ['<robot name="chain"><link name="l0"/>']
    for i in range(1, n + 1):
        parts.append(f'<link name="l{i}"><inertial><origin xyz="0.05 0 0"/><mass value="1"/>'
                     '<inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/>'
                     '</inertial></link>')
        mim = (f'<mimic joint="j{i - 1}" multiplier="1" offset="{mimic_offset}"/>'
               if mimic and i > 1 else "")
        parent = f"l{n}" if cycle and i == 1 else f"l{i - 1}"
        parts.append(f'<joint name="j{i}" type="revolute"><parent link="{parent}"/>'
                     f'<child link="l{i}"/><origin xyz="{L} 0 0"/><axis xyz="0 0 1"/>'
                     f'<limit lower="-3" upper="3" effort="1" velocity="1"/>{mim}</joint>')
    parts.append("</robot>")
    return "".join(parts)


def planar_tip(angles):
    """Position of the last link's origin: sum of L (cos, sin) of the cumulative angles
    before each joint (joint i sits L along x of link i - 1)."""
    phi = np.concatenate([[0.0], np.cumsum(angles)[:-1]])
    return np.array([L * np.cos(phi).sum(), L * np.sin(phi).sum(), 0.0])


def test_long_chain_loads_and_is_right():
    n = 2000
    m = RobotModel.from_urdf_string(chain(n))
    assert m.n == n and len(m.frame_names) == n + 1 and m.default_tip == f"l{n}"
    q = np.random.default_rng(1).uniform(-0.01, 0.01, n)
    np.testing.assert_allclose(m.frame_pose(q, f"l{n}")[:3, 3], planar_tip(q), atol=1e-9)


def test_mimic_chain_of_1000_joints_is_resolved_without_recursion():
    """Joint i follows joint i - 1 with offset 0.001: joint i = q + (i - 1) 0.001. One
    independent coordinate."""
    n = 1000
    m = RobotModel.from_urdf_string(chain(n, mimic=True))
    assert m.n == 1 and m.joint_names == ("j1",)
    q = 0.2
    angles = q + 0.001 * np.arange(n)
    np.testing.assert_allclose(m.frame_pose([q], f"l{n}")[:3, 3], planar_tip(angles),
                               atol=1e-9)


def test_cycles_in_long_descriptions_are_named():
    with pytest.raises(URDFError, match="kinematic cycle through links"):
        RobotModel.from_urdf_string(chain(3000, cycle=True).replace(
            "<robot name=\"chain\">", "<robot name=\"chain\"><link name=\"root\"/>"))
    xml = chain(1000, mimic=True).replace('<mimic joint="j0"', '<mimic joint="j1000"')
    xml = xml.replace('<child link="l1"/><origin xyz="0.1 0 0"/><axis xyz="0 0 1"/>'
                      '<limit lower="-3" upper="3" effort="1" velocity="1"/>',
                      '<child link="l1"/><origin xyz="0.1 0 0"/><axis xyz="0 0 1"/>'
                      '<limit lower="-3" upper="3" effort="1" velocity="1"/>'
                      '<mimic joint="j1000"/>')
    with pytest.raises(URDFError, match="cyclic <mimic> chain"):
        RobotModel.from_urdf_string(xml)


def test_prismatic_overflow_names_the_joint():
    """q = 1e154 on a prismatic joint: finite input, overflowing products (1e308+) in M.
    The error is NonFiniteResultError naming the joint, not 'M not positive definite'."""
    xml = ('<robot name="p"><link name="a"/>'
           '<link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" '
           'ixy="0" ixz="0" iyz="0"/></inertial></link>'
           '<link name="c"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" '
           'ixy="0" ixz="0" iyz="0"/></inertial></link>'
           '<joint name="slide" type="prismatic"><parent link="a"/><child link="b"/>'
           '<axis xyz="1 0 0"/></joint>'
           '<joint name="rot" type="revolute"><parent link="b"/><child link="c"/>'
           '<origin xyz="0 1 0"/><axis xyz="0 0 1"/></joint></robot>')
    m = RobotModel.from_urdf_string(xml)
    q = [1e154, 0.3]
    for call in (lambda: m.mass_matrix(q), lambda: m.forward_dynamics(q, [0, 0], [0, 0]),
                 lambda: m.compute_all(q, [0, 0], "c")):
        with pytest.raises(NonFiniteResultError, match="joint 'slide'"):
            call()
