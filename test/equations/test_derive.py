"""Symbolic M, C, g of manip_dynamics.equations against the numeric core (CRBA / RNEA) at
random states, to 1e-12 relative to max(1, |core|): the embedded arms and random chains of
1-6 joints (revolute, continuous, prismatic, axes along x/y/z or random, offset joint
origins with rpy, products of inertia, links merged over fixed joints). Also: J^T F and
friction against the core, locked joints, and dM/dt - 2C skew-symmetric symbolically."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
import sympy as sp

from manip_dynamics.core import RobotModel
from manip_dynamics.equations import derive

from .arms import assert_close, derived, evaluator, random_chain

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROBOTS = pathlib.Path(__file__).resolve().parents[2] / "manip_dynamics" / "robots"
ARMS = ("planar_2r", "planar_rp")


def _check_against_core(eq, model, states=8, seed=0, joints=None):
    """M, C qd, C, g, J^T F and the friction of ``eq`` (numeric) equal the core's."""
    f = evaluator(eq, eq.M, eq.Cqd, eq.C, eq.g, eq.JTF, eq.tau_fr)
    rng = np.random.default_rng(seed)
    n_full = model.n
    keep = [model.joint_names.index(j) for j in (joints or model.joint_names)]
    for _ in range(states):
        q, qd, F = rng.uniform(-2, 2, eq.n), rng.uniform(-2, 2, eq.n), rng.normal(size=6)
        Q, QD = np.zeros(n_full), np.zeros(n_full)
        Q[keep], QD[keep] = q, qd
        M, c, C, g, JTF, fr = f(q, qd, F)
        assert_close(M, model.mass_matrix(Q)[np.ix_(keep, keep)], what="M")
        assert_close(g.ravel(), model.gravity_torques(Q)[keep], what="g")
        if joints is None:
            assert_close(c.ravel(), model.coriolis_torques(Q, QD), what="C qd")
            assert_close(C, model.coriolis_matrix(Q, QD), what="C")
            J = model.jacobian(Q, eq.chain.tip)
            assert_close(JTF.ravel(), J.T @ F, what="J^T F")
            assert_close(fr.ravel(), model.friction_torques(QD), what="tau_fr")


@pytest.mark.parametrize("arm", ARMS)
@pytest.mark.parametrize("symbolic", [False, True])
def test_embedded_arms_equal_the_core(arm, symbolic):
    xml = (ROBOTS / f"{arm}.urdf").read_text()
    eq = derived(xml, simplify=True, symbolic_parameters=True) if symbolic else \
        derived(xml, simplify=True)             # (the same derivations as test_codegen's)
    assert bool(eq.parameters) == symbolic
    _check_against_core(eq.numeric(), RobotModel.from_urdf_string(xml))


@pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.slow),
                               pytest.param(3, marks=pytest.mark.slow)])
def test_random_chains_equal_the_core(n):
    xml = random_chain(n, seed=10 + n, friction=True)
    _check_against_core(derive(xml), RobotModel.from_urdf_string(xml), seed=n)


@pytest.mark.slow
def test_random_chain_with_symbolic_parameters_equals_the_core():
    """Every parameter a symbol, substituted afterwards: the same numbers as the core."""
    xml = random_chain(3, seed=7, friction=True)
    eq = derive(xml, symbolic_parameters=True)
    assert len(eq.parameters) > 20
    _check_against_core(eq.numeric(), RobotModel.from_urdf_string(xml), states=4)


@pytest.mark.slow
def test_planar_chain_of_four():
    xml = random_chain(4, seed=4, general="planar")
    _check_against_core(derive(xml), RobotModel.from_urdf_string(xml), states=4)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("n,general", [(4, False), (5, False), (5, "planar"), (6, "planar")])
def test_longer_chains_equal_the_core(n, general):
    xml = random_chain(n, seed=n, general=general)
    _check_against_core(derive(xml), RobotModel.from_urdf_string(xml), states=3)


def test_locked_joints_equal_the_core_at_zero():
    """--joints: the joints left out are held at q = 0; M and g are the core's rows and
    columns of the kept joints at that state."""
    xml = random_chain(3, seed=3, general=False)
    model = RobotModel.from_urdf_string(xml)
    kept = [model.joint_names[0], model.joint_names[2]]
    eq = derive(xml, joints=kept)
    assert eq.chain.joint_names == tuple(kept)
    _check_against_core(eq, model, states=4, joints=kept)


@pytest.mark.parametrize("arm", ARMS)
def test_mdot_minus_2c_is_skew_symmetric_symbolically(arm):
    """N = dM/dt - 2C with dM/dt = sum_k dM/dq_k qd_k: N + N^T simplifies to zero, for every
    value of the parameters (symbolic) and of q, qd."""
    eq = derived((ROBOTS / f"{arm}.urdf").read_text(), simplify=True, symbolic_parameters=True)
    Mdot = sum((sp.diff(eq.M, qk) * qdk for qk, qdk in zip(eq.q, eq.qd)), sp.zeros(eq.n, eq.n))
    N = Mdot - 2 * eq.C
    assert (N + N.T).applyfunc(sp.simplify) == sp.zeros(eq.n, eq.n)
    assert N.applyfunc(sp.simplify) != sp.zeros(eq.n, eq.n)      # C is not M/2-trivial


