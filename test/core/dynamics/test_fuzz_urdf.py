"""Property-based fuzzing of the URDF parser (hypothesis; derandomized, fixed example counts).

Every outcome must be one of:
* a model that is right: its terms at a state are finite (or the call raises our
  NonFiniteResultError / SingularConfigurationError), and wherever Pinocchio also builds a
  model from the same text, g(q) and M(q) equal Pinocchio's (joints matched by NAME,
  1e-8 relative to max(1, |Pinocchio's value|)); where the mutation touched only what the
  parser ignores, the numbers are the unmutated model's;
* one of our errors (a ManipDynamicsError subclass) whose message names a link, joint or
  attribute present in the text (the line and column for text that is not XML).
Where Pinocchio's URDF reader (urdfdom) logs an error and builds a model anyway (a link
whose <inertial> it cannot read loses it), we refuse; the only exception is an error about
a <visual> / <collision> element, which neither dynamics model reads.
Never a raw exception, a NaN, a hang (pytest-timeout) or a crash.

Inputs: real URDFs (the package's Panda and 2R arm, example-robot-data's UR5 and Panda
with its mimic finger) mutated 1-3 times (elements deleted, duplicated, swapped;
attributes deleted, swapped, set to NaN / inf / huge / empty / non-numbers; unknown joint
types; names set to odd unicode, lone surrogates, existing names (duplicates, cycles,
dangling references)), serialized and possibly truncated; generated trees (random parents,
types, mimic references, masses and inertias, long chains and long mimic chains).

Each test runs its hypothesis search once and asserts how many cases ran, that each
outcome is a known one, and that each main outcome still occurs at least half as often as
measured (test/core/outcome_counts.py: a derandomized search shifts a little when the code
it runs changes); the attribute deletions (no hypothesis) assert their counts exactly.
Cases run and what they found are stated in docs/design.md ("Fuzzing").
"""
from __future__ import annotations

import copy
import html
import math
import os
import re
import sys
import tempfile
import warnings
import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from manip_dynamics import ManipDynamicsError, RobotModel, robots

from .test_pinocchio import ERD, PinocchioReference, symmetrize_upper
from ..outcome_counts import assert_outcomes

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
TALLY = Counter()    # outcomes of the hypothesis search running now (reset by _search)
TO_PINOCCHIO = 1e-8  # g and M against Pinocchio, relative to max(1, |Pinocchio's value|)


def _search(given_test):
    """Run a hypothesis-decorated function once; the Counter of what its cases saw."""
    TALLY.clear()
    given_test()
    out = Counter(TALLY)
    print(f"\n{given_test.__name__}: {dict(out)}")
    return out


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


def pinocchio_build(xml, mimic=False):
    """(Pinocchio's model or None if it refuses, the error lines its URDF reader logged and
    the first line of the exception it raised).

    urdfdom logs on file descriptor 2 (C++), so fd 2 is redirected around the call."""
    sys.stderr.flush()
    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = pin.buildModelFromXML(xml, mimic=mimic)
        except Exception as exc:            # noqa: BLE001 (Pinocchio's refusals)
            model, raised = None, [f"Error: {str(exc).splitlines()[0] if str(exc) else exc!r}"]
        else:
            raised = []
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        lines = log.read().decode("utf-8", "replace").splitlines()
    return model, [ln for ln in lines if ln.startswith("Error")] + raised


def _ignored_by_both(logged):
    """urdfdom's logged errors end in "Could not parse <element> element for Link [...]";
    True if every such element is a <visual> or <collision> (read by neither model)."""
    dropped = [ln for ln in logged if "Could not parse" in ln]
    return bool(dropped) and all(re.search(r"Could not parse (visual|collision) element", ln)
                                 for ln in dropped)


def pinocchio_terms(pm, model, q):
    """Pinocchio's g(q) and M(q) in OUR joint order, its joints matched by name.

    ``pm`` is built with mimic joints as mimic joints (nq = nv = 0); a continuous joint's
    angle becomes Pinocchio's (cos, sin) pair."""
    independent = [pm.names[j] for j in range(1, pm.njoints)
                   if pm.joints[j].shortname() != "JointModelMimic"]
    assert sorted(independent) == sorted(model.joint_names), (independent, model.joint_names)
    q_pin, cols = np.zeros(pm.nq), []
    for name, angle in zip(model.joint_names, q):
        jm = pm.joints[pm.getJointId(name)]
        assert jm.nv == 1, (name, jm.shortname())
        q_pin[jm.idx_q:jm.idx_q + jm.nq] = (math.cos(angle), math.sin(angle))[:jm.nq] \
            if jm.nq == 2 else angle
        cols.append(jm.idx_v)
    data = pm.createData()
    g = pin.computeGeneralizedGravity(pm, data, q_pin)[cols]
    M = symmetrize_upper(pin.crba(pm, data, q_pin))[np.ix_(cols, cols)]
    return g, M


