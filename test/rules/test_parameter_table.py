"""The parameter-table idiom without ROS: bounds as words and as checks, one source."""
from __future__ import annotations

import math

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
