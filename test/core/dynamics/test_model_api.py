"""Contract of the core API (docs/design.md): construction, errors, inputs, batches, copies.

References are independent of the code under test: hand-written URDFs whose answers are
known (a single pendulum, merged links), NumPy re-computations of trivial formulas, and
the same robot written two ways (mimic vs explicit, payload vs extra fixed link).
"""
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

from manip_dynamics import (InputError, ManipDynamicsError, MasslessLinkWarning, RobotModel,
                            SingularConfigurationError, UnknownFrameError,
                            UnsupportedJointError, URDFError)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


# ----------------------------------------------------------------------------- URDF helpers
def link(name, mass=None, com="0 0 0", rpy="0 0 0", I=(0.01, 0.01, 0.01, 0, 0, 0)):
    if mass is None:
        return f'<link name="{name}"/>'
    ixx, iyy, izz, ixy, ixz, iyz = I
    return (f'<link name="{name}"><inertial><origin xyz="{com}" rpy="{rpy}"/>'
            f'<mass value="{mass}"/><inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" '
            f'ixy="{ixy}" ixz="{ixz}" iyz="{iyz}"/></inertial></link>')


def joint(name, parent, child, jtype="revolute", xyz="0 0 0", rpy="0 0 0", axis="0 0 1",
          extra=""):
    ax = f'<axis xyz="{axis}"/>' if axis is not None else ""
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>{ax}{extra}</joint>')


def robot(*parts):
    return '<?xml version="1.0"?><robot name="r">' + "".join(parts) + "</robot>"


def pendulum(m=2.0, l=0.5, extra=""):
    """Point mass m at distance l along x of link1, revolute about y at the base origin."""
    return robot(link("base"), link("link1", m, com=f"{l} 0 0", I=(0, 0, 0, 0, 0, 0)),
                 joint("j1", "base", "link1", axis="0 1 0", extra=extra))


def chain3():
    """3-dof spatial arm with a fixed tool, offsets and rotated inertials."""
    return robot(
        link("base", 1.0),
        link("l1", 2.0, com="0.01 0.02 0.1", rpy="0.1 0.2 0.3", I=(0.02, 0.03, 0.04, 0.001, 0, 0)),
        link("l2", 1.5, com="0.2 0 0.01", rpy="0 0.3 0", I=(0.01, 0.02, 0.02, 0, 0.001, 0)),
        link("l3", 0.5, com="0 0.05 0", I=(0.003, 0.002, 0.004, 0, 0, 0.0005)),
        link("tool", 0.2, com="0 0 0.03"),
        joint("j1", "base", "l1", xyz="0 0 0.2", axis="0 0 1"),
        joint("j2", "l1", "l2", xyz="0 0.1 0.3", rpy="0.3 0 0", axis="0 1 0"),
        joint("j3", "l2", "l3", jtype="prismatic", xyz="0.4 0 0", axis="1 0 0.2",
              extra='<limit lower="-0.1" upper="0.3" effort="50" velocity="0.5"/>'
                    '<dynamics damping="0.7" friction="0.2"/>'),
        joint("tool_joint", "l3", "tool", jtype="fixed", xyz="0 0 0.1", rpy="0 0.5 0", axis=None))


@pytest.fixture(scope="module")
def arm():
    return RobotModel.from_urdf_string(chain3())