def agrees_with_pinocchio(model, pm):
    """g and M at a state within the limits equal Pinocchio's (joints matched by name)."""
    q, _ = state(model, seed=3)
    g, M = pinocchio_terms(pm, model, q)
    for ours, ref, what in ((model.gravity_torques(q), g, "g"), (model.mass_matrix(q), M, "M")):
        np.testing.assert_allclose(ours, ref, rtol=0, atol=TO_PINOCCHIO * max(
            1.0, np.abs(ref).max(initial=0.0)), err_msg=f"{what} differs from Pinocchio's")


def _names_in(text):
    """Link and joint names of ``text`` (its name / link / joint attributes), and its
    attribute keys; a regular expression reads text that is not well-formed XML."""
    try:
        els = list(ET.fromstring(text).iter())
        names = {v for e in els for k, v in e.attrib.items() if k in ("name", "link", "joint")}
        keys = {k for e in els for k in e.attrib}
    except (ET.ParseError, UnicodeEncodeError):
        names = {html.unescape(v) for v in re.findall(r'\b(?:name|link|joint)="([^"]*)"', text)}
        keys = set(re.findall(r"\b([A-Za-z_]+)=\"", text))
    return names, keys


def names_the_culprit(error, text):
    """Our refusal names a link or joint of the text (quoted, or a word of a list), an
    attribute the URDF spec requires or the text holds, or, for text that is not XML (or
    holds a lone surrogate), the line."""
    msg = str(error)
    if msg.startswith("invalid URDF"):         # not XML, or a character UTF-8 cannot hold
        return re.search(r"line \d+", msg) is not None
    names, keys = _names_in(text)
    if any(f"'{n}'" in msg or repr(n) in msg for n in names if n.strip()):
        return True
    if any(re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", msg) for n in names if len(n) >= 3):
        return True                          # "several root links: a, b", "cycle a -> b"
    attrs = keys | REQUIRED_ATTRIBUTES
    return any(re.search(rf"\b(attribute {k}\b|{k}=|{k} attribute|<\w+ {k}=)", msg)
               for k in attrs)


REQUIRED_ATTRIBUTES = {"name", "type", "link", "joint", "xyz", "value", "effort", "velocity",
                       "ixx", "ixy", "ixz", "iyy", "iyz", "izz"}


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
def _mutated_vendor_urdf(case):
    _, text, _ = case
    TALLY["cases"] += 1
    model, error = load(text)
    pm, logged = pinocchio_build(text, mimic="<mimic" in text)
    if error is not None:
        TALLY["refused, Pinocchio " + ("too" if pm is None else "builds a model")] += 1
        assert names_the_culprit(error, text), str(error)
        return
    check_model(model)
    if pm is None:
        why = re.sub(r"\[[^\]]*\]|From file: \S*/", "", logged[0].split(":", 1)[1].strip())
        TALLY[f"loaded, Pinocchio refuses: {why}"] += 1
        return
    assert not logged or _ignored_by_both(logged), f"Pinocchio logged {logged}; we loaded"
    TALLY["loaded, Pinocchio logged a visual/collision error"] += bool(logged)
    agrees_with_pinocchio(model, pm)
    TALLY["loaded, equal to Pinocchio's"] += 1


def test_mutated_vendor_urdfs():
    assert_outcomes(_search(_mutated_vendor_urdf), MUTATED_OUTCOMES)


@settings(FUZZ, max_examples=200)
@given(st.data())
def _non_number(data):
    """One numeric attribute set to a non-number (NaN, inf, empty, text, xacro): the file is
    refused naming the link or joint -- unless the parser ignores that element (a visual,
    a fixed joint's limit...), and then the model equals the unmutated one."""
    TALLY["cases"] += 1
    seed = data.draw(st.sampled_from(sorted(SEEDS)))
    tree = ET.fromstring(SEEDS[seed])
    el = data.draw(st.sampled_from([e for e in tree.iter() if NUMERIC & set(e.attrib)]))
    key = data.draw(st.sampled_from(sorted(NUMERIC & set(el.attrib))))
    el.set(key, data.draw(st.sampled_from(NOT_NUMBERS)))
    text = ET.tostring(tree, encoding="unicode")
    model, error = load(text)
    if error is not None:
        TALLY["refused naming the element"] += 1
        assert f"'{_owner(tree, el)}'" in str(error), (key, el.get(key), str(error))
        return
    pm, logged = pinocchio_build(text, mimic="<mimic" in text)
    assert pm is None or not logged or _ignored_by_both(logged), logged
    TALLY["ignored, model unchanged"] += 1
    same_dynamics(model, load(SEEDS[seed])[0])


def test_non_numbers_are_refused_naming_the_element():
    assert_outcomes(_search(_non_number), NON_NUMBER_OUTCOMES)


# Attributes the URDF spec requires (urdfdom refuses the file, or drops the element, without
# them): never given a default. The others are optional with the spec's default.
REQUIRED = {("link", "name"), ("joint", "name"), ("joint", "type"), ("parent", "link"),
            ("child", "link"), ("axis", "xyz"), ("mass", "value"), ("mimic", "joint"),
            ("limit", "effort"), ("limit", "velocity")} | {
                ("inertia", k) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
READ = {"link", "joint", "inertial", "origin", "mass", "inertia", "parent", "child", "axis",
        "limit", "dynamics", "mimic"}            # the elements the dynamics read


def _deletions(seed):
    """(element index in document order, attribute): each kind of attribute the parser reads
    in ``seed`` once -- kinds told apart by the holding top-level <link> / <joint> (its
    type, whether it mimics), the element, its parent's tag and the attribute; the last
    occurrence of each kind (deepest in the chain). <visual> and <collision> are not read."""
    tree = ET.fromstring(SEEDS[seed])
    index = {el: i for i, el in enumerate(tree.iter())}
    last = {}
    for holder in tree:
        if holder.tag not in ("link", "joint"):
            continue
        kind = (holder.tag, holder.get("type"), holder.find("mimic") is not None)
        stack = [(holder, None)]
        while stack:
            el, parent = stack.pop()
            for key in el.attrib:
                last[kind + (el.tag, parent, key)] = (index[el], key)
            stack.extend((c, el.tag) for c in el if c.tag in READ)
    return sorted(last.values())


def _delete_one(seed, i, key):
    """(text without attribute ``key`` of element ``i``, the <link>/<joint> holding it
    (None for the link / joint's own name), whether the spec requires the attribute where
    the parser reads it: a fixed joint's <axis>, <limit>, <dynamics>, <mimic> are unread)."""
    tree = ET.fromstring(SEEDS[seed])
    el = list(tree.iter())[i]
    holder = next(h for h in tree if h.tag in ("link", "joint") and el in list(h.iter()))
    unread = holder.get("type") == "fixed" and el.tag in ("axis", "limit", "dynamics", "mimic")
    del el.attrib[key]
    return (ET.tostring(tree, encoding="unicode"), holder.get("name"),
            (el.tag, key) in REQUIRED and not unread)


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_each_attribute_deleted_alone(seed):
    """Each kind of attribute the parser reads, deleted alone: a required one is refused
    naming the link / joint holding it and the attribute; an optional one takes the spec's
    default, and the model equals Pinocchio's wherever Pinocchio builds one (and Pinocchio's
    reader has not logged an error: where it has, we refuse)."""
    tally = Counter()
    for i, key in _deletions(seed):
        text, holder, required = _delete_one(seed, i, key)
        model, error = load(text)
        if required:
            assert error is not None, f"loaded without required {key} of '{holder}'"
            assert key in str(error), str(error)
            assert holder is None or f"'{holder}'" in str(error), str(error)
            tally["required, refused"] += 1
            continue
        assert error is None, f"optional {key} of '{holder}' deleted: {error}"
        pm, logged = pinocchio_build(text, mimic="<mimic" in text)
        if pm is None:
            tally["optional, loaded; Pinocchio refuses"] += 1
            continue
        assert not logged or _ignored_by_both(logged), logged
        agrees_with_pinocchio(model, pm)
        tally["optional, loaded, equal to Pinocchio's"] += 1
    print(f"\n{seed}: {dict(tally)}")
    assert tally == Counter(DELETIONS[seed])


@settings(FUZZ, max_examples=150)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=3, max_size=3),
       st.sampled_from(["link", "joint"]))
