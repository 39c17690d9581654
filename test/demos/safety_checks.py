"""Checks of the closed-loop demo's ``safety`` summary entry (manip_dynamics/demos/safety.py)
against its own recording, shared by test/sim/test_demo.py and test_demo_any_arm.py.

Independent of the demo's path (Recorder rows -> safety_along_motion): the tracking
phase's joint_states are read back from ``recording.npz`` and every sample is assessed
with SafetyMonitor directly; the shortcut m_R = M/2 is summed from the URDF's <mass>
values of the links that move (the demo carries no payload) and its v_max written out
from the table's hands and fingers values.
"""
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

M_H, K_H, F_T = 0.6, 75e3, 280.0          # hands and fingers, ISO/TS 15066 Tables A.2, A.3


def moving_mass(urdf_xml):
    """Sum of the <mass> of every link below at least one non-fixed joint (kg)."""
    root = ET.fromstring(urdf_xml)
    parent = {j.find("child").get("link"): (j.find("parent").get("link"), j.get("type"))
              for j in root.findall("joint")}

    def moves(link):
        while link in parent:
            link, kind = parent[link]
            if kind != "fixed":
                return True
        return False
    total = 0.0
    for link in root.findall("link"):
        mass = link.find("inertial/mass")
        if mass is not None and moves(link.get("name")):
            total += float(mass.get("value"))
    return total


def check_demo_safety(out, model, urdf_xml):
    """Assert summary['safety'] of the demo run in ``out`` against the recording."""
    from manip_dynamics.safety import BodyModel, SafetyMonitor, default_points
    summary = json.loads((out / "summary.json").read_text())
    s = summary["safety"]
    rec = np.load(out / "recording.npz")
    rows = rec["joint_states_phase"] == list(rec["phases"]).index("tracking")
    q, qd = rec["joint_states_position"][rows], rec["joint_states_velocity"][rows]
    stamp = rec["joint_states_stamp"][rows]
    points = default_points(model, tip=summary["tip_frame"])
    assert s["region"] == "hands_fingers" and s["samples"] == len(q) > 100
    assert s["points"] == [p.label for p in points]
    mon = SafetyMonitor(model, points, BodyModel.load()["hands_fingers"])
    states = [mon.assess(q[k], qd[k]) for k in range(len(q))]
    top = np.array([st.ratio.max() for st in states])
    k = s["worst_sample"]
    assert stamp[k] == s["worst_stamp_s"] and s["worst_time_s"] == pytest.approx(
        stamp[k] - stamp[0], abs=1e-9)
    assert s["worst_ratio"] == pytest.approx(top.max(), rel=1e-12) and top[k] == top.max()
    assert s["worst_point"] == points[states[k].worst].label
    scale = max(1.0, top.max())
    assert s["retiming_scale"] == pytest.approx(scale, rel=1e-12)
    assert s["worst_ratio_retimed"] == pytest.approx(top.max() / scale, rel=1e-9)
    assert s["limit_scale"] == pytest.approx(top.max(), rel=1e-12)
    assert s["worst_ratio_at_limit"] == pytest.approx(1.0, rel=1e-9)
    assert s["duration_retimed_s"] == pytest.approx(s["duration_s"] * scale, rel=1e-9)
    m_R = moving_mass(urdf_xml) / 2
    v_S = F_T / np.sqrt(K_H / (1 / M_H + 1 / m_R))
    assert s["simplified_mass_kg"] == pytest.approx(m_R, rel=1e-9)
    assert s["simplified_v_max_m_s"] == pytest.approx(v_S, rel=1e-9)
    moving = [st for st in states if st.motion.speed.max() > 0]
    assert s["moving_samples"] == len(moving)
    unsafe = np.mean([v_S > st.v_max[st.worst] for st in moving])
    assert s["shortcut_unsafe_fraction"] == pytest.approx(unsafe, abs=1e-12)
    c = [v_S / st.v_max[st.worst] for st in moving]
    assert s["shortcut_ratio"]["min"] == pytest.approx(min(c), rel=1e-9)
    assert s["shortcut_ratio"]["max"] == pytest.approx(max(c), rel=1e-9)
    return s
