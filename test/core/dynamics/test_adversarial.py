"""Adversarial review of the core: bad inputs at every entry point, broken URDFs, overflow,
and the behaviour at and near singularities.

Each case either checks an error (type and the argument / element it names) or compares
with an independent reference: the same robot written another way (explicit defaults,
without ignored tags, without a `world` link), NumPy formulas on quantities already
checked against Pinocchio, closed forms, or Pinocchio itself (UR5 wrist singularity).
"""
import os
import warnings

import numpy as np
import pinocchio as pin
import pytest

from manip_dynamics import (InputError, MasslessLinkWarning, NonFiniteResultError, RobotModel,
                            SingularConfigurationError, UnknownFrameError, URDFError)

from .test_model_api import chain3, joint, link, robot

pytestmark = pytest.mark.filterwarnings("ignore::manip_dynamics.MasslessLinkWarning")

UR5 = os.path.normpath(os.path.join(os.path.dirname(pin.__file__), *[os.pardir] * 4, "share",
                                    "example-robot-data", "robots", "ur_description", "urdf",
                                    "ur5_robot.urdf"))


@pytest.fixture(scope="module")
def arm():
    return RobotModel.from_urdf_string(chain3())


def parse(xml, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MasslessLinkWarning)
        return RobotModel.from_urdf_string(xml, **kw)


Z = np.zeros(3)


# ----------------------------------------------------------------------------- argument types
@pytest.mark.parametrize("value, what", [
    ([True, False, True], "booleans"),
    (np.zeros(3) + 1j, "complex"),
    (None, "NoneType"),
    ("abc", "strings"),
    (["1", "2", "3"], "strings"),           # used to be silently parsed as numbers
    ([1.0, None, 2.0], "NoneType"),         # used to be reported as "is nan"
    ([[1, 2, 3], [1, 2]], "ragged"),
])
def test_non_numeric_states_raise_naming_the_argument(arm, value, what):
    with pytest.raises(InputError, match=rf"^q must be numeric, got .*{what}"):
        arm.gravity_torques(value)
    with pytest.raises(InputError, match=rf"^qd must be numeric, got .*{what}"):
        arm.coriolis_torques(Z, value)


def test_integer_states_are_accepted_as_floats(arm):
    np.testing.assert_array_equal(arm.gravity_torques(np.array([1, 0, 0])),
                                  arm.gravity_torques([1.0, 0.0, 0.0]))


@pytest.mark.parametrize("call, pattern", [
    (lambda a: a.effective_inertia(Z, "tool", damping=[1.0, 2.0]), "damping must be a scalar"),
    (lambda a: a.effective_inertia(Z, "tool", damping=True), "damping must be numeric"),
    (lambda a: a.compute_all(Z, Z, "tool", damping_condition="x"), "damping_condition"),
    (lambda a: a.effective_inertia(Z, "tool", linear_only="no"), "linear_only must be a bool"),
    (lambda a: a.effective_inertia(Z, "tool", linear_only=None), "linear_only must be a bool"),
    (lambda a: a.inverse_dynamics(Z, Z, Z, friction="no"), "friction must be a bool"),
    (lambda a: a.with_payload("tool", [1.0, 2.0]), "mass must be a scalar"),
    (lambda a: a.with_friction(viscous=True), "viscous must be numeric"),
    (lambda a: a.effective_mass(Z, "tool", None), "u must be numeric"),
    (lambda a: a.vector_from_names("j1", [0.0]), "names must be a sequence"),
    (lambda a: a.vector_from_names(None, [0.0]), "names must be a sequence"),
    (lambda a: a.vector_from_names(["j1", "j2", "j3"], None), "values must be a sequence"),
    (lambda a: a.vector_from_names(["j1", "j2", "j3"], ["1", "2", "3"]), "must be numeric"),
    (lambda a: a.vector_from_names(["j1", "j2", "j3"], [[1, 2, 3]]), "must be 1-D"),
    (lambda a: a.vector_from_names(["j1", 2, "j3"], [1, 2, 3]), "names must be str"),
])
def test_bad_options_raise_inputerror_naming_them(arm, call, pattern):
    with pytest.raises(InputError, match=pattern):
        call(arm)


def test_compute_all_and_operational_space_require_qd(arm):
    # qd=None used to be replaced by q silently: c was C(q, q) q
    q = np.array([0.3, -0.5, 0.1])
    with pytest.raises(InputError, match="qd is required"):
        arm.compute_all(q, None, "tool")
    with pytest.raises(InputError, match="qd is required"):
        arm.operational_space(q, None, "tool", damping=1e-3)