def _odd_names(names, kind):
    """Any text as link or joint names of a 3-joint chain: loaded under exactly those names,
    or refused (duplicates, characters XML or UTF-8 cannot hold) with our error."""
    TALLY["cases"] += 1
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
    TALLY["loaded" if model is not None else "refused"] += 1
    if model is not None:
        assert model.joint_names == tuple(joints)
        assert model.frame_names == tuple(links)
        check_model(model)
    else:   # refused only for a reason: duplicate names, characters XML / UTF-8 cannot hold
        assert (len(set(links)) < len(links) or len(set(joints)) < len(joints)
                or any(_xml_unfit(c) for c in "".join(names))), str(error)


def test_odd_unicode_names():
    assert_outcomes(_search(_odd_names), ODD_NAME_OUTCOMES)


def _xml_unfit(c):
    o = ord(c)
    return (o < 32 and c not in "\t\n\r") or 0xD800 <= o <= 0xDFFF or o in (0xFFFE, 0xFFFF)


# --------------------------------------------------------------------------- generated trees
@st.composite
def trees(draw):
    """A generated description: n links, random types and axes. Half the trees are sound
    (each joint's parent an earlier link, masses >= 0, inertias positive semi-definite up to
    a negligible -1e-7, mimic references to earlier moving joints): they load and are
    compared with Pinocchio. The others may hold anything: any parent (cycles), mimic
    references to any joint (fixed ones, chains, cycles), negative masses and moments."""
    sound = draw(st.booleans())
    n = draw(st.integers(1, 40))
    robot = ET.Element("robot", name="g")
    ET.SubElement(robot, "link", name="l0")
    moving = []
    for i in range(1, n + 1):
        link = ET.SubElement(robot, "link", name=f"l{i}")
        if draw(st.integers(0, 5)):
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "origin", xyz=f"{draw(st.floats(-1, 1))} 0 0.1")
            ET.SubElement(inertial, "mass", value=repr(draw(st.sampled_from(
                [1.0, 0.5, 0.0, 1e-6, 2.0] + ([] if sound else [-1.0])))))
            d = draw(st.sampled_from([(0.1, 0.1, 0.1), (0.01, 0.02, 0.025), (-1e-7, 0.1, 0.1),
                                      (0, 0, 0)] + ([] if sound else [(-0.05, 0.1, 0.1)])))
            ET.SubElement(inertial, "inertia", ixx=repr(d[0]), iyy=repr(d[1]), izz=repr(d[2]),
                          ixy="0", ixz="0", iyz="0")
        parent = draw(st.integers(0, n)) if not sound and draw(st.integers(0, 9)) == 0 \
            else draw(st.integers(max(0, i - 3), i - 1))
        jtype = draw(st.sampled_from(["revolute", "continuous", "prismatic", "fixed",
                                      "revolute", "revolute"]))
        j = ET.SubElement(robot, "joint", name=f"j{i}", type=jtype)
        ET.SubElement(j, "parent", link=f"l{parent}")
        ET.SubElement(j, "child", link=f"l{i}")
        ET.SubElement(j, "origin", xyz="0.2 0 0", rpy=f"{draw(st.floats(-3, 3))} 0 0")
        ET.SubElement(j, "axis", xyz=draw(st.sampled_from(["0 0 1", "1 0 0", "0 1 1"])))
        ET.SubElement(j, "limit", lower="-2", upper="2", effort="10", velocity="1")
        targets = moving if sound else [f"j{k}" for k in range(1, n + 1)]
        if i > 1 and targets and (jtype != "fixed" or not sound) and draw(
                st.integers(0, 3)) == 0:
            ET.SubElement(j, "mimic", joint=draw(st.sampled_from(targets)),
                          multiplier=repr(draw(st.floats(-2, 2))), offset="0.1")
        if jtype != "fixed":
            moving.append(f"j{i}")
    return ET.tostring(robot, encoding="unicode")


