"""Property-based fuzzing of the URDF parser (hypothesis; derandomized, fixed example counts).

Every outcome must be one of:
* a model that is right: its terms at a state are finite (or the call raises our
  NonFiniteResultError / SingularConfigurationError), and where the mutation touched only
  what the parser ignores, or where Pinocchio also loads the description, the numbers are
  the reference's (the unmutated model, Pinocchio);
* one of our errors (a ManipDynamicsError subclass) with a message; where the mutation put
  a non-number into a numeric attribute, the message names the link or joint holding it.
Never a raw exception, a NaN, a hang (pytest-timeout) or a crash.

Inputs: real URDFs (the package's Panda and 2R arm, example-robot-data's UR5 and Panda
with its mimic finger) mutated 1-3 times (elements deleted, duplicated, swapped;
attributes deleted, swapped, set to NaN / inf / huge / empty / non-numbers; unknown joint
types; names set to odd unicode, lone surrogates, existing names (duplicates, cycles,
dangling references)), serialized and possibly truncated; generated trees (random parents,
types, mimic references, masses and inertias, long chains and long mimic chains).

Cases run and what they found are stated in docs/design.md ("Fuzzing").
"""
from __future__ import annotations

import copy
import math
import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from manip_dynamics import ManipDynamicsError, RobotModel, robots

from .test_pinocchio import ERD, PinocchioReference

FUZZ = settings(derandomize=True, deadline=None, database=None, print_blob=False,
                suppress_health_check=list(HealthCheck))


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


SEEDS = {
    "panda": _read(robots.path("panda")),
    "planar_2r": _read(robots.path("planar_2r")),
    "ur5": _read(os.path.join(ERD, "ur_description", "urdf", "ur5_robot.urdf")),
    "panda_mimic": _read(os.path.join(ERD, "panda_description", "urdf", "panda.urdf")),
}
NUMERIC = {"xyz", "rpy", "value", "ixx", "ixy", "ixz", "iyy", "iyz", "izz", "lower", "upper",
           "effort", "velocity", "damping", "friction", "multiplier", "offset"}
NOT_NUMBERS = ["nan", "NaN", "inf", "-inf", "+Infinity", "1e999", "", " ", "abc", "0x10",
               "1,5", "${pi}", "$(arg x)", "1..2", "\u0663"]
ODD_NUMBERS = ["1e308", "-1e308", "1e-320", "-0", "1e154", "-1e154", "0", "-1", "1e20"]
ODD_NAMES = ["", " ", "\u202edlrow", "\u00e9l\u00e9ment", "\u540d\u524d", "a\ud800b",
             "\udfff", "tab\tname", "new\nline", "x" * 2000, "<&>\"'", "\U0001f916",
             "\u0000", "\x07bell"]
JOINT_TYPES = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "ball",
               "", "REVOLUTE", "screw", "revolute "]
COUNTS = {}          # test name -> examples run (printed by test_zz_report_counts)


def _count(name):
    COUNTS[name] = COUNTS.get(name, 0) + 1


def _owner(tree, el):
    """The name of the <link> or <joint> holding ``el`` (el itself if it is one)."""
    parents = {c: p for p in tree.iter() for c in p}
    while el is not None and el.tag not in ("link", "joint"):
        el = parents.get(el)
    return None if el is None else el.get("name")