# ----------------------------------------------------------------------------- ROS isolation
def test_importing_core_never_imports_rclpy():
    code = ("import sys, manip_dynamics, manip_dynamics.core; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('rclpy', 'rosidl_runtime_py')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


# ----------------------------------------------------------------------------- structure
def test_structure_and_properties(arm):
    assert arm.n == 3
    assert arm.joint_names == ("j1", "j2", "j3")
    assert arm.root_link == "base"
    assert set(arm.frame_names) == {"base", "l1", "l2", "l3", "tool"}
    assert arm.default_tip == "tool"
    np.testing.assert_array_equal(arm.effort_limits, [np.inf, np.inf, 50.0])
    np.testing.assert_array_equal(arm.position_lower, [-np.inf, -np.inf, -0.1])
    np.testing.assert_array_equal(arm.position_upper, [np.inf, np.inf, 0.3])
    np.testing.assert_array_equal(arm.viscous, [0, 0, 0.7])
    np.testing.assert_array_equal(arm.coulomb, [0, 0, 0.2])
    np.testing.assert_array_equal(arm.gravity, [0, 0, -9.81])
    assert arm.payloads == {}


def test_depth_first_order_children_in_document_order():
    xml = robot(link("base"), link("a", 1), link("b", 1), link("a2", 1), link("b2", 1),
                joint("jb", "base", "b"), joint("ja", "base", "a"),
                joint("jb2", "b", "b2"), joint("ja2", "a", "a2"))
    m = RobotModel.from_urdf_string(xml)
    assert m.joint_names == ("jb", "jb2", "ja", "ja2")


def test_pendulum_gravity_matches_closed_form():
    # point mass m at (l cos q, ., -l sin q) for rotation q about +y: U = m g0 l (-sin q)... :
    # x = l cos q, z = -l sin q  ->  U = -m g0 l sin q, g(q) = dU/dq = -m g0 l cos q
    m, l, g0 = 2.0, 0.5, 9.81
    model = RobotModel.from_urdf_string(pendulum(m, l))
    for q in (0.0, 0.4, -1.2, 2.5):
        assert model.gravity_torques([q])[0] == pytest.approx(-m * g0 * l * np.cos(q), abs=1e-12)
        assert model.mass_matrix([q])[0, 0] == pytest.approx(m * l * l, abs=1e-14)
    pose = model.frame_pose([np.pi / 2], "link1")
    np.testing.assert_allclose(pose[:3, :3] @ [l, 0, 0], [0, 0, -l], atol=1e-14)


def test_with_gravity_changes_sign_and_magnitude():
    model = RobotModel.from_urdf_string(pendulum(2.0, 0.5))
    up = model.with_gravity([0, 0, 3.0])
    assert up.gravity_torques([0.3])[0] == pytest.approx(2.0 * 3.0 * 0.5 * np.cos(0.3), abs=1e-12)
    np.testing.assert_array_equal(model.gravity, [0, 0, -9.81])   # original untouched
    with pytest.raises(InputError, match="gravity"):
        model.with_gravity([0, 0])


def test_continuous_joint_is_one_angle_without_limits():
    xml = robot(link("base"), link("l", 1.0, com="0.1 0 0"),
                joint("c", "base", "l", jtype="continuous"))
    m = RobotModel.from_urdf_string(xml)
    assert m.n == 1 and m.position_lower[0] == -np.inf and m.position_upper[0] == np.inf
    np.testing.assert_allclose(m.frame_pose([2 * np.pi + 0.3], "l"), m.frame_pose([0.3], "l"),
                               atol=1e-14)


def test_axis_is_normalized():
    a = RobotModel.from_urdf_string(robot(link("b"), link("l", 1, com="0.3 0 0"),
                                          joint("j", "b", "l", axis="0 0 5")))
    b = RobotModel.from_urdf_string(robot(link("b"), link("l", 1, com="0.3 0 0"),
                                          joint("j", "b", "l", axis="0 0 1")))
    np.testing.assert_allclose(a.mass_matrix([0.2]), b.mass_matrix([0.2]), atol=1e-15)


def test_root_link_selects_subtree():
    xml = chain3()
    sub = RobotModel.from_urdf_string(xml, root_link="l1")
    assert sub.joint_names == ("j2", "j3") and sub.root_link == "l1"
    assert "base" not in sub.frame_names
    with pytest.raises(URDFError, match="nowhere"):
        RobotModel.from_urdf_string(xml, root_link="nowhere")


# ----------------------------------------------------------------------------- URDF errors
@pytest.mark.parametrize("xml, pattern", [
    ("<robot><link name='a'>", "invalid URDF XML"),
    ("<notrobot/>", "<notrobot>"),
    (robot(link("a"), joint("j", "a", "ghost")), "ghost"),
    (robot(link("a"), link("b"), '<joint name="j" type="revolute"><child link="b"/></joint>'),
     "'j' has no <parent"),
    (robot(link("a"), link("b"), link("c"), joint("j1", "a", "b"), joint("j2", "b", "c"),
           joint("j3", "c", "b")), "two joints"),
    (robot(link("w"), link("a"), link("b"), joint("j1", "a", "b"), joint("j2", "b", "a")), "cycle"),
    (robot(link("a"), link("b"), link("c"), joint("j", "a", "b")), "several root links: a, c"),
    (robot(link("a"), link("b", -1.0), joint("j", "a", "b")), "link 'b'.*negative mass"),
    (robot(link("a"), link("b", 1.0, I=(1, -2, 1, 0, 0, 0)), joint("j", "a", "b")),
     "link 'b'.*positive"),
    (robot(link("a"), link("b", 1), joint("j", "a", "b", axis="0 0 0")), "joint 'j'.*zero"),
    (robot(link("a"), link("b", 1), joint("j", "a", "b", xyz="0 nan 0")), "joint 'j'.*not finite"),
    (robot(link("a"), link("b", 1), joint("j", "a", "b", extra='<mimic joint="nope"/>')),
     "joint 'j' mimics 'nope'"),
    (robot(link("a"), link("b", 1), link("a", 1), joint("j", "a", "b")), "duplicate link 'a'"),
])
def test_broken_urdf_raises_urdferror_naming_the_element(xml, pattern):
    with pytest.raises(URDFError, match=pattern):
        RobotModel.from_urdf_string(xml)


@pytest.mark.parametrize("jtype", ["floating", "planar", "spherical"])
def test_unsupported_joint_names_the_joint(jtype):
    xml = robot(link("a"), link("b", 1), joint("the_joint", "a", "b", jtype=jtype))
    with pytest.raises(UnsupportedJointError, match="the_joint"):
        RobotModel.from_urdf_string(xml)
    assert issubclass(UnsupportedJointError, URDFError) and issubclass(URDFError, ValueError)


def test_massless_frames_are_not_warned_joints_moving_nothing_are():
    """A massless link is normal when something below it carries mass (a) or when it is a
    frame (b, a flange on a fixed joint; the root): no warning. A joint that moves no mass
    and no inertia at all (jd: its row of M is zero, M is singular) is warned once, named;
    so are two of them, in one warning."""
    xml = robot(link("base"), link("a"), link("b"), link("c", 1.0, com="0.1 0 0"),
                link("tool0"),
                joint("ja", "base", "a"), joint("jb", "a", "b", jtype="fixed", axis=None),
                joint("jc", "b", "c"), joint("jt", "c", "tool0", jtype="fixed", axis=None))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        RobotModel.from_urdf_string(xml)
    assert not [x for x in w if issubclass(x.category, MasslessLinkWarning)]
    idle = xml.replace("</robot>", link("d") + link("e") + joint("jd", "c", "d")
                       + joint("je", "base", "e") + "</robot>")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = RobotModel.from_urdf_string(idle)
    msgs = [str(x.message) for x in w if issubclass(x.category, MasslessLinkWarning)]
    assert len(msgs) == 1 and "'jd'" in msgs[0] and "'je'" in msgs[0]
    assert "'ja'" not in msgs[0] and "'jc'" not in msgs[0] and "singular" in msgs[0]
    assert np.linalg.eigvalsh(m.mass_matrix(np.zeros(m.n)))[0] == 0.0


def test_from_urdf_file_reads_a_file(tmp_path):
    p = tmp_path / "p.urdf"
    p.write_text(pendulum())
    assert RobotModel.from_urdf_file(str(p)).joint_names == ("j1",)


# ----------------------------------------------------------------------------- input checks
def test_wrong_shape_and_non_finite_inputs_raise_naming_the_argument(arm):
    with pytest.raises(InputError, match=r"q must have shape \(3,\) or \(N, 3\), got \(2,\)"):
        arm.gravity_torques([0.0, 0.0])
    with pytest.raises(InputError, match=r"q\[1\] \(joint 'j2'\) is nan"):
        arm.mass_matrix([0.0, np.nan, 0.0])
    with pytest.raises(InputError, match=r"qd\[4, 2\] \(joint 'j3'\) is inf"):
        arm.coriolis_torques(np.zeros((5, 3)), np.where(np.arange(15).reshape(5, 3) == 14, np.inf, 0))
    with pytest.raises(InputError, match=r"qdd must have the shape of q"):
        arm.inverse_dynamics(np.zeros((4, 3)), np.zeros((4, 3)), np.zeros(3))
    with pytest.raises(InputError, match="numeric"):
        arm.gravity_torques(["a", "b", "c"])
    with pytest.raises(InputError, match="f_ext_frame"):
        arm.inverse_dynamics(np.zeros(3), np.zeros(3), np.zeros(3), f_ext=np.ones(6))
    with pytest.raises(InputError, match="f_ext must have shape"):
        arm.inverse_dynamics(np.zeros(3), np.zeros(3), np.zeros(3), f_ext=np.ones(3),
                             f_ext_frame="tool")
    with pytest.raises(InputError, match="damping"):
        arm.effective_inertia(np.zeros(3), "tool", damping=-1.0)
    with pytest.raises(InputError, match="non-zero"):
        arm.effective_mass(np.zeros(3), "tool", [0, 0, 0])
    assert issubclass(InputError, ManipDynamicsError) and issubclass(InputError, ValueError)


def test_unknown_frame(arm):
    with pytest.raises(UnknownFrameError, match="'hand'.*'tool'") as e:
        arm.jacobian(np.zeros(3), "hand")
    assert isinstance(e.value, KeyError)


def test_vector_from_names(arm):
    names = ["j3", "other", "j1", "j2"]
    np.testing.assert_array_equal(arm.vector_from_names(names, [3.0, 9.0, 1.0, 2.0]), [1, 2, 3])
    with pytest.raises(InputError, match="missing joints 'j2'"):
        arm.vector_from_names(["j1", "j3"], [0, 0])
    with pytest.raises(InputError, match="duplicate joint names 'j1'"):
        arm.vector_from_names(["j1", "j1", "j2", "j3"], [0, 0, 0, 0])
    with pytest.raises(InputError, match="unknown joints 'other'"):
        arm.vector_from_names(names, [0, 0, 0, 0], allow_extra=False)
    with pytest.raises(InputError, match="velocity: joint 'j2' has non-finite value nan"):
        arm.vector_from_names(names, [0, 0, 0, np.nan], field="velocity")
    # a non-finite value for a joint we do not use is ignored
    np.testing.assert_array_equal(arm.vector_from_names(names, [3, np.nan, 1, 2]), [1, 2, 3])
    with pytest.raises(InputError, match="4 names but 3 values"):
        arm.vector_from_names(names, [0, 0, 0])


# ----------------------------------------------------------------------------- batches
def test_batches_equal_per_state_results(arm):
    rng = np.random.default_rng(3)
    Q, QD, QDD = rng.normal(size=(3, 7, 3))
    F = rng.normal(size=(7, 6))
    checks = [
        (lambda q: arm.gravity_torques(q), (Q,)),
        (lambda q, qd: arm.coriolis_torques(q, qd), (Q, QD)),
        (lambda q, qd: arm.coriolis_matrix(q, qd), (Q, QD)),
        (lambda q: arm.mass_matrix(q), (Q,)),
        (lambda q, qd, qdd, f: arm.inverse_dynamics(q, qd, qdd, True, f, "l2"), (Q, QD, QDD, F)),
        (lambda q, qd, t, f: arm.forward_dynamics(q, qd, t, True, f, "tool"), (Q, QD, QDD, F)),
        (lambda q: arm.frame_pose(q, "tool"), (Q,)),
        (lambda q: arm.jacobian(q, "tool"), (Q,)),
        (lambda q, qd: arm.frame_bias_acceleration(q, qd, "tool"), (Q, QD)),
        (lambda q: arm.inverse_effective_inertia(q, "tool", linear_only=True), (Q,)),
        (lambda q: arm.effective_mass(q, "tool", [0, 1, 1]), (Q,)),
        (lambda q, qd: arm.kinetic_energy(q, qd), (Q, QD)),
        (lambda q: arm.potential_energy(q), (Q,)),
    ]
    for fn, args in checks:
        batch = fn(*args)
        loop = np.array([fn(*(a[k] for a in args)) for k in range(7)])
        assert batch.shape == loop.shape
        np.testing.assert_allclose(batch, loop, rtol=0, atol=1e-12)
    terms = arm.compute_all(Q, QD, "tool", linear_only=True, damping=1e-3)
    for k in (0, 6):
        one = arm.compute_all(Q[k], QD[k], "tool", linear_only=True, damping=1e-3)
        for a, b in zip(terms, one):
            np.testing.assert_allclose(a[k], b, atol=1e-12)


def test_compute_all_with_the_ellipsoid_equals_the_separate_calls(arm):
    """compute_all(..., ellipsoid=True) is one run giving what compute_all and
    inertia_ellipsoid give separately (single states and batches, both linear_only, with
    and without damping); its Lambda also equals effective_inertia's. Equal to round-off:
    with the eigenvectors the kernel takes cond(A) and the inverse from eigh, without them
    from the eigenvalues alone (core/dynamics/kernels/symmetric_eigen.py; the same values to
    ~1e-15 relative)."""
    def same(a, b):
        a, b = np.asarray(a), np.asarray(b)
        if b.dtype == np.bool_:
            np.testing.assert_array_equal(a, b)
            return
        scale = np.max(np.abs(b[np.isfinite(b)]), initial=0.0)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * scale)

    rng = np.random.default_rng(11)
    Q, QD = rng.normal(size=(2, 5, 3))
    Q[2] = 0.0                                       # the stretched arm: singular A
    for q, qd in ((Q, QD), (Q[1], QD[1]), (Q[2], QD[2])):
        for linear_only in (True, False):
            for damping in (0.0, 1e-3):
                terms, ell = arm.compute_all(q, qd, "tool", linear_only=linear_only,
                                             damping=damping, ellipsoid=True)
                alone = arm.compute_all(q, qd, "tool", linear_only=linear_only,
                                        damping=damping)
                for a, b in zip(terms, alone):
                    same(a, b)
                ref = arm.inertia_ellipsoid(q, "tool", linear_only=linear_only)
                for a, b in zip(ell, ref):
                    same(a, b)
                if damping > 0:
                    same(terms.Lambda, arm.effective_inertia(
                        q, "tool", linear_only=linear_only, damping=damping))
    with pytest.raises(InputError, match="ellipsoid"):
        arm.compute_all(Q, QD, "tool", ellipsoid="yes")


