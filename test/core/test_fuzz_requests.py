"""Property-based fuzzing of joint_states vectors and service-request arguments at the core
(hypothesis; derandomized, fixed example counts).

* ``vector_from_names`` (what the node does with every sensor_msgs/JointState and every
  service request's joint_names / values): random name lists (the model's joints, mimic
  joints, unknown and odd unicode names, duplicates, omissions, any order) with random
  values (NaN, inf, huge, tiny). The outcome is predicted by an oracle written here from
  the documented contract: the vector in q order, or an InputError whose message names
  the culprit (the field, the missing / duplicate / unknown joint, the non-finite joint).
* The request-level core calls (inverse / forward dynamics, gravity, M, compute_all at a
  frame, with_payload) with random finite and non-finite numbers, huge values and random
  frame names: finite answers, or one of our errors (ManipDynamicsError). Never NaN, never
  a raw exception.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from manip_dynamics import InputError, ManipDynamicsError, RobotModel, robots

from .test_fuzz_urdf import FUZZ, SEEDS

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    MODELS = {"panda": RobotModel.from_urdf_file(robots.path("panda")),
              "panda_mimic": RobotModel.from_urdf_string(SEEDS["panda_mimic"])}

NUMBERS = st.one_of(st.floats(-10, 10), st.sampled_from(
    [math.nan, math.inf, -math.inf, 1e308, -1e308, 1e154, 1e-320, 0.0]), st.floats())
ODD = ["", " ", "panda_joint", "PANDA_JOINT1", "panda_joint1 ", "\u540d", "\U0001f916",
       "a\ud800", "\x00"]


def oracle(model, names, values, allow_extra):
    """(vector, None) or (None, [words the InputError message must contain])."""
    if len(values) != len(names):
        return None, [f"{len(names)} names but {len(values)} values"]
    dups = [n for i, n in enumerate(names) if n in names[:i]]
    if dups:
        return None, ["duplicate", repr(dups[0])]
    missing = [j for j in model.joint_names if j not in names]
    if missing:
        return None, ["missing", repr(missing[0])]
    if not allow_extra:
        unknown = [n for n in names if n not in model._s.full_joint_names]
        if unknown:
            return None, ["unknown"]
    out = np.array([values[names.index(j)] for j in model.joint_names], dtype=float)
    bad = [j for j, v in zip(model.joint_names, out) if not math.isfinite(v)]
    if bad:
        return None, [repr(bad[0]), "non-finite"]
    return out, None


@st.composite
def joint_states(draw):
    key = draw(st.sampled_from(sorted(MODELS)))
    model = MODELS[key]
    pool = list(model._s.full_joint_names) + ODD
    names = draw(st.one_of(
        st.permutations(list(model.joint_names)),                    # all, any order
        st.lists(st.sampled_from(pool), max_size=12),                # anything
        st.permutations(list(model._s.full_joint_names))))           # with mimic joints
    if draw(st.booleans()) and names:                                 # one duplicated
        names = list(names) + [draw(st.sampled_from(list(names)))]
    count = len(names) + draw(st.sampled_from([0, 0, 0, -1, 1]))
    values = draw(st.lists(NUMBERS, min_size=max(count, 0), max_size=max(count, 0)))
    return key, list(names), values, draw(st.booleans())


@settings(FUZZ, max_examples=400)
@given(joint_states())
def test_vector_from_names_matches_the_contract(case):
    key, names, values, allow_extra = case
    model = MODELS[key]
    expected, words = oracle(model, names, values, allow_extra)
    try:
        got = model.vector_from_names(names, values, field="position", allow_extra=allow_extra)
    except InputError as exc:
        assert expected is None, f"refused a valid joint state: {exc}"
        assert str(exc).startswith("position:"), str(exc)
        for w in words:
            assert w in str(exc), (w, str(exc))
        return
    assert expected is not None, f"accepted {names} {values}; expected an error naming {words}"
    np.testing.assert_array_equal(got, expected)


@st.composite
def requests(draw):
    key = draw(st.sampled_from(sorted(MODELS)))
    n = MODELS[key].n
    size = draw(st.sampled_from([n, n, n, n - 1, n + 1, 0]))
    vec = st.lists(NUMBERS, min_size=size, max_size=size)
    frame = draw(st.one_of(st.sampled_from(MODELS[key].frame_names), st.sampled_from(ODD)))
    payload = (draw(st.one_of(st.floats(0, 10), NUMBERS)),
               draw(st.lists(NUMBERS, min_size=3, max_size=3)),
               np.diag(draw(st.lists(st.one_of(st.floats(0, 1), NUMBERS), min_size=3,
                                     max_size=3))))
    return key, draw(vec), draw(vec), draw(vec), frame, payload, draw(st.booleans())


@settings(FUZZ, max_examples=300)
@given(requests())
def test_request_level_calls_answer_or_refuse(case):
    """Each call: a finite answer or our error; compute_all may hold only the documented
    +inf (condition number)."""
    key, q, qd, tau, frame, (mass, com, inertia), linear_only = case
    model = MODELS[key]
    calls = {
        "inverse_dynamics": lambda: model.inverse_dynamics(q, qd, tau, friction=True),
        "forward_dynamics": lambda: model.forward_dynamics(q, qd, tau),
        "gravity_torques": lambda: model.gravity_torques(q),
        "mass_matrix": lambda: model.mass_matrix(q),
        "effective_inertia": lambda: model.effective_inertia(q, frame, linear_only=linear_only,
                                                             damping=1e-3),
        "payload_gravity": lambda: model.with_payload(frame, mass, com, inertia)
        .gravity_torques(q),
    }
    for name, call in calls.items():
        try:
            out = np.asarray(call(), dtype=float)
        except ManipDynamicsError as exc:
            assert str(exc).strip(), name
            continue
        assert np.isfinite(out).all(), f"{name} returned {out}"
    try:
        t = model.compute_all(q, qd, frame, linear_only=linear_only, damping=1e-3)
    except ManipDynamicsError:
        return
    for field in ("g", "c", "M", "J", "A", "Lambda"):
        assert np.isfinite(getattr(t, field)).all(), field
    assert not math.isnan(float(t.condition_number))
