"""Physically consistent perturbations of a URDF and their noise-free torques from Pinocchio,
for the identification tests and benchmarks/bench_consistent_fit.py (no identification
code is used here).

``perturbed(xml, rng)``: every link's ``<inertial>``: mass x U(0.8, 1.25) (its inertia
scaled alike), the centre of mass moved by up to 5 mm per axis, the inertia about the com
made strictly physical first (principal second moments sigma_i = tr(I)/2 - I_i, each
raised to at least 5% of the largest: a real body, not a flat one); links without mass
stay so. ``recording(xml_true, names, count, rng, viscous, coulomb)``: random states within
the limits and Pinocchio's rnea of the perturbed URDF (+ viscous qd + coulomb sign(qd))."""
from __future__ import annotations

import glob
import os
import xml.etree.ElementTree as ET

import numpy as np

from ..dynamics.test_pinocchio import ERD, PinocchioReference

ARMS = ("double_pendulum_description/urdf/double_pendulum.urdf",
        "asr_twodof_description/urdf/TwoDofs.urdf",
        "finger_edu_description/robots/finger_edu.urdf",
        "so_arm_description/urdf/so100.urdf", "so_arm_description/urdf/so101.urdf",
        "kinova_description/robots/kinova.urdf", "ur_description/urdf/ur3_robot.urdf",
        "ur_description/urdf/ur5_robot.urdf", "ur_description/urdf/ur10_robot.urdf",
        "z1_description/urdf/z1.urdf", "xarm_description/urdf/xarm7.urdf",
        "talos_data/robots/talos_left_arm.urdf", "panda_description/urdf/panda.urdf",
        "tiago_description/robots/tiago_no_hand.urdf",
        "borinot_description/urdf/borinot_flying_arm_2.urdf",
        "hextilt_description/urdf/hextilt_flying_arm_5.urdf")


def arm_path(rel):
    return os.path.join(ERD, rel)


def _floats(text):
    return np.array([float(v) for v in text.split()])


def _f(x):
    return repr(float(x))


def physical(I):
    """I (3, 3) about the com -> the nearest-in-spirit strictly physical inertia: principal
    second moments sigma_i = tr(I)/2 - I_i raised to >= 5% of the largest."""
    ev, V = np.linalg.eigh(0.5 * (I + I.T))
    sigma = 0.5 * ev.sum() - ev
    sigma = np.maximum(sigma, 0.05 * max(sigma.max(), 1e-12))
    moments = sigma.sum() - sigma
    return V @ np.diag(moments) @ V.T


def perturbed(xml, rng):
    """URDF text with every <inertial> perturbed (module docstring)."""
    root = ET.fromstring(xml)
    for link in root.findall("link"):
        inr = link.find("inertial")
        if inr is None or inr.find("mass") is None:
            continue
        m_el, I_el = inr.find("mass"), inr.find("inertia")
        m = float(m_el.get("value"))
        if m <= 0:
            continue
        o = inr.find("origin")
        if o is None:
            o = ET.SubElement(inr, "origin", xyz="0 0 0", rpy="0 0 0")
        xyz = _floats(o.get("xyz", "0 0 0")) + rng.uniform(-0.005, 0.005, 3)
        o.set("xyz", " ".join(_f(v) for v in xyz))
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        v = {k: float(I_el.get(k, 0.0)) if I_el is not None else 0.0 for k in keys}
        I = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                      [v["ixz"], v["iyz"], v["izz"]]])
        if not np.abs(I).max() > 0:
            I = np.eye(3) * m * 1e-4                      # a point mass gets a 1 cm size
        f = rng.uniform(0.8, 1.25)
        I = f * physical(I)
        m_el.set("value", _f(m * f))
        if I_el is None:
            I_el = ET.SubElement(inr, "inertia")
        for k, (i, j) in zip(keys, ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
            I_el.set(k, _f(I[i, j]))
    return ET.tostring(root, encoding="unicode")


def scaled(xml, length, mass):
    """The same arm ``length`` times as long and ``mass`` times as heavy: every origin's xyz
    x length, every mass x mass, every inertia x mass length^2 (meshes are left alone)."""
    root = ET.fromstring(xml)
    for o in root.iter("origin"):
        o.set("xyz", " ".join(_f(v) for v in _floats(o.get("xyz", "0 0 0")) * length))
    for m in root.iter("mass"):
        m.set("value", _f(float(m.get("value")) * mass))
    for i in root.iter("inertia"):
        for k in list(i.attrib):
            i.set(k, _f(float(i.get(k)) * mass * length ** 2))
    return ET.tostring(root, encoding="unicode")


def recording(xml_true, count, rng, viscous=None, coulomb=None):
    """(q, qd, qdd, tau) (count, n): random states (q within the limits, qd ~ N(0, 1),
    qdd ~ N(0, 2^2)) and Pinocchio's rnea of ``xml_true`` plus the friction torques."""
    ref = PinocchioReference(xml_true)
    q, qd, qdd = ref.states(count, seed=int(rng.integers(1 << 30)))
    tau = np.array([ref.rnea(*s) for s in zip(q, qd, qdd)])
    if viscous is not None:
        tau += viscous * qd + coulomb * np.sign(qd)
    return q, qd, qdd, tau


def all_arms():
    """ARMS that are installed (relative paths)."""
    return [rel for rel in ARMS if glob.glob(arm_path(rel))]