def test_bundle_results_shapes_types_and_strided_inputs(arm):
    """compute_all & co. return C-contiguous float arrays (views of one buffer), a float
    condition number and a numpy bool flag; strided inputs and finite inputs whose sum of
    squares overflows are accepted; a non-finite entry of a strided input names its joint."""
    rng = np.random.default_rng(5)
    Q, QD = rng.normal(size=(2, 4, 3))
    t = arm.compute_all(Q[1], QD[1], "tool")
    assert [x.shape for x in t[:6]] == [(3,), (3,), (3, 3), (6, 3), (6, 6), (6, 6)]
    assert all(x.dtype == np.float64 and x.flags.c_contiguous for x in t[:6])
    assert type(t.condition_number) is np.float64 and type(t.singular) is np.bool_
    tb = arm.compute_all(Q, QD, "tool", linear_only=True)
    assert [x.shape for x in tb] == [(4, 3), (4, 3), (4, 3, 3), (4, 3, 3), (4, 3, 3), (4, 3, 3),
                                     (4,), (4,)]
    assert all(x.flags.c_contiguous for x in tb) and tb.singular.dtype == np.bool_
    ell = arm.inertia_ellipsoid(Q, "tool")
    np.testing.assert_allclose(ell.condition_number, tb.condition_number, rtol=1e-9)
    np.testing.assert_array_equal(ell.singular, tb.singular)
    lam, mu, p = arm.operational_space(Q[1], QD[1], "tool", linear_only=True)
    assert lam.shape == (3, 3) and mu.shape == p.shape == (3,)
    np.testing.assert_allclose(lam, tb.Lambda[1], rtol=1e-12, atol=0)
    # strided views (every other column of a wider array) give the contiguous results
    wide = np.zeros((4, 6))
    wide[:, ::2] = Q
    ts = arm.compute_all(wide[1, ::2], QD[1], "tool")
    for a, b in zip(ts, t):
        np.testing.assert_array_equal(a, b)
    wide[2, 2] = np.nan
    with pytest.raises(InputError, match=r"q\[2, 1\] \(joint 'j2'\) is nan"):
        arm.compute_all(wide[:, ::2], QD, "tool")
    # finite entries whose squares overflow: not an input error (revolute j1 at 1e200 rad)
    big = np.array([1e200, 0.1, 0.05])
    assert np.isfinite(arm.compute_all(big, np.zeros(3), "tool").M).all()