def test_f_ext_frame_is_checked_even_without_f_ext(arm):
    with pytest.raises(UnknownFrameError, match="'nope'"):
        arm.inverse_dynamics(Z, Z, Z, f_ext_frame="nope")


def test_f_ext_non_finite_entry_is_named(arm):
    with pytest.raises(InputError, match=r"f_ext\[2\] is nan"):
        arm.inverse_dynamics(Z, Z, Z, f_ext=[0, 0, np.nan, 0, 0, 0], f_ext_frame="tool")


def test_payload_inertia_must_satisfy_the_triangle_inequality(arm):
    # the URDF parser rejects these principal moments; the payload path did not
    with pytest.raises(InputError, match="triangle"):
        arm.with_payload("tool", 1.0, inertia=np.diag([1.0, 1.0, 5.0]))
    with pytest.raises(InputError, match="overflows"):
        arm.with_payload("tool", 1.0, com=[1e300, 0, 0])


# ----------------------------------------------------------------------------- overflow
@pytest.mark.parametrize("call, name", [
    (lambda a: a.coriolis_torques(Z, np.full(3, 1e200)), r"max \|qd\| = 1e\+200"),
    (lambda a: a.coriolis_matrix([0, 0, 1e300], Z), r"joint 'j3'"),
    (lambda a: a.kinetic_energy(Z, np.full(3, 1e300)), r"max \|qd\| = 1e\+300"),
    (lambda a: a.frame_bias_acceleration(Z, np.full(3, 1e300), "tool"), r"\|qd\|"),
    (lambda a: a.mass_matrix([0, 0, 1e300]), r"max \|q\| = 1e\+300 \(q\[2\], joint 'j3'\)"),
    (lambda a: a.forward_dynamics(Z, Z, np.full(3, 1e308)), r"\|tau\| = 1e\+308"),
    (lambda a: a.compute_all(Z, np.full(3, 1e300), "tool"), r"\|qd\| = 1e\+300"),
    (lambda a: a.compute_all([0, 0, 1e300], Z, "tool"), r"\(q\[2\], joint 'j3'\)"),
    (lambda a: a.effective_inertia([0, 0, 1e300], "tool", linear_only=True), r"joint 'j3'"),
    (lambda a: a.inertia_ellipsoid([0, 0, 1e300], "tool"), r"joint 'j3'"),
    (lambda a: a.with_friction(viscous=1e10).friction_torques(np.full(3, 1e300)), r"\|qd\|"),
    (lambda a: a.with_gravity([0, 0, 1e308]).with_payload("tool", 10.0).compute_all(Z, Z, "l3"),
     "gravity / inertias"),
])
def test_overflow_raises_nonfiniteresulterror_instead_of_returning_nan(arm, call, name):
    # before: NaN/inf results (or, for a huge prismatic q, a misleading "mass matrix is not
    # positive definite" SingularConfigurationError)
    with pytest.raises(NonFiniteResultError, match=f"overflowed to inf/NaN.*{name}"):
        call(arm)


def test_gravity_overflow_is_blamed_on_the_model_not_q(arm):
    with pytest.raises(NonFiniteResultError, match="overflowed.*gravity / inertias"):
        arm.with_gravity([0, 0, 1e308]).with_payload("tool", 1e10).gravity_torques(Z)


def test_tiny_damping_is_finite_at_a_singularity(arm):
    # d^2 underflowed to 0: s / (s^2 + d^2) was 0 / 0 = NaN for the zero eigenvalues of A
    for d in (1e-170, 1e-200, 1e-300):
        lam = arm.effective_inertia(Z, "tool", damping=d)         # 3 dof, 6x6 A: rank 3
        assert np.isfinite(lam).all()
        assert np.isfinite(arm.compute_all(Z, Z, "tool", damping=d).Lambda).all()


def test_effective_mass_direction_is_scaled_before_normalising(arm):
    # |u| of [1e300, 1e300, 0] overflowed to inf: u became 0 and m_u was inf
    q = np.array([0.3, -0.5, 0.1])
    M, J = arm.mass_matrix(q), arm.jacobian(q, "tool")[:3]
    A = J @ np.linalg.solve(M, J.T)
    u = np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0)
    expected = 1.0 / (u @ A @ u)
    assert arm.effective_mass(q, "tool", [1e300, 1e300, 0]) == pytest.approx(expected, rel=1e-12)
    assert arm.effective_mass(q, "tool", [1e-300, 1e-300, 0]) == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------- empty batches