def load(xml):
    """(model or None, our error or None): anything else escapes and fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return RobotModel.from_urdf_string(xml), None
        except ManipDynamicsError as exc:
            assert str(exc).strip(), f"{type(exc).__name__} without a message"
            return None, exc


def state(model, seed=0):
    """A state inside the limits (+-pi where unlimited)."""
    rng = np.random.default_rng(seed)
    lo = np.maximum(np.asarray(model.position_lower), -math.pi)
    hi = np.minimum(np.asarray(model.position_upper), math.pi)
    return rng.uniform(lo, hi), rng.normal(0.0, 1.0, model.n)


def check_model(model):
    """Every term at a state is finite, or raises our error; M is symmetric."""
    q, qd = state(model)
    for name, call in (("g", lambda: model.gravity_torques(q)),
                       ("M", lambda: model.mass_matrix(q)),
                       ("C qd", lambda: model.coriolis_torques(q, qd)),
                       ("qdd", lambda: model.forward_dynamics(q, qd, np.zeros(model.n))),
                       ("all", lambda: model.compute_all(q, qd, model.default_tip,
                                                         damping=1e-3).Lambda)):
        try:
            out = np.asarray(call())
        except ManipDynamicsError:
            continue
        assert np.isfinite(out).all(), f"{name} holds NaN/inf: {out}"
        if name == "M":
            scale = max(1.0, np.abs(out).max(initial=0.0))        # n = 0: M is 0 x 0
            np.testing.assert_allclose(out, out.T, atol=1e-12 * scale)


def same_dynamics(a, b):
    q, qd = state(a, seed=5)
    np.testing.assert_allclose(a.mass_matrix(q), b.mass_matrix(q), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.gravity_torques(q), b.gravity_torques(q), rtol=1e-12,
                               atol=1e-12)


# --------------------------------------------------------------------------- mutations
@st.composite
def mutated(draw):
    """(seed name, mutated XML text, [descriptions of the mutations])."""
    seed = draw(st.sampled_from(sorted(SEEDS)))
    tree = ET.fromstring(SEEDS[seed])
    done = []
    for _ in range(draw(st.integers(1, 3))):
        done.append(draw(st.sampled_from(MUTATIONS))(draw, tree))
    text = ET.tostring(tree, encoding="unicode")
    if draw(st.integers(0, 9)) == 0:
        cut = draw(st.integers(0, len(text) - 1))
        text, done = text[:cut], done + [f"truncated at {cut}"]
    return seed, text, done


def _pick(draw, tree, cond=lambda e: True):
    els = [e for e in tree.iter() if e is not tree and cond(e)]
    return draw(st.sampled_from(els)) if els else None


def _parent_of(tree, el):
    return next(p for p in tree.iter() if el in list(p))


def m_delete(draw, tree):
    el = _pick(draw, tree)
    if el is not None:
        _parent_of(tree, el).remove(el)
    return f"deleted <{getattr(el, 'tag', None)}>"


def m_duplicate(draw, tree):
    el = _pick(draw, tree)
    if el is not None:
        p = _parent_of(tree, el)
        p.insert(list(p).index(el), copy.deepcopy(el))
    return f"duplicated <{getattr(el, 'tag', None)}>"


def m_swap_elements(draw, tree):
    kids = list(tree)
    i, j = draw(st.integers(0, len(kids) - 1)), draw(st.integers(0, len(kids) - 1))
    kids[i], kids[j] = kids[j], kids[i]
    tree[:] = kids
    return f"swapped top-level elements {i}, {j}"


def m_delete_attribute(draw, tree):
    el = _pick(draw, tree, lambda e: len(e.attrib) > 0)
    if el is not None:
        del el.attrib[draw(st.sampled_from(sorted(el.attrib)))]
    return "deleted an attribute"


def m_swap_attributes(draw, tree):
    a = _pick(draw, tree, lambda e: len(e.attrib) > 0)
    if a is None:
        return "no attribute"
    key = draw(st.sampled_from(sorted(a.attrib)))
    b = _pick(draw, tree, lambda e: key in e.attrib)
    a.attrib[key], b.attrib[key] = b.attrib[key], a.attrib[key]
    return f"swapped {key}"


def m_number(draw, tree):
    el = _pick(draw, tree, lambda e: bool(NUMERIC & set(e.attrib)))
    if el is None:
        return "no number"
    key = draw(st.sampled_from(sorted(NUMERIC & set(el.attrib))))
    value = draw(st.one_of(st.sampled_from(NOT_NUMBERS + ODD_NUMBERS),
                           st.floats().map(repr)))
    el.set(key, value)
    return f"{key}={value!r}"


def m_joint_type(draw, tree):
    el = _pick(draw, tree, lambda e: e.tag == "joint")
    if el is not None:
        el.set("type", draw(st.sampled_from(JOINT_TYPES)))
    return "joint type"


def m_name(draw, tree):
    el = _pick(draw, tree, lambda e: "name" in e.attrib or "link" in e.attrib
               or (e.tag == "mimic" and "joint" in e.attrib))
    if el is None:
        return "no name"
    key = "name" if "name" in el.attrib else ("link" if "link" in el.attrib else "joint")
    existing = sorted({e.get(key) for e in tree.iter() if e.get(key)})
    el.set(key, draw(st.one_of(st.sampled_from(ODD_NAMES), st.sampled_from(existing),
                               st.text(max_size=8))))
    return f"renamed {key}"


MUTATIONS = [m_delete, m_duplicate, m_swap_elements, m_delete_attribute, m_swap_attributes,
             m_number, m_joint_type, m_name]


@settings(FUZZ, max_examples=400)
@given(mutated())
def test_mutated_vendor_urdfs(case):
    seed, text, _ = case
    _count("mutated vendor URDFs")
    model, _ = load(text)
    if model is not None:
        check_model(model)


@settings(FUZZ, max_examples=200)
@given(st.data())
def test_non_numbers_are_refused_naming_the_element(data):
    """One numeric attribute set to a non-number (NaN, inf, empty, text, xacro): the file is
    refused naming the link or joint -- unless the parser ignores that element (a visual,
    a fixed joint's limit...), and then the model equals the unmutated one."""
    _count("non-numbers in numeric attributes")
    seed = data.draw(st.sampled_from(sorted(SEEDS)))
    tree = ET.fromstring(SEEDS[seed])
    el = data.draw(st.sampled_from([e for e in tree.iter() if NUMERIC & set(e.attrib)]))
    key = data.draw(st.sampled_from(sorted(NUMERIC & set(el.attrib))))
    el.set(key, data.draw(st.sampled_from(NOT_NUMBERS)))
    model, error = load(ET.tostring(tree, encoding="unicode"))
    if error is not None:
        assert f"'{_owner(tree, el)}'" in str(error), (key, el.get(key), str(error))
    else:
        same_dynamics(model, load(SEEDS[seed])[0])


@settings(FUZZ, max_examples=150)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=3, max_size=3),
       st.sampled_from(["link", "joint"]))
