"""The parameter-table idiom without ROS: bounds as words and as checks, one source."""
from __future__ import annotations

import math

import numpy as np
import pytest

from manip_dynamics.rules.dynamics_parameters import PARAMETERS, SPECS, check_values
from manip_dynamics.rules.parameter_table import (TYPE_OF_KIND, ParameterValueError,
                                                  ParamSpec, check_table)


@pytest.mark.parametrize("spec, good, bad, words", [
    (ParamSpec("rate", "double", 1.0, "r", low=0.0, low_open=True), [1e-9, 1e9],
     [0.0, -1.0, math.inf, math.nan], ["must be > 0", "must be > 0", "not finite", "not finite"]),
    (ParamSpec("alpha", "double", 0.5, "a", low=0.0, high=1.0), [0.0, 1.0, 0.5],
     [1.5, -0.1], ["must be <= 1", "must be >= 0 (negative)"]),
    (ParamSpec("depth", "integer", 10, "d", low=1), [1, 100], [0], ["must be >= 1"]),
    (ParamSpec("mode", "string", "a", "m", choices=("a", "b")), ["a", "b"], ["c"],
     ["not one of"]),
    (ParamSpec("kp", "double_array", [1.0], "k", low=0.0, min_items=1), [[0.0], [1.0, 2.0]],
     [[], [1.0, -2.0], [math.nan]],
     ["at least 1", "element 1 (-2.0) must be >= 0", "element 0 is nan (must be finite)"]),
])
def test_check_enforces_the_bounds_and_names_the_parameter(spec, good, bad, words):
    for value in good:
        spec.check(value)
    for value, word in zip(bad, words):
        with pytest.raises(ParameterValueError, match=word.replace("(", r"\(").replace(")", r"\)")) as info:
            spec.check(value)
        assert info.value.name == spec.name and str(info.value).startswith(spec.name + ": ")


def test_bounds_in_words_match_the_checks():
    assert ParamSpec("x", "double", 1.0, "", low=0.0, low_open=True).bounds_text() == "> 0, finite"
    assert ParamSpec("x", "double", 0.5, "", low=0.0, high=1.0).bounds_text() == \
        "0 <= value <= 1, finite"
    s = ParamSpec("x", "double_array", [], "", "one per joint", low=0.0)
    assert s.constraints_text() == "each >= 0, finite; one per joint"
    with pytest.raises(ValueError, match="kind"):
        ParamSpec("x", "float", 1.0, "")


def test_the_dynamics_node_table():
    """Every default passes its own table; the kinds map to rcl_interfaces types; bounds
    are declared in the table (not in prose)."""
    defaults = {spec.name: spec.default for spec in PARAMETERS}
    check_table(SPECS, defaults)
    check_values(defaults)
    assert {spec.type for spec in PARAMETERS} <= set(TYPE_OF_KIND.values())
    assert SPECS["damping"].low == 0.0 and SPECS["damping"].low_open
    assert SPECS["markers.alpha"].high == 1.0
    assert SPECS["joint_states_qos.reliability"].choices == ("best_effort", "reliable")
    for name, value, word in [("damping", 0.0, "must be > 0"),
                              ("markers.alpha", 2.0, "must be <= 1"),
                              ("friction.coulomb", [-0.5], "negative"),
                              ("joint_states_qos.reliability", "fast", "not one of")]:
        with pytest.raises(ParameterValueError, match=word):
            check_values(dict(defaults, **{name: value}))


def test_array_lengths_unique_names_and_per_joint_lengths():
    """length (a non-empty array has exactly that many values; empty = unset unless
    min_items), unique names, and per-joint lengths judged only once the joints are known."""
    obstacle = ParamSpec("size", "double_array", [], "s", length=3, low=0.0)
    obstacle.check([])                                   # unset
    obstacle.check([1.0, 2.0, 3.0])
    with pytest.raises(ParameterValueError, match="needs 3 values, got 2"):
        obstacle.check([1.0, 2.0])
    gravity = ParamSpec("g", "double_array", [0.0, 0.0, -9.81], "g", length=3, min_items=3)
    with pytest.raises(ParameterValueError, match="needs 3 values, got 0"):
        gravity.check([])
    names = ParamSpec("joints", "string_array", [], "j", unique=True)
    names.check(["a", "b"])
    for bad, word in [(["a", "b", "a"], "'a' is listed twice"), (["a", ""], "element 1")]:
        with pytest.raises(ParameterValueError, match=word):
            names.check(bad)
    kp = ParamSpec("kp", "double_array", [1.0], "k", min_items=1, per_joint="one_or_each")
    each = ParamSpec("q0", "double_array", [], "q", per_joint="each")
    kp.check([1.0, 2.0, 3.0])                            # joints unknown: not judged
    kp.check([1.0], ["j1", "j2"])
    kp.check([1.0, 2.0], ["j1", "j2"])
    with pytest.raises(ParameterValueError, match=r"expected 1 or 2 values \(joints j1, j2\)"):
        kp.check([1.0, 2.0, 3.0], ["j1", "j2"])
    with pytest.raises(ParameterValueError, match=r"expected 2 values"):
        each.check([1.0], ["j1", "j2"])
    assert kp.joint_values([4.0], ["j1", "j2", "j3"]) == [4.0, 4.0, 4.0]
    assert kp.joint_values([4, 5], ["j1", "j2"]) == [4.0, 5.0]
    assert each.joint_values([], ["j1", "j2"], default=(0.5, 0.25)) == [0.5, 0.25]
    assert each.joint_values([], ["j1", "j2"]) == []
    assert kp.constraints_text() == "at least 1 value, 1 value (all joints) or one per joint"
    with pytest.raises(ValueError, match="per_joint"):
        ParamSpec("x", "double_array", [], "", per_joint="all")