def test_empty_batches_everywhere(arm):
    E = np.zeros((0, 3))
    assert arm.compute_all(E, E, "tool").Lambda.shape == (0, 6, 6)
    assert arm.inertia_ellipsoid(E, "tool").eigenvectors.shape == (0, 3, 3)
    assert arm.effective_mass(E, "tool", [1, 0, 0]).shape == (0,)
    assert arm.forward_dynamics(E, E, E).shape == (0, 3)
    assert arm.inverse_dynamics(E, E, E, f_ext=np.zeros(6), f_ext_frame="tool").shape == (0, 3)
    assert [x.shape for x in arm.operational_space(E, E, "tool")] == [(0, 6, 6), (0, 6), (0, 6)]
    assert arm.kinetic_energy(E, E).shape == (0,)


# ----------------------------------------------------------------------------- URDF robustness
L1 = link("b", 1.0, com="0.1 0.2 0.05", I=(0.02, 0.03, 0.04, 0.001, 0, 0))
L2 = link("c", 0.5, com="0.2 0 0")


def two_link(j1="", j2="", extra=""):
    return robot(link("a"), L1, L2, j1 or joint("j1", "a", "b", xyz="0 0 0.1"),
                 j2 or joint("j2", "b", "c", xyz="0.3 0 0", axis="0 1 0"), extra)


def same_dynamics(m1, m2, frame="c"):
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, qd = rng.normal(size=(2, m1.n))
        np.testing.assert_allclose(m1.mass_matrix(q), m2.mass_matrix(q), atol=1e-14)
        np.testing.assert_allclose(m1.gravity_torques(q), m2.gravity_torques(q), atol=1e-13)
        np.testing.assert_allclose(m1.coriolis_torques(q, qd), m2.coriolis_torques(q, qd),
                                   atol=1e-13)
        np.testing.assert_allclose(m1.jacobian(q, frame), m2.jacobian(q, frame), atol=1e-14)


@pytest.mark.parametrize("xml, pattern", [
    (two_link(joint("j1", "a", "b", xyz="${l1} 0 0")), r"joint 'j1'.*xacro"),
    (robot(link("a"), link("b", "${m}"), joint("j", "a", "b")), r"link 'b'.*xacro"),
    (two_link(extra='<xacro:property name="l1" value="0.3"/>').replace(
        '<robot name="r">', '<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'),
     r"<xacro:property name='l1'>.*run xacro"),
    (two_link(extra='<xacro:include filename="arm.xacro"/>').replace(
        '<robot name="r">', '<robot name="r" xmlns:xacro="http://ros.org/wiki/xacro">'),
     r"<xacro:include>"),
    (two_link(extra='<xacro:arm prefix="x"/>'), r"invalid URDF XML.*xacro"),   # unbound prefix
    (two_link(joint("j1", "a", "b", extra='<limit lower="1" upper="-1" effort="1" velocity="1"/>')),
     r"joint 'j1' <limit>: lower 1.0 > upper -1.0"),
    (two_link(joint("j1", "a", "b", extra='<limit effort="-1" velocity="1"/>')),
     r"joint 'j1' <limit>: negative effort"),
    (two_link(j2=joint("j2", "b", "c", extra='<mimic multiplier="2"/>')),
     r"joint 'j2' <mimic> has no joint attribute"),
    (two_link(j2=joint("j2", "b", "c", extra='<origin xyz="1 0 0"/>')),
     r"joint 'j2' has 2 <origin>"),
    (robot(link("a"), '<link name="b"><inertial><mass value="1"/></inertial>'
           '<inertial><mass value="2"/></inertial></link>', joint("j", "a", "b")),
     r"link 'b' has 2 <inertial>"),
    (robot(link("a"), link("b", 1e200, com="1e200 0 0"), joint("j", "a", "b")),
     r"link 'b'.*overflows"),
    (two_link(j2=joint("j2", "b", "c", extra='<mimic joint="fixed_j"/>'),
              extra=link("d") + joint("fixed_j", "c", "d", jtype="fixed", axis=None)),
     r"joint 'j2' mimics 'fixed_j', which is not a moving joint"),
    (two_link(joint("j1", "a", "b", xyz="1 2")), r"joint 'j1' <origin>.*needs 3 numbers"),
    (two_link(joint("j1", "a", "b", axis="abc")), r"joint 'j1' <axis>.*not a list of numbers"),
    (robot(link("a"), link("b", 1.0, I=(-1, 1, 1, 0, 0, 0)), joint("j", "a", "b")),
     r"link 'b'.*not positive"),
    # what the URDF spec requires is never replaced by a default (it was: x axis, ixy = 0,
    # a zero inertia, infinite effort / velocity, "unknown type None")
    (two_link(joint("j1", "a", "b", axis=None, extra="<axis/>")),
     r"joint 'j1' <axis>: missing attribute xyz"),
    (robot(link("a"), link("b", 1.0).replace('ixy="0" ', ""), joint("j", "a", "b")),
     r"link 'b' <inertial> <inertia>: missing attribute ixy"),
    (robot(link("a"), link("b", 1.0).replace('izz="0.01" ', ""), joint("j", "a", "b")),
     r"link 'b' <inertial> <inertia>: missing attribute izz"),
    (robot(link("a"), '<link name="b"><inertial><mass value="1"/></inertial></link>',
           joint("j", "a", "b")), r"link 'b' <inertial>: missing <inertia>"),
    (robot(link("a"), '<link name="b"><inertial><mass/><inertia ixx="1" iyy="1" izz="1" '
           'ixy="0" ixz="0" iyz="0"/></inertial></link>', joint("j", "a", "b")),
     r"link 'b' <inertial>: missing <mass value=...>"),
    (two_link(joint("j1", "a", "b", extra='<limit lower="-1" upper="1" velocity="1"/>')),
     r"joint 'j1' <limit>: missing attribute effort"),
    (two_link(joint("j1", "a", "b", jtype="continuous", extra='<limit effort="1"/>')),
     r"joint 'j1' <limit>: missing attribute velocity"),
    (two_link(joint("j1", "a", "b").replace(' type="revolute"', "")),
     r"joint 'j1' has no type attribute"),
])
def test_broken_urdf_names_the_element(xml, pattern):
    with pytest.raises(URDFError, match=pattern):
        parse(xml)