def test_odd_unicode_names(names, kind):
    """Any text as link or joint names of a 3-joint chain: loaded under exactly those names,
    or refused (duplicates, characters XML or UTF-8 cannot hold) with our error."""
    _count("odd unicode names")
    links = ["base"] + (names if kind == "link" else ["l1", "l2", "l3"])
    joints = names if kind == "joint" else ["j1", "j2", "j3"]
    robot = ET.Element("robot", name="r")
    for lk in links:
        inertial = ET.SubElement(ET.SubElement(robot, "link", name=lk), "inertial")
        ET.SubElement(inertial, "mass", value="1")
        ET.SubElement(inertial, "inertia", ixx="0.1", iyy="0.1", izz="0.1", ixy="0", ixz="0",
                      iyz="0")
    for i, j in enumerate(joints):
        el = ET.SubElement(robot, "joint", name=j, type="revolute")
        ET.SubElement(el, "parent", link=links[i])
        ET.SubElement(el, "child", link=links[i + 1])
        ET.SubElement(el, "origin", xyz="0.3 0 0")
        ET.SubElement(el, "axis", xyz="0 1 0")
    model, error = load(ET.tostring(robot, encoding="unicode"))
    if model is not None:
        assert model.joint_names == tuple(joints)
        assert model.frame_names == tuple(links)
        check_model(model)
    else:   # refused only for a reason: duplicate names, characters XML / UTF-8 cannot hold
        assert (len(set(links)) < len(links) or len(set(joints)) < len(joints)
                or any(_xml_unfit(c) for c in "".join(names))), str(error)


def _xml_unfit(c):
    o = ord(c)
    return (o < 32 and c not in "\t\n\r") or 0xD800 <= o <= 0xDFFF or o in (0xFFFE, 0xFFFF)


