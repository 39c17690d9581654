"""Isolation on an arm with a gripper: a tree at the wrist (issue 35, item 9).

example-robot-data's Panda WITH its hand: panda_hand fixed to the flange, two prismatic
finger joints (panda_finger_joint2 mimics panda_finger_joint1: one coordinate, 8 in all).
From joint torques alone a contact is located up to the links the last significantly
loaded joint (|r_i| > leave_i) moves: the isolated link is the one that joint moves
directly, and the others (the flange, the hand, the fingers: a force across a finger's
sliding axis gives the finger joint no torque) are the candidates.

References, independent of the code under test: the URDF's own parent/child tree (read
here with ElementTree) for the links each joint moves, r = J^T f by construction for the
unit check, and MuJoCo (manip_dynamics.sim's plant of the same URDF) for the loaded link:
the child link of the most distal joint with non-zero true external torque.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from manip_dynamics import RobotModel
from manip_dynamics.core.contact.detector import ContactDetector, joint_candidates
from manip_dynamics.rules.contact_monitor import ContactMonitor, ObserverOptions
from manip_dynamics.sim.mujoco_plant import MujocoPlant
from manip_dynamics.sim.scene import SceneOptions

from ..dynamics.test_pinocchio import PANDA

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

HAND_LINKS = ("panda_link7", "panda_link8", "panda_hand", "panda_hand_tcp", "panda_leftfinger",
              "panda_rightfinger")
ENTER, HYSTERESIS = 0.2, 0.5                     # every joint (N*m, N for the fingers)


@pytest.fixture(scope="module")
def hand():
    """(URDF text, RobotModel) of the Panda with its hand and fingers."""
    with open(PANDA, encoding="utf-8") as fh:
        xml = fh.read()
    return xml, RobotModel.from_urdf_string(xml)


def urdf_tree(xml):
    """{joint name: (child link, [links below the child, depth first])} from the URDF."""
    joints = ET.fromstring(xml).findall("joint")
    children = {}
    for j in joints:
        children.setdefault(j.find("parent").get("link"), []).append(j.find("child").get("link"))

    def below(link):
        return [c for child in children.get(link, []) for c in [child, *below(child)]]
    return {j.get("name"): (j.find("child").get("link"), below(j.find("child").get("link")))
            for j in joints}


def test_candidates_are_the_links_each_joint_moves(hand):
    """joint_candidates: the joint's child link first, then every link below it (the URDF
    tree); the mimic finger coordinate moves both fingers."""
    xml, model = hand
    assert model.n == 8 and model.joint_names[7] == "panda_finger_joint1"
    tree = urdf_tree(xml)
    candidates = joint_candidates(ContactDetector(model, ENTER).topology)
    for j, name in enumerate(model.joint_names[:7]):
        child, below = tree[name]
        assert candidates[j][0] == child
        assert set(candidates[j]) == {child, *below}, name
    assert candidates[6] == HAND_LINKS
    assert set(candidates[7]) == {"panda_leftfinger", "panda_rightfinger"}


def hand_push_residual(model, q, point, f):
    """r = J_v(p)^T f for a force f at ``point`` (hand frame) of panda_hand: no torque on
    the finger coordinate (not an ancestor of the hand)."""
    X = model.frame_pose(q, "panda_hand")
    lever = X[:3, :3] @ np.asarray(point)
    J = model.jacobian(q, "panda_hand")
    return (J[:3] - np.cross(lever, J[3:].T).T).T @ f


def test_a_push_on_the_hand_isolates_the_flange_link_with_the_hand_as_candidate(hand):
    """A push on the hand (r_7 0.5 N*m, r_finger exactly 0), with a finger residual up to
    exactly leave (0.1 N): isolated panda_link7, the link joint 7 moves directly, and the
    hand links as candidates; just above leave the residual proves the finger loaded
    (isolated the finger, both fingers the candidates). The numpy update and the kernel
    (update_into) decide alike."""
    _, model = hand
    q = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02])
    r = hand_push_residual(model, q, [0.0, 0.05, 0.06], np.array([10.0, -15.0, 8.0]))
    assert r[7] == 0.0 and abs(r[6]) > 2 * ENTER
    leave = HYSTERESIS * ENTER
    expected = [(0.0, 6), (-0.05, 6), (leave, 6), (np.nextafter(leave, 1.0), 7), (-leave, 6)]
    numpy_path = ContactDetector(model, ENTER, leave)
    kernel_path = ContactDetector(model, ENTER, leave)
    for k, (finger, joint) in enumerate(expected):
        rk = r.copy()
        rk[7] = finger
        state = numpy_path.update(0.01 * k, rk)
        _, kernel_joint = kernel_path.update_into(0.01 * k, rk)
        assert state.in_contact and (state.joint, kernel_joint) == (joint, joint), (k, finger)
        link = "panda_link7" if joint == 6 else "panda_leftfinger"
        assert state.link == link and state.candidates[0] == link
        assert state.candidates == (HAND_LINKS if joint == 6
                                    else ("panda_leftfinger", "panda_rightfinger"))


# ----------------------------------------------------------------- against MuJoCo
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02])
KP = np.array([600.0, 600, 600, 600, 250, 150, 50, 20.0])
KD = np.append(np.sqrt(KP[:7]), 1.0)            # fingers (30 g): held off their limits
H, SUBSTEPS, K_O = 0.01, 10, 100.0             # 100 Hz zero-order hold, plant at 1 kHz
# a wrench on the hand (a twisted tool): the moment keeps joint 7 loaded as the arm yields
PUSH = dict(force=[10.0, -15.0, 8.0], torque=[0.0, 0.0, 1.0], point=[0.0, 0.05, 0.06])
T_ON, T_PUSH, T_END = 0.5, 0.6, 1.5            # s


@pytest.fixture(scope="module")
def mujoco_run(hand):
    """The hand pushed (force off joint 7's axis, and a moment) while gravity compensation
    + PD hold the arm and fingers, 1.5 s on MuJoCo (the sim's plant, damping and friction
    off; its mimic coupling as stiff as the scene makes it): per
    10 ms sample t, q, qd, the torque held over the last period, the true tau_ext."""
    xml, model = hand
    zero = np.zeros(model.n)
    plant = MujocoPlant(xml, model, SceneOptions(viscous=zero, coulomb=zero, floor=False))
    # the URDF's <mimic> is a rigid coupling (as the model has it); MuJoCo's joint equality
    # is soft by default (time constant 0.02 s), the finger residual then reads 0.10-0.16 N
    # of constraint force (docs/contact.md): the scene stiffens it to two steps
    assert np.allclose(plant.m.eq_solref[:, 0], 2.0 * plant.m.opt.timestep)
    plant.reset(Q0)
    limit = np.asarray(model.effort_limits)
    rows = []
    for k in range(int(round(T_END / H))):
        q, qd = plant.q, plant.qd
        tau = np.clip(model.gravity_torques(q) + KP * (Q0 - q) - KD * qd, -limit, limit)
        if k == int(round(T_ON / H)):
            plant.apply_wrench("panda_hand", duration=T_PUSH, **PUSH)
        plant.advance(tau, SUBSTEPS)
        rows.append((plant.time, plant.q, plant.qd, plant.tau_applied, plant.external_torques()))
    return dict(zip(("t", "q", "qd", "tau", "truth"), (np.array(a) for a in zip(*rows))))


def loaded_link(xml, joint_names, truth):
    """MuJoCo's loaded link: the child link of the most distal joint with non-zero true
    tau_ext (URDF tree), "" if none."""
    tree = urdf_tree(xml)
    loaded = [name for name, x in zip(joint_names, truth) if x != 0.0]
    parents = {name: [o for o in loaded if tree[name][0] in tree[o][1]] for name in loaded}
    deepest = [name for name in loaded
               if not any(name in parents[other] for other in loaded if other != name)]
    return tree[deepest[0]][0] if deepest else ""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("path", ["update", "update_terms"])
def test_mujoco_push_on_the_hand_isolates_the_loaded_link(hand, mujoco_run, path):
    """MuJoCo truth: the fingers feel nothing (true tau_ext 0) and the loaded link is
    panda_link7 (joint 7 the most distal loaded joint, |true tau_7| > 3 leave); our finger
    residual stays below leave. No detection before the push, then at once; from 3/K_O
    after the detection to the end of the push every sample isolates MuJoCo's loaded link,
    the candidates the hand links with the pushed panda_hand among them."""
    xml, model = hand
    run = mujoco_run
    leave = HYSTERESIS * ENTER
    monitor = ContactMonitor(model, ObserverOptions(
        gains=(K_O,), enter=(ENTER,), hysteresis=HYSTERESIS, timing="held"), "panda_hand_tcp")
    states = []
    for t, q, qd, tau in zip(run["t"], run["q"], run["qd"], run["tau"]):
        if path == "update":
            c = monitor.update(t, q, qd, tau).contact
            states.append((c.in_contact, c.link, c.candidates, monitor.observer.residual))
        else:
            live = monitor.update_terms(t, q, qd, tau, *model.compute_all(
                q, qd, "panda_hand_tcp", momentum=True))
            states.append((live.in_contact, live.link, live.candidates, live.residual.copy()))
    pushed = np.abs(run["truth"]).max(axis=1) > 0
    assert not run["truth"][:, 7].any()                      # the fingers feel nothing
    assert np.abs([s[3][7] for s in states]).max() < leave   # nor does our finger residual
    onset = int(np.argmax(pushed))                           # the first pushed period
    first = next(k for k, s in enumerate(states) if s[0])
    assert 0 <= first - onset <= 1                           # none before, then at once
    settled = [k for k in range(len(states)) if pushed[k]
               and run["t"][k] >= run["t"][first] + 3.0 / K_O]
    assert len(settled) > 40
    assert np.abs(run["truth"][settled, 6]).min() > 3 * leave
    for k in settled:
        truth_link = loaded_link(xml, model.joint_names, run["truth"][k])
        in_contact, link, candidates, _ = states[k]
        assert in_contact and link == truth_link == "panda_link7", (run["t"][k], link)
        assert candidates == HAND_LINKS and "panda_hand" in candidates
    assert math.isclose(run["t"][-1], T_END, abs_tol=1e-9)