def test_huge_axis_is_normalised_not_zeroed():
    # |axis| of "1e300 1e300 0" overflowed to inf and the axis silently became 0
    ref = parse(two_link(joint("j1", "a", "b", xyz="0 0 0.1", axis="1 1 0")))
    big = parse(two_link(joint("j1", "a", "b", xyz="0 0 0.1", axis="1e300 1e300 0")))
    same_dynamics(big, ref)


def test_round_off_inertia_is_accepted_as_zero():
    # icub.urdf (example-robot-data): ixy = 1.35525e-20 on an otherwise zero inertia was
    # rejected as "not positive (semi-)definite"
    noisy = robot(link("a"), link("b", 1.0, com="0.1 0 0", I=(0, 0, 0, 1.35525e-20, 0, 0)),
                  joint("j", "a", "b", axis="0 1 0"))
    clean = robot(link("a"), link("b", 1.0, com="0.1 0 0", I=(0, 0, 0, 0, 0, 0)),
                  joint("j", "a", "b", axis="0 1 0"))
    same_dynamics(parse(noisy), parse(clean), frame="b")


def test_missing_origin_and_axis_use_urdf_defaults():
    bare = ('<joint name="j1" type="revolute"><parent link="a"/><child link="b"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    explicit = joint("j1", "a", "b", xyz="0 0 0", rpy="0 0 0", axis="1 0 0",
                     extra='<limit lower="-1" upper="1" effort="1" velocity="1"/>')
    same_dynamics(parse(two_link(bare)), parse(two_link(explicit)))


def test_absent_inertial_parts_use_urdf_defaults():
    # no <inertial>: massless; no <origin> in <inertial>: identity; no <dynamics>: no friction
    bare = two_link(extra=link("d") + '<link name="e"><inertial><mass value="0.3"/><inertia '
                    'ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>'
                    + joint("j3", "c", "d", xyz="0.2 0 0") + joint("j4", "d", "e", axis="0 1 0"))
    explicit = two_link(extra=link("d", 0.0, I=(0, 0, 0, 0, 0, 0))
                        + link("e", 0.3, I=(0.01, 0.02, 0.03, 0, 0, 0))
                        + joint("j3", "c", "d", xyz="0.2 0 0",
                                extra='<dynamics damping="0" friction="0"/>')
                        + joint("j4", "d", "e", axis="0 1 0"))
    m_bare, m_explicit = parse(bare), parse(explicit)
    same_dynamics(m_bare, m_explicit, frame="e")
    np.testing.assert_array_equal(m_bare.viscous, m_explicit.viscous)
    np.testing.assert_array_equal(m_bare.coulomb, m_explicit.coulomb)