def pinocchio_loads(xml):
    try:
        model = pin.buildModelFromXML(xml)
    except Exception:                       # noqa: BLE001 (Pinocchio's refusals)
        return False
    return model.nv > 0 and all(model.joints[j].nv == 1 for j in range(1, model.njoints))


@settings(FUZZ, max_examples=200)
@given(trees())
def _generated_tree(xml):
    """Generated trees: our error, or a model; where Pinocchio loads the same text, M and g
    agree with it (1e-9 relative) at a state."""
    TALLY["cases"] += 1
    model, _ = load(xml)
    if model is None:
        TALLY["refused"] += 1
        return
    check_model(model)
    if not (model.n and pinocchio_loads(xml)):
        TALLY["loaded, not compared"] += 1
        return
    ref = PinocchioReference(xml)
    q, _ = state(model, seed=2)
    M = ref.mass_matrix(q)
    np.testing.assert_allclose(model.mass_matrix(q), M, rtol=0,
                               atol=1e-9 * max(1.0, np.abs(M).max()))
    g = ref.gravity(q)
    np.testing.assert_allclose(model.gravity_torques(q), g, rtol=0,
                               atol=1e-9 * max(1.0, np.abs(g).max()))
    TALLY["loaded, equal to Pinocchio's"] += 1