@pytest.mark.slow
def test_parallel_and_opposite_axes_merge_exactly():
    """Axes z, -z, a slider, then z behind an rpy of pi about x (so opposite to the pending
    -z carried through it): the rotations merge into one angle q1 - q2 (- q4 ...) and the
    result is still the core's."""
    from core import urdf_factory as uf
    rng = np.random.default_rng(3)

    def body():
        return uf.inertial_xml(rng.uniform(0.5, 2), rng.uniform(-0.2, 0.2, 3),
                               inertia=uf.random_inertia(rng))

    parts = [uf.link_xml("base")] + [uf.link_xml(f"l{i}", body()) for i in range(1, 5)]
    parts += [uf.joint_xml("j1", "revolute", "base", "l1", axis=(0, 0, 1)),
              uf.joint_xml("j2", "revolute", "l1", "l2", xyz=(0.3, 0.1, 0), axis=(0, 0, -1)),
              uf.joint_xml("j3", "prismatic", "l2", "l3", xyz=(0.2, 0, 0.1), axis=(1, 0, 0)),
              uf.joint_xml("j4", "revolute", "l3", "l4", xyz=(0.1, 0, 0), rpy=(np.pi, 0, 0),
                           axis=(0, 0, 1))]
    xml = uf.robot_xml("flip", parts)
    eq = derive(xml)
    angles = {f.args[0] for f in eq.M.atoms(sp.cos)}
    q1, q2, _, q4 = eq.q
    assert angles <= {q2 - q1 + q4, q1 - q2 - q4, q4, q2 - q1, q1 - q2, q2, q1, -q4, -q2}, angles
    _check_against_core(eq, RobotModel.from_urdf_string(xml), states=4)



def _nearly_right_angles_chain():
    """Two revolute joints described as URDFs often are, with pi typed 3.1415926 and pi/2
    1.5707963: j2's axis z lies 5.4e-8 rad off the opposite of j1's z carried through j2's
    rpy; offset origins, 3D bodies with products of inertia, an offset tool frame."""
    from core import urdf_factory as uf
    rng = np.random.default_rng(5)

    def body():
        return uf.inertial_xml(rng.uniform(0.5, 2), rng.uniform(-0.2, 0.2, 3),
                               inertia=uf.random_inertia(rng))

    parts = [uf.link_xml("base"), uf.link_xml("l1", body()), uf.link_xml("l2", body()),
             uf.link_xml("tool"),
             uf.joint_xml("j1", "revolute", "base", "l1", xyz=(0, 0, 0.1), axis=(0, 0, 1)),
             uf.joint_xml("j2", "revolute", "l1", "l2", xyz=(0.4, 0.05, 0.3),
                          rpy=(3.1415926, 0, 1.5707963), axis=(0, 0, 1)),
             uf.joint_xml("tool_joint", "fixed", "l2", "tool", xyz=(0.3, 0.1, -0.05))]
    xml = uf.robot_xml("nearly", parts)
    assert 'rpy="3.1415926 0.0 1.5707963"' in xml
    return xml


def test_nearly_parallel_axes_keep_their_angle():
    """Axes 5.4e-8 rad off opposite are not merged (merged, the equations were those of a
    slightly different arm: M, g 1e-9, J 1e-7 relative off): M, g and the tip's J at random
    q equal the core's and Pinocchio's (crba, computeGeneralizedGravity,
    computeFrameJacobian LOCAL_WORLD_ALIGNED: [v; w] of the tip origin in root axes) to
    1e-14 relative."""
    import pinocchio as pin
    xml = _nearly_right_angles_chain()
    eq = derive(xml)
    model = RobotModel.from_urdf_string(xml)
    pmodel = pin.buildModelFromXML(xml)
    pdata = pmodel.createData()
    tool = pmodel.getFrameId("tool")
    f = evaluator(eq, eq.M, eq.g, eq.J)
    rng = np.random.default_rng(1)
    for _ in range(6):
        q = rng.uniform(-np.pi, np.pi, 2)
        M, g, J = f(q)
        M_pin = np.triu(pin.crba(pmodel, pdata, q))
        M_pin = M_pin + np.triu(M_pin, 1).T
        for what, ours, core, other in (
                ("M", M, model.mass_matrix(q), M_pin),
                ("g", g.ravel(), model.gravity_torques(q),
                 pin.computeGeneralizedGravity(pmodel, pdata, q)),
                ("J", J, model.jacobian(q, "tool"),
                 pin.computeFrameJacobian(pmodel, pdata, q, tool, pin.LOCAL_WORLD_ALIGNED))):
            assert_close(core, other, tol=1e-14, what=what + ": core vs Pinocchio")
            assert_close(ours, core, tol=1e-14, what=what + " vs core")
    assert {f.args[0] for f in eq.M.atoms(sp.cos)} <= set(eq.q)    # no merged q_1 - q_2