def test_the_simulator_and_controller_tables():
    """All three nodes use the one idiom: every default passes its table; bounds are
    table fields (they become descriptor ranges), not prose."""
    from manip_dynamics.nodes.computed_torque_controller import PARAMETERS as CONTROLLER
    from manip_dynamics.sim.parameters import PARAMETERS as SIMULATOR

    for table in (SIMULATOR, CONTROLLER):
        specs = {spec.name: spec for spec in table}
        assert len(specs) == len(table)
        check_table(specs, {spec.name: spec.default for spec in table}, ["j1", "j2"])
    sim = {spec.name: spec for spec in SIMULATOR}
    assert (sim["publish_rate"].low, sim["publish_rate"].high) == (1e-3, 1e4)
    assert sim["initial_positions"].per_joint == "each" and sim["command_joints"].unique


def test_payload_inertia_parameter_and_core_payload_agree():
    """payload.inertia is judged with the core's own rule and tolerance: on inertias at
    the edge of round-off (negative moments and triangle violations from 1e-16 to 1e-6
    kg m^2, on moments of 1e-3 and of 10 kg m^2) check_values refuses exactly what
    RobotModel.with_payload refuses (before, the parameter allowed max(1e-9, ...) and the
    core 1e-9 relative + 1e-15: a value could pass the parameter and fail the core)."""
    from manip_dynamics import InputError, RobotModel, robots

    model = RobotModel.from_urdf_file(robots.path("planar_2r"))
    defaults = {spec.name: spec.default for spec in PARAMETERS}
    refused = {True: 0, False: 0}
    for scale in (1e-3, 10.0):
        for excess in (1e-16, 1e-13, 5e-10, 1e-8, 1e-6):
            for six in ([-excess, 0, 0, scale, 0, scale],                    # I1 < 0
                        [scale, 0, 0, scale, 0, 2 * scale + excess]):       # I3 > I1 + I2
                try:
                    check_values(dict(defaults, **{"payload.inertia": six}))
                    by_parameter = False
                except ParameterValueError:
                    by_parameter = True
                I = np.array([[six[0], six[1], six[2]], [six[1], six[3], six[4]],
                              [six[2], six[4], six[5]]])
                try:
                    model.with_payload(model.default_tip, 1.0, [0, 0, 0], I)
                    by_core = False
                except InputError:
                    by_core = True
                assert by_parameter == by_core, (scale, excess, six)
                refused[by_core] += 1
    assert refused[True] and refused[False]        # both outcomes occur in the grid


def test_every_choice_yaml_reads_as_a_boolean_is_taken_back_as_its_word():
    """PyYAML (YAML 1.1, as rcl reads ``-p name:=value``) is the reference for which words
    arrive as booleans; every such choice of every node's table comes back as the word."""
    import yaml

    from manip_dynamics.nodes.computed_torque_controller import PARAMETERS as CONTROLLER
    from manip_dynamics.nodes.recorder import PARAMETERS as RECORDER
    from manip_dynamics.sim.parameters import PARAMETERS as SIMULATOR

    seen = []
    for spec in (*PARAMETERS, *CONTROLLER, *RECORDER, *SIMULATOR):
        for flag in (True, False):
            words = [c for c in spec.choices if yaml.safe_load(c) is flag]
            assert spec.word_for_bool(flag) == (words[0] if len(words) == 1 else None)
            seen += [f"{spec.name}={w}" for w in words]
    assert "mode=off" in seen
    for word in ("off", "Off", "NO", "false"):      # each a boolean to YAML 1.1
        assert yaml.safe_load(word) is False
        assert ParamSpec("m", "string", "a", "m", choices=("a", word)).word_for_bool(False) == word
    assert ParamSpec("m", "string", "a", "m", choices=("a", "oFF")).word_for_bool(False) is None


@pytest.mark.parametrize("spec, given, words", [
    (ParamSpec("mode", "string", "a", "m", choices=("a", "b")), True,
     "got the boolean true: YAML reads an unquoted y/yes/true/on as a boolean; write one of a, b"),
    (ParamSpec("path", "string", "", "p"), False, "quote the word, e.g. -p 'path:=\"off\"'"),
    (ParamSpec("path", "string", "", "p"), 3, "got the number 3: quote it"),
    (ParamSpec("g", "double_array", [], "g"), [0, 0, -10], "write doubles with a decimal point"),
    (ParamSpec("rate", "double", 1.0, "r"), True, "got the boolean true"),
    (ParamSpec("floor", "bool", True, "f"), "off", "got 'off': write true or false"),
])
def test_type_hints_name_the_actual_mistake(spec, given, words):
    hint = spec.type_hint(given)
    assert words in hint, hint
    assert ("decimal" in hint) == (spec.kind.startswith("double") and not isinstance(given, bool))