def test_generated_trees_are_refused_or_agree_with_pinocchio():
    assert_outcomes(_search(_generated_tree), GENERATED_OUTCOMES)


@settings(FUZZ, max_examples=20)
@given(st.integers(500, 3000), st.booleans(), st.sampled_from(["tail", "head", "none"]))
def _long_chain(n, mimic, cycle):
    """Chains of 500-3000 links (with every joint mimicking the previous one, or not), with
    a cycle closed at the end, at the start, or none: no RecursionError, our error or a
    model with the right number of coordinates."""
    TALLY["cases"] += 1
    TALLY[f"cycle {cycle}" + (", mimic" if mimic else "")] += 1
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


def test_long_chains_and_mimic_chains():
    assert_outcomes(_search(_long_chain), LONG_CHAIN_OUTCOMES)


# What each search saw (measured; hypothesis pinned in constraints.txt, derandomized: the
# draws depend on each function's source, so editing one changes its counts).
MUTATED_OUTCOMES = {
    "cases": 400,
    "refused, Pinocchio too": 222,
    "refused, Pinocchio builds a model": 42,        # mostly a dropped <inertial>: see _search
    "loaded, equal to Pinocchio's": 129,
    "loaded, Pinocchio logged a visual/collision error": 4,     # (also among the 129)
    "loaded, Pinocchio refuses: Joint  is of type REVOLUTE but it does not specify limits": 5,
    "loaded, Pinocchio refuses: Geometry tag contains no child element.": 2,
}
NON_NUMBER_OUTCOMES = {"cases": 200, "refused naming the element": 186,
                       "ignored, model unchanged": 14}
ODD_NAME_OUTCOMES = {"cases": 150, "refused": 141, "loaded": 9}
GENERATED_OUTCOMES = {"cases": 200, "loaded, equal to Pinocchio's": 108, "refused": 92}
LONG_CHAIN_OUTCOMES = {"cases": 20, "cycle none": 3, "cycle head": 2, "cycle head, mimic": 6,
                       "cycle tail": 5, "cycle tail, mimic": 4}
# test_each_attribute_deleted_alone, per seed (no hypothesis: the same cases every run);
# Pinocchio refuses an empty <dynamics/> (the finger joints' only attribute deleted), which
# the spec allows (damping and friction default to 0).
DELETIONS = {
    "panda": {"required, refused": 19, "optional, loaded, equal to Pinocchio's": 10},
    "panda_mimic": {"required, refused": 34, "optional, loaded, equal to Pinocchio's": 22,
                    "optional, loaded; Pinocchio refuses": 2},
    "planar_2r": {"required, refused": 19, "optional, loaded, equal to Pinocchio's": 10},
    "ur5": {"required, refused": 19, "optional, loaded, equal to Pinocchio's": 10},
}


def test_the_docs_state_the_deletion_count_the_test_asserts():
    """README and docs/design.md give the attribute-deletion count that
    test_each_attribute_deleted_alone asserts exactly (they said 154 while it asserted 145)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    total = sum(sum(counts.values()) for counts in DELETIONS.values())
    for doc in ("README.md", os.path.join("docs", "design.md")):
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            text = " ".join(f.read().split())
        assert f"({total} cases" in text, (doc, total)
