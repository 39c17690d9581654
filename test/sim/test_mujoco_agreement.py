"""Our core's M(q), g(q) and C(q, qd) qd against MuJoCo's on example-robot-data's URDFs.

MuJoCo is an independent engine (its own URDF importer, composite-rigid-body and RNE
code). The plant is built by ``manip_dynamics.sim.scene`` exactly as the simulator builds
it, with the options that change the dynamics off (dof damping and friction loss zero,
armature 0, no inertia balancing, no static-body fusing). At random states within the
joint limits (continuous joints: (-pi, pi)):

    M      = mj_fullM(qM)                         (mass matrix)
    C qd + g = qfrc_bias                          (bias forces; g alone at qd = 0)

in our joint order (MuJoCo's dofs are mapped by joint NAME), to 1e-10 relative to
max(1, |MuJoCo's value|). Measured: 3e-14 at worst.

Every example-robot-data URDF is tried. A file is compared when both load it; the others
are printed with the reason, which must be one of ``REASONS``:
* MuJoCo refuses an inertia that violates the triangle inequality (A + B >= C) or is not
  positive definite unless ``balanceinertia`` alters it, which changes the dynamics (the
  issue asks for agreement without balancing): allegro hands, ANYmal B/C, B1, Go1, HyQ,
  iCub, PR2, Romeo small, finger_edu; and a moving body with zero mass (human, romeo);
* our core refuses a mimic joint whose master is not a moving joint below the root
  (alex_psyonic_hands). (TIAGo and romeo_laas_small, which the core refused for their
  non-positive inertias before the inertia policy of core/dynamics/inertia.py, now load in the core;
  MuJoCo refuses the same inertias, so they are still not compared.)
* ur3.urdf holds no link (a xacro wrapper); the quadrotors have no moving joint.
No file that both load differs.
"""
from __future__ import annotations

import glob
import os
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from manip_dynamics import RobotModel
from manip_dynamics.sim.scene import SceneOptions, build_model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

ERD = os.path.normpath(os.path.join(os.path.dirname(pin.__file__), *[os.pardir] * 4,
                                    "share", "example-robot-data", "robots"))
FILES = sorted(os.path.relpath(f, ERD) for f in glob.glob(f"{ERD}/**/*.urdf", recursive=True))
REQUIRED = ("panda_description/urdf/panda.urdf", "ur_description/urdf/ur5_robot.urdf",
            "ur_description/urdf/ur10_robot.urdf", "kinova_description/robots/kinova.urdf",
            "xarm_description/urdf/xarm7.urdf", "z1_description/urdf/z1.urdf",
            "so_arm_description/urdf/so101.urdf",
            "double_pendulum_description/urdf/double_pendulum.urdf")
TOL = 1e-10
# Measured (example-robot-data 6.0.0, mujoco 4.0.0, pinned): of the 69 files, 45 compared,
# worst agreement 4.7e-15; exactly these 24 not compared, each for the REASONS entry given.
N_FILES, N_COMPARED = 69, 45
NOT_COMPARED = {
    "alex_description/urdf/alex_psyonic_hands.urdf": "mimics",
    "allegro_hand_description/urdf/allegro_left_hand.urdf": "A + B >= C",
    "allegro_hand_description/urdf/allegro_right_hand.urdf": "A + B >= C",
    "anymal_b_simple_description/robots/anymal-kinova.urdf": "positive eigenvalues",
    "anymal_b_simple_description/robots/anymal.urdf": "positive eigenvalues",
    "anymal_c_simple_description/urdf/anymal.urdf": "A + B >= C",
    "b1_description/urdf/b1-z1.urdf": "positive eigenvalues",
    "b1_description/urdf/b1.urdf": "positive eigenvalues",
    "finger_edu_description/robots/finger_edu.urdf": "positive eigenvalues",
    "go1_description/urdf/go1.urdf": "positive eigenvalues",
    "hector_description/robots/quadrotor_base.urdf": "no moving joint",
    "human_description/robots/human.urdf": "no mass or no inertia",
    "hyq_description/robots/hyq_no_sensors.urdf": "positive eigenvalues",
    "icub_description/robots/icub.urdf": "positive eigenvalues",
    "icub_description/robots/icub_reduced.urdf": "positive eigenvalues",
    "iris_description/robots/iris_simple.urdf": "no moving joint",
    "pr2_description/urdf/pr2.urdf": "A + B >= C",
    "romeo_description/urdf/romeo.urdf": "no mass or no inertia",
    "romeo_description/urdf/romeo_laas_small.urdf": "positive eigenvalues",
    "romeo_description/urdf/romeo_small.urdf": "A + B >= C",
    "tiago_description/robots/tiago.urdf": "positive eigenvalues",
    "tiago_description/robots/tiago_dual.urdf": "positive eigenvalues",
    "tiago_description/robots/tiago_no_hand.urdf": "positive eigenvalues",
    "ur_description/urdf/ur3.urdf": "no <link>",
}
# Why a file may not be compared.
REASONS = (
    "A + B >= C",                   # MuJoCo: principal moments violate A + B >= C
    "positive eigenvalues",         # MuJoCo: an inertia that is not positive definite
    "no mass or no inertia",        # MuJoCo: a moving body without mass (the core warns)
    "mimics",                       # the core: mimic master not a moving joint below root
    "no <link>",                    # ur3.urdf is a xacro wrapper, not a URDF
    "no moving joint",              # quadrotor bases: nothing to compare
)