def test_empty_batch(arm):
    assert arm.mass_matrix(np.zeros((0, 3))).shape == (0, 3, 3)


# ----------------------------------------------------------------------------- copies, payloads
def test_model_is_frozen(arm):
    with pytest.raises(AttributeError):
        arm.n = 4
    with pytest.raises(ValueError):
        arm.viscous[0] = 1.0


def test_with_friction_and_friction_torques(arm):
    f = arm.with_friction(viscous=[0.1, 0.2, 0.3], coulomb=0.5)
    qd = np.array([1.0, -2.0, 0.0])
    np.testing.assert_allclose(f.friction_torques(qd), [0.1 + 0.5, -0.4 - 0.5, 0.0])
    np.testing.assert_array_equal(arm.viscous, [0, 0, 0.7])
    q = np.array([0.1, 0.2, 0.05])
    d = f.inverse_dynamics(q, qd, qd, friction=True) - f.inverse_dynamics(q, qd, qd)
    np.testing.assert_allclose(d, f.friction_torques(qd), atol=1e-13)
    with pytest.raises(InputError, match=r"coulomb\[1\] \(joint 'j2'\)"):
        arm.with_friction(coulomb=[0, -1, 0])


def test_payload_equals_an_extra_fixed_link_in_the_urdf():
    """Payload (mass, com, inertia) at 'tool' == a URDF link fixed to 'tool' with that inertial."""
    I = (0.01, 0.02, 0.015, 0.001, -0.002, 0.0005)
    Imat = np.array([[I[0], I[3], I[4]], [I[3], I[1], I[5]], [I[4], I[5], I[2]]])
    base = chain3()
    extra = base.replace("</robot>", link("pl", 1.3, com="0.05 -0.02 0.1", I=I)
                         + joint("pl_joint", "tool", "pl", jtype="fixed", axis=None) + "</robot>")
    ref = RobotModel.from_urdf_string(extra)
    m0 = RobotModel.from_urdf_string(base)
    m1 = m0.with_payload("tool", 1.3, [0.05, -0.02, 0.1], Imat)
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.normal(size=(3, 3))
    for name in ("inverse_dynamics",):
        np.testing.assert_allclose(m1.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd),
                                   atol=1e-12)
    np.testing.assert_allclose(m1.mass_matrix(q), ref.mass_matrix(q), atol=1e-13)
    assert set(m1.payloads) == {"tool"} and m0.payloads == {}
    # replacing and removing
    m2 = m1.with_payload("tool", 0.1)
    assert m2.payloads["tool"][0] == 0.1
    np.testing.assert_allclose(m1.without_payload("tool").mass_matrix(q), m0.mass_matrix(q),
                               atol=1e-14)
    np.testing.assert_allclose(m1.without_payload().mass_matrix(q), m0.mass_matrix(q), atol=1e-14)
    with pytest.raises(InputError, match="mass"):
        m0.with_payload("tool", -1.0)
    with pytest.raises(UnknownFrameError):
        m0.with_payload("nowhere", 1.0)