def test_gazebo_and_transmission_tags_are_ignored():
    tags = ('<gazebo reference="b"><mu1>abc</mu1><material>Gazebo/Red</material></gazebo>'
            '<transmission name="t"><type>transmission_interface/SimpleTransmission</type>'
            '<joint name="j1"><hardwareInterface>EffortJointInterface</hardwareInterface>'
            '</joint><actuator name="m"><mechanicalReduction>50</mechanicalReduction>'
            '</actuator></transmission><gazebo><plugin name="p" filename="x.so"/></gazebo>')
    same_dynamics(parse(two_link(extra=tags)), parse(two_link()))


def test_world_link_with_fixed_joint_to_base():
    # the common "world -> base" idiom: root 'world', same dynamics as rooted at 'a'
    plain = parse(two_link())
    xml = two_link().replace('<link name="a"/>', '<link name="world"/><link name="a"/>' + joint(
        "world_joint", "world", "a", jtype="fixed", axis=None))
    world = parse(xml)
    assert world.root_link == "world" and world.joint_names == plain.joint_names
    same_dynamics(world, plain)


def test_limits_policy_revolute_without_limit_and_continuous():
    # URDF requires <limit> on revolute/prismatic joints; we accept a missing one (limits
    # only label the model here) and report +-inf; a continuous joint ignores its limits
    m = parse(two_link(joint("j1", "a", "b", jtype="continuous",
                             extra='<limit lower="-1" upper="1" effort="3" velocity="2"/>')))
    np.testing.assert_array_equal(m.position_lower, [-np.inf, -np.inf])
    np.testing.assert_array_equal(m.position_upper, [np.inf, np.inf])
    np.testing.assert_array_equal(m.effort_limits, [3.0, np.inf])
    np.testing.assert_array_equal(m.velocity_limits, [2.0, np.inf])


def test_zero_mass_link_with_inertia_is_a_pure_rotor():
    # m = 0, I_zz = 0.7 about a z joint: M = 0.7, g = 0 (closed form)
    xml = robot(link("a"), link("b", 0.0, I=(0.5, 0.6, 0.7, 0, 0, 0)), joint("j", "a", "b"))
    m = parse(xml)
    np.testing.assert_allclose(m.mass_matrix([0.4]), [[0.7]], atol=1e-15)
    np.testing.assert_allclose(m.gravity_torques([0.4]), [0.0], atol=1e-15)


def test_chain_of_mimics_composes_multipliers_and_offsets():
    # j3 mimics j2 mimics j1: q2 = 2 q1 + 0.1, q3 = 3 q2 + 0.2 = 6 q1 + 0.5
    parts = [link("a"), L1, L2, link("d", 0.3, com="0.1 0 0"),
             joint("j1", "a", "b", xyz="0 0 0.1"), None, None]

    def xml(mimic):
        p = list(parts)
        p[5] = joint("j2", "b", "c", xyz="0.3 0 0", axis="0 1 0",
                     extra='<mimic joint="j1" multiplier="2" offset="0.1"/>' if mimic else "")
        p[6] = joint("j3", "c", "d", xyz="0.2 0 0", axis="0 1 0",
                     extra='<mimic joint="j2" multiplier="3" offset="0.2"/>' if mimic else "")
        return robot(*p)
    mim, free = parse(xml(True)), parse(xml(False))
    assert mim.joint_names == ("j1",) and mim.mimic_joint_names == ("j2", "j3")
    G = np.array([[1.0], [2.0], [6.0]])
    for q1 in (0.0, 0.4, -1.1):
        qf = np.array([q1, 2 * q1 + 0.1, 6 * q1 + 0.5])
        np.testing.assert_allclose(mim.mass_matrix([q1]), G.T @ free.mass_matrix(qf) @ G,
                                   atol=1e-14)
        np.testing.assert_allclose(mim.gravity_torques([q1]), G.T @ free.gravity_torques(qf),
                                   atol=1e-13)