def _load(rel):
    """(core model, MuJoCo model) or the reason one of them refuses the file."""
    xml = open(os.path.join(ERD, rel), encoding="utf-8").read()
    try:
        model = RobotModel.from_urdf_string(xml)
    except ValueError as err:
        return None, f"core: {str(err)[:120]}"
    if model.n == 0:
        return None, "no moving joint"
    zero = np.zeros(model.n)
    try:
        mj = build_model(xml, model, SceneOptions(viscous=zero, coulomb=zero, floor=False))
    except ValueError as err:
        return None, f"mujoco: {str(err)[:400]}"
    return (model, mj, xml), ""


def _mimic_map(xml, model, mj):
    """q_mj = G q + offset over MuJoCo's hinge/slide joints (mimic joints follow their
    master: the core reduces them, MuJoCo keeps them as equality-constrained dofs)."""
    mimics = {}
    for joint in ET.fromstring(xml).findall("joint"):
        mimic = joint.find("mimic")
        if mimic is not None:
            mimics[joint.get("name")] = (mimic.get("joint"), float(mimic.get("multiplier", 1)),
                                         float(mimic.get("offset", 0)))
    G, offset = np.zeros((mj.nv, model.n)), np.zeros(mj.nv)
    for j in range(mj.njnt):
        name, dof = mj.joint(j).name, mj.jnt_dofadr[j]
        master, multiplier, offset[dof] = mimics.get(name, (name, 1.0, 0.0))
        G[dof, list(model.joint_names).index(master)] = multiplier
    return G, offset


def _worst_relative_error(model, mj, xml, states=6, seed=0):
    """max over states of |ours - MuJoCo's| / max(1, |MuJoCo's|) for M and C qd + g, in our
    coordinates: M = G^T M_mj G, C qd + g = G^T qfrc_bias (q_mj = G q + offset)."""
    mj.dof_damping[:] = mj.dof_frictionloss[:] = 0.0   # also on mimic dofs (URDF values)
    d = mujoco.MjData(mj)
    assert mj.nq == mj.nv and np.all(mj.dof_armature == 0) and np.all(mj.dof_damping == 0)
    G, offset = _mimic_map(xml, model, mj)
    finite = np.isfinite(model.position_lower) & np.isfinite(model.position_upper)
    lo = np.where(finite, model.position_lower, -np.pi)
    hi = np.where(finite, model.position_upper, np.pi)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for k in range(states):
        q = rng.uniform(lo, hi)
        qd = np.zeros(model.n) if k == 0 else rng.normal(0.0, 1.5, model.n)
        d.qpos[:], d.qvel[:] = G @ q + offset, G @ qd
        mujoco.mj_forward(mj, d)
        M = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, d, M)
        pairs = ((model.mass_matrix(q), G.T @ M @ G),
                 (model.gravity_torques(q) + model.coriolis_torques(q, qd), G.T @ d.qfrc_bias))
        for ours, theirs in pairs:
            worst = max(worst, float(np.max(np.abs(ours - theirs)))
                        / max(1.0, float(np.max(np.abs(theirs)))))
    return worst


@pytest.fixture(scope="module")
def results():
    out = {}
    for rel in FILES:
        loaded, reason = _load(rel)
        out[rel] = (_worst_relative_error(*loaded) if loaded else None, reason)
    return out


def test_the_named_arms_load_in_both_engines(results):
    assert len(FILES) == N_FILES
    for rel in REQUIRED:
        assert results[rel][0] is not None, f"{rel}: {results[rel][1]}"


def test_every_file_both_load_agrees_to_1e_10(results):
    compared = {rel: err for rel, (err, _) in results.items() if err is not None}
    refused = {rel: reason for rel, (err, reason) in results.items() if err is None}
    print(f"{len(compared)} compared, worst {max(compared.values()):.1e}; not compared:")
    for rel, reason in refused.items():
        print(f"  {rel}: {reason}")
    bad = {rel: err for rel, err in compared.items() if not err <= TOL}
    assert not bad, bad
    # Exactly the files NOT_COMPARED names are not compared, each for its documented reason.
    assert sorted(refused) == sorted(NOT_COMPARED), sorted(set(refused) ^ set(NOT_COMPARED))
    for rel, reason in refused.items():
        assert NOT_COMPARED[rel] in reason, (rel, reason)
    assert len(compared) == N_FILES - len(NOT_COMPARED) == N_COMPARED