# ----------------------------------------------------------------------------- mimic
def test_mimic_joint_is_a_constraint():
    """Mimic model == the explicit 2-coordinate model with q2 = 2 q1 + 0.1, M = G^T M G."""
    parts = [link("base"), link("a", 1.0, com="0.2 0 0"), link("b", 0.5, com="0.1 0.05 0"),
             joint("j1", "base", "a", axis="0 1 0"), joint("j2", "a", "b", xyz="0.3 0 0", axis="1 0 0")]
    free = RobotModel.from_urdf_string(robot(*parts))
    parts[-1] = joint("j2", "a", "b", xyz="0.3 0 0", axis="1 0 0",
                      extra='<mimic joint="j1" multiplier="2.0" offset="0.1"/>')
    mim = RobotModel.from_urdf_string(robot(*parts))
    assert mim.joint_names == ("j1",) and mim.mimic_joint_names == ("j2",)
    G = np.array([[1.0], [2.0]])
    for q1, qd1, qdd1 in ((0.3, 0.7, -0.2), (-1.0, 2.0, 1.0)):
        qf, qdf, qddf = np.array([q1, 2 * q1 + 0.1]), G[:, 0] * qd1, G[:, 0] * qdd1
        np.testing.assert_allclose(mim.mass_matrix([q1]), G.T @ free.mass_matrix(qf) @ G, atol=1e-13)
        np.testing.assert_allclose(mim.inverse_dynamics([q1], [qd1], [qdd1]),
                                   G.T @ free.inverse_dynamics(qf, qdf, qddf), atol=1e-13)
        np.testing.assert_allclose(mim.coriolis_matrix([q1], [qd1]),
                                   G.T @ free.coriolis_matrix(qf, qdf) @ G, atol=1e-13)
        np.testing.assert_allclose(mim.jacobian([q1], "b"), free.jacobian(qf, "b") @ G, atol=1e-14)
        # vector_from_names accepts (ignores) the mimic joint even when extras are refused
        np.testing.assert_array_equal(
            mim.vector_from_names(["j2", "j1"], [9.0, q1], allow_extra=False), [q1])