# ----------------------------------------------------------------------------- UR5 wrist
def _pin_A(pmodel, pdata, q, frame):
    """A = J M^-1 J^T from Pinocchio (LOCAL_WORLD_ALIGNED, [v; w] rows)."""
    fid = pmodel.getFrameId(frame)
    M = pin.crba(pmodel, pdata, q)
    M = np.triu(M) + np.triu(M, 1).T
    pin.computeJointJacobians(pmodel, pdata, q)
    pin.updateFramePlacements(pmodel, pdata)
    J = pin.getFrameJacobian(pmodel, pdata, fid, pin.LOCAL_WORLD_ALIGNED)
    return J @ np.linalg.solve(M, J.T), J


def test_ur5_wrist_singularity_approach():
    """q5 -> 0 aligns the wrist_1 and wrist_3 axes: A loses one rank.

    Our condition number follows Pinocchio's while it is resolvable, grows monotonically,
    flips `singular` exactly past 1e12; eigenvectors stay a proper rotation; Lambda stays
    finite in compute_all; effective_mass along Pinocchio's null direction of J^T is +inf."""
    model = RobotModel.from_urdf_file(UR5)
    pmodel = pin.buildModelFromUrdf(UR5)
    pdata = pmodel.createData()
    assert tuple(pmodel.names[1:]) == model.joint_names
    base = np.array([0.3, -1.2, 1.4, -0.5, 0.0, 0.7])
    conds = []
    for eps in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 0.0):
        q = base.copy()
        q[4] = eps
        t = model.compute_all(q, np.zeros(6), "tool0")
        ell = model.inertia_ellipsoid(q, "tool0", linear_only=False)
        A_pin, J_pin = _pin_A(pmodel, pdata, q, "tool0")
        w = np.linalg.eigvalsh(A_pin)
        np.testing.assert_allclose(t.A, A_pin, atol=1e-12 * np.abs(A_pin).max())
        if eps >= 1e-4:
            assert t.condition_number == pytest.approx(w[-1] / w[0], rel=1e-4)
        conds.append(t.condition_number)
        assert t.singular == (t.condition_number > 1e12) == ell.singular
        assert np.isfinite(t.Lambda).all()
        V = ell.eigenvectors
        np.testing.assert_allclose(V.T @ V, np.eye(6), atol=1e-12)
        assert np.linalg.det(V) == pytest.approx(1.0, abs=1e-12)
        if t.singular:
            assert np.isinf(ell.eigenvalues[-1]) and np.isfinite(ell.eigenvalues[:-1]).all()
            with pytest.raises(SingularConfigurationError, match="'tool0'"):
                model.effective_inertia(q, "tool0")
        else:
            lam = model.effective_inertia(q, "tool0")
            np.testing.assert_allclose(lam, np.linalg.inv(A_pin),
                                       rtol=0, atol=1e-12 * t.condition_number * np.abs(lam).max())
    assert all(b >= a for a, b in zip(conds, conds[1:])), conds
    assert conds[0] < 1e4 and conds[-1] > 1e12
    # exactly singular: the wrench direction Pinocchio's J^T annihilates cannot be resisted
    q = base.copy()
    q[4] = 0.0
    _, J_pin = _pin_A(pmodel, pdata, q, "tool0")
    u = np.linalg.svd(J_pin.T)[2][-1]          # null direction of J^T (6,)
    assert model.effective_mass(q, "tool0", u) == np.inf
    assert np.isfinite(model.effective_mass(q, "tool0", [1, 0, 0, 0, 0, 0]))


def test_refused_numpy_scalars_print_as_numbers():
    """A numpy scalar refused by the core is printed as a number in the message, not as
    its repr np.float64(-1.0)."""
    from manip_dynamics import RobotModel, robots

    model = RobotModel.from_urdf_file(robots.path("planar_2r"))
    q = np.zeros(model.n)
    for call, words in [
        (lambda: model.effective_inertia(q, "link2", damping=np.float64(-1.0)),
         "damping must be finite and >= 0, got -1.0"),
        (lambda: model.effective_inertia(q, "link2", damping_condition=np.float64(-2.0)),
         "damping_condition must be >= 0, got -2.0"),
        (lambda: model.with_payload("link2", np.float64(-3.0)),
         "payload mass must be finite and >= 0, got -3.0"),
    ]:
        with pytest.raises(InputError) as info:
            call()
        assert words in str(info.value) and "np." not in str(info.value), str(info.value)