# --------------------------------------------------------------------------- generated trees
@st.composite
def trees(draw):
    """A generated description: n links, each joint's parent any link (cycles possible),
    random types, mimic references (chains and cycles possible), masses and inertias
    (negative and non-PSD possible)."""
    n = draw(st.integers(1, 40))
    robot = ET.Element("robot", name="g")
    ET.SubElement(robot, "link", name="l0")
    for i in range(1, n + 1):
        link = ET.SubElement(robot, "link", name=f"l{i}")
        if draw(st.integers(0, 5)):
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "origin", xyz=f"{draw(st.floats(-1, 1))} 0 0.1")
            ET.SubElement(inertial, "mass", value=repr(draw(st.sampled_from(
                [1.0, 0.5, 0.0, 1e-6, -1.0, 2.0]))))
            d = draw(st.sampled_from([(0.1, 0.1, 0.1), (0.01, 0.02, 0.025),
                                      (-1e-7, 0.1, 0.1), (-0.05, 0.1, 0.1), (0, 0, 0)]))
            ET.SubElement(inertial, "inertia", ixx=repr(d[0]), iyy=repr(d[1]), izz=repr(d[2]),
                          ixy="0", ixz="0", iyz="0")
        parent = draw(st.integers(0, n)) if draw(st.integers(0, 9)) == 0 else draw(
            st.integers(max(0, i - 3), i - 1))
        j = ET.SubElement(robot, "joint", name=f"j{i}", type=draw(st.sampled_from(
            ["revolute", "continuous", "prismatic", "fixed", "revolute", "revolute"])))
        ET.SubElement(j, "parent", link=f"l{parent}")
        ET.SubElement(j, "child", link=f"l{i}")
        ET.SubElement(j, "origin", xyz="0.2 0 0", rpy=f"{draw(st.floats(-3, 3))} 0 0")
        ET.SubElement(j, "axis", xyz=draw(st.sampled_from(["0 0 1", "1 0 0", "0 1 1"])))
        ET.SubElement(j, "limit", lower="-2", upper="2", effort="10", velocity="1")
        if i > 1 and draw(st.integers(0, 3)) == 0:
            ET.SubElement(j, "mimic", joint=f"j{draw(st.integers(1, n))}",
                          multiplier=repr(draw(st.floats(-2, 2))), offset="0.1")
    return ET.tostring(robot, encoding="unicode")


def pinocchio_loads(xml):
    try:
        model = pin.buildModelFromXML(xml)
    except Exception:                       # noqa: BLE001 (Pinocchio's refusals)
        return False
    return model.nv > 0 and all(model.joints[j].nv == 1 for j in range(1, model.njoints))


@settings(FUZZ, max_examples=200)
@given(trees())
def test_generated_trees_are_refused_or_agree_with_pinocchio(xml):
    """Generated trees: our error, or a model; where Pinocchio loads the same text, M and g
    agree with it (1e-9 relative) at a state."""
    _count("generated trees")
    model, _ = load(xml)
    if model is None:
        return
    check_model(model)
    if model.n and pinocchio_loads(xml):
        ref = PinocchioReference(xml)
        q, _ = state(model, seed=2)
        M = ref.mass_matrix(q)
        np.testing.assert_allclose(model.mass_matrix(q), M, rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(M).max()))
        g = ref.gravity(q)
        np.testing.assert_allclose(model.gravity_torques(q), g, rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(g).max()))


@settings(FUZZ, max_examples=20)
@given(st.integers(500, 3000), st.booleans(), st.sampled_from(["tail", "head", "none"]))
def test_long_chains_and_mimic_chains(n, mimic, cycle):
    """Chains of 500-3000 links (with every joint mimicking the previous one, or not), with
    a cycle closed at the end, at the start, or none: no RecursionError, our error or a
    model with the right number of coordinates."""
    _count("long chains")
    parts = ['<robot name="c"><link name="l0"/>']
    for i in range(1, n + 1):
        parts.append(f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="1e-3" '
                     'iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial></link>')
        parent = f"l{n}" if (cycle == "head" and i == 1) else f"l{i - 1}"
        mim = f'<mimic joint="j{i - 1 if i > 1 else n}"/>' if mimic and (
            i > 1 or cycle == "tail") else ""
        parts.append(f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child '
                     f'link="l{i}"/><origin xyz="0.01 0 0"/><axis xyz="0 0 1"/>{mim}</joint>')
    model, error = load("".join(parts) + "</robot>")
    if cycle == "none":
        assert model is not None and model.n == (1 if mimic else n)
    elif cycle == "head":
        assert "cycle" in str(error)
    elif mimic:
        assert "cyclic <mimic>" in str(error)


def test_zz_report_counts(capsys):
    """Prints how many cases each fuzz test ran (the run above, in this process)."""
    with capsys.disabled():
        print("\nfuzz cases run:", COUNTS)
    assert not COUNTS or all(v > 0 for v in COUNTS.values())