# ----------------------------------------------------------------------------- singularities
def test_singular_behaviour_of_a_stretched_planar_arm():
    xml = robot(link("base"), link("l1", 1.0, com="0.25 0 0", I=(0.001, 0.01, 0.01, 0, 0, 0)),
                link("l2", 1.0, com="0.25 0 0", I=(0.001, 0.01, 0.01, 0, 0, 0)), link("tip"),
                joint("j1", "base", "l1"), joint("j2", "l1", "l2", xyz="0.5 0 0"),
                joint("jt", "l2", "tip", jtype="fixed", xyz="0.5 0 0", axis=None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MasslessLinkWarning)
        m = RobotModel.from_urdf_string(xml)
    q = np.zeros(2)                         # stretched along x: no velocity along x
    with pytest.raises(SingularConfigurationError, match="'tip'"):
        m.effective_inertia(q, "tip", linear_only=True)
    A = m.inverse_effective_inertia(q, "tip", linear_only=True)
    assert np.isfinite(A).all() and abs(A[0, 0]) < 1e-14
    lam = m.effective_inertia(q, "tip", linear_only=True, damping=1e-3)
    assert np.isfinite(lam).all()
    assert m.effective_mass(q, "tip", [1, 0, 0]) == np.inf
    assert np.isfinite(m.effective_mass(q, "tip", [0, 1, 0]))
    ell = m.inertia_ellipsoid(q, "tip")
    assert ell.singular and np.isinf(ell.eigenvalues).sum() == 2   # x and z directions
    assert np.linalg.det(ell.eigenvectors) == pytest.approx(1.0)
    t = m.compute_all(q, q, "tip", linear_only=True)
    assert t.singular and np.isfinite(t.Lambda).all() and np.isinf(t.condition_number)
    # away from the singularity in the plane: Lambda (x-y block) is the inverse of A's block
    q2 = np.array([0.3, 1.2])
    A2 = m.inverse_effective_inertia(q2, "tip", linear_only=True)[:2, :2]
    L2 = m.operational_space(q2, q2, "tip", linear_only=True, damping=1e-9)[0][:2, :2]
    np.testing.assert_allclose(L2 @ A2, np.eye(2), atol=1e-6)


def test_massless_joint_makes_forward_dynamics_raise():
    xml = robot(link("base"), link("a", 1.0, com="0.2 0 0"), link("b"),
                joint("ja", "base", "a", axis="0 1 0"), joint("jb", "a", "b", xyz="0.3 0 0"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MasslessLinkWarning)
        m = RobotModel.from_urdf_string(xml)
    with pytest.raises(SingularConfigurationError, match="'jb'"):
        m.forward_dynamics(np.zeros(2), np.zeros(2), np.zeros(2))


# ----------------------------------------------------------------------------- threads
def test_concurrent_calls_from_threads_agree(arm):
    """Thread safety: four threads released together by a barrier hammer the same frozen
    model and payload copies of it (batched kernels release the GIL, so they really run
    at once); every result equals the one computed serially beforehand."""
    rng = np.random.default_rng(9)
    Q = rng.normal(size=(2000, 3))
    QD = rng.normal(size=(2000, 3))
    models = [arm.with_payload("tool", 0.1 * k) if k else arm for k in range(4)]
    expected = [(m.mass_matrix(Q), m.coriolis_torques(Q, QD),
                 m.compute_all(Q, QD, "tool", linear_only=True).Lambda) for m in models]
    barrier = threading.Barrier(4)
    results = [None] * 4
    errors = []

    def work(k):
        try:
            barrier.wait(timeout=10.0)
            m = models[k]
            out = []
            for _ in range(5):
                out.append((m.mass_matrix(Q), m.coriolis_torques(Q, QD),
                            m.compute_all(Q, QD, "tool", linear_only=True).Lambda))
            results[k] = out
        except Exception as exc:   # surfaced below, with the thread's index
            errors.append((k, exc))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(4):
        for rep in results[k]:
            for got, want in zip(rep, expected[k]):
                np.testing.assert_array_equal(got, want)
    # the payloads differ, so a mix-up between threads could not go unnoticed
    assert not np.array_equal(expected[0][0], expected[3][0])


def test_model_without_moving_joints():
    xml = robot(link("a"), link("b", 1.0), joint("f", "a", "b", jtype="fixed", axis=None))
    m = RobotModel.from_urdf_string(xml)
    assert m.n == 0 and m.default_tip == "b"
    assert m.gravity_torques([]).shape == (0,) and m.mass_matrix([]).shape == (0, 0)
    assert m.jacobian([], "b").shape == (6, 0)
    assert m.compute_all([], [], "b").singular          # A = 0: nothing can move the frame
    with pytest.raises(SingularConfigurationError):
        m.effective_inertia([], "b")


def test_triangle_inequality_violation_warns_and_loads():
    """Principal moments (1, 1, 5) violate I3 <= I1 + I2: no rigid body has them, but the
    tensor is positive definite, so the link loads (one InertiaWarning naming it) and its
    inertia acts as given: a single joint about z sees M = izz + m (x^2 + y^2) of the com."""
    from manip_dynamics import InertiaWarning
    xml = robot(link("a"), link("b", 2.0, com="0.3 0 0", I=(1, 1, 5, 0, 0, 0)),
                joint("j", "a", "b", axis="0 0 1"))
    with pytest.warns(InertiaWarning, match="'b'"):
        m = RobotModel.from_urdf_string(xml)
    np.testing.assert_allclose(m.mass_matrix([0.4]), [[5.0 + 2.0 * 0.3 ** 2]], rtol=1e-12)



# ----------------------------------------------------------------------------- direct calls
def test_single_state_input_flavours_give_the_same_bits(arm):
    """The one-state fast path (a contiguous float64 q, passed on as a view) and the general
    path (lists, ints, readonly, strided, big-endian, (1, n) batches) give the same bits."""
    q = np.array([0.3, -0.7, 1.1])
    qd = np.array([0.5, 0.2, -0.4])
    ro = q.copy()
    ro.setflags(write=False)
    wide = np.zeros(6)
    wide[::2] = q
    odd = np.zeros(3 * 8 + 1, np.uint8)[1:].view(np.float64)     # not 8-byte aligned
    odd[:] = q
    assert not odd.flags.aligned
    flavours = [q.tolist(), ro, wide[::2], q.astype(">f8"), q[None], odd]
    for name, call in [("g", lambda x, v: arm.gravity_torques(x)),
                       ("c", lambda x, v: arm.coriolis_torques(x, v)),
                       ("M", lambda x, v: arm.mass_matrix(x)),
                       ("J", lambda x, v: arm.jacobian(x, "tool")),
                       ("all", lambda x, v: arm.compute_all(x, v, "tool").Lambda)]:
        ref = call(q, qd)
        for x in flavours:
            v = qd[None] if np.ndim(x) == 2 else qd
            got = call(x, v)
            np.testing.assert_array_equal(got[0] if np.ndim(x) == 2 else got, ref,
                                          err_msg=f"{name} for {type(x).__name__}")
    assert arm.gravity_torques(q).flags.c_contiguous
    with pytest.raises(InputError, match="shape"):
        arm.gravity_torques(np.zeros(4))


def test_one_state_compute_all_gives_the_batch_rows_bits_and_types(arm):
    """compute_all of one contiguous state (K.one_bundle, separate outputs) and the batched
    bundle (one buffer, K.batch_bundle) give the same bits in every field, the same numpy
    scalar types for condition_number and singular, for both task-space sizes, with and
    without damping, for regular and singular states; a state the one-state path cannot
    finish falls through to the general path's error."""
    rng = np.random.default_rng(7)
    states = [(rng.normal(size=3), rng.normal(size=3)) for _ in range(3)]
    states.append((np.zeros(3), rng.normal(size=3)))
    for q, qd in states:
        for linear_only in (False, True):
            for damping, condition in ((0.0, 0.0), (1e-3, 1e6), (0.05, 0)):
                kw = dict(linear_only=linear_only, damping=damping,
                          damping_condition=condition)
                one = arm.compute_all(q, qd, "tool", **kw)
                row = arm.compute_all(q[None], qd[None], "tool", **kw)
                for field, a, b in zip(one._fields, one, row):
                    np.testing.assert_array_equal(a, b[0], err_msg=field)
                    assert type(a) is type(b[0]), field
                assert one.M.flags.c_contiguous and one.J.shape == (3 if linear_only else 6, 3)
    # both kinds of state were among those compared: 6 task rows of a 3-joint arm (A has
    # rank 3: singular) and 3 linear rows at q = 0 (regular)
    assert arm.compute_all(np.zeros(3), np.zeros(3), "tool").singular
    assert not arm.compute_all(np.zeros(3), np.zeros(3), "tool", linear_only=True).singular
    with pytest.raises(InputError, match=r"q\[1\] \(joint 'j2'\) is nan"):
        arm.compute_all(np.array([0.1, np.nan, 0.2]), np.zeros(3), "tool")
    with pytest.raises(InputError, match="damping"):
        arm.compute_all(np.zeros(3), np.zeros(3), "tool", damping=-1.0)
    terms, _ = arm.compute_all(states[0][0], states[0][1], "tool", ellipsoid=True)
    np.testing.assert_array_equal(terms.Lambda, arm.compute_all(*states[0], "tool").Lambda)


def test_direct_calls_check_their_argument_types(arm):
    """A direct kernel call (model._direct) uses the entry point of the kernel's first
    types; with checking on (the core tests run so) any other types are refused instead of
    being read with the wrong layout; the entry point's results equal the dispatcher's."""
    from manip_dynamics.core.dynamics import kernels as K
    from manip_dynamics.core.dynamics import launch as core_launch

    arm.gravity_torques(np.zeros(3))
    Q = np.random.default_rng(2).normal(size=(5, 3))
    out_direct, out_dispatch = np.empty((5, 3)), np.empty((5, 3))
    core_launch._direct(K.batch_gravity, (arm._bodies, arm._gravity, Q, out_direct))
    K.batch_gravity(arm._bodies, arm._gravity, Q, out_dispatch)
    np.testing.assert_array_equal(out_direct, out_dispatch)
    fortran = np.asfortranarray(Q)
    core_launch.check_direct_calls(True)
    with pytest.raises(AssertionError, match="batch_gravity: direct call with"):
        core_launch._direct(K.batch_gravity, (arm._bodies, arm._gravity, fortran,
                                             np.empty((5, 3))))
    with pytest.raises(AssertionError, match="direct call with"):
        core_launch._direct(K.batch_gravity, (arm._bodies, arm._gravity, Q[0], np.empty(3)))
