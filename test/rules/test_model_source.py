"""ModelSource without ROS: description precedence, the strict (parameter change) and the
lenient (new description) modes of the one state-building path, the parse cache."""
from __future__ import annotations

import numpy as np
import pytest

from manip_dynamics import robots
from manip_dynamics.rules.dynamics_parameters import PARAMETERS, ParameterValueError
from manip_dynamics.rules.model_source import Applied, Description, ModelSource


def defaults(**changes):
    values = {spec.name: spec.default for spec in PARAMETERS}
    values.update(changes)
    return values


def xml(name):
    with open(robots.path(name), encoding="utf-8") as f:
        return f.read()


R2, RP = xml("planar_2r"), xml("planar_rp")
NO_STATE = Applied(None, None, defaults())


def test_description_precedence(tmp_path):
    source = ModelSource()
    assert source.description(defaults()) is None
    source.topic_xml = RP
    assert source.description(defaults()).origin == "topic robot_description"
    f = tmp_path / "arm.urdf"
    f.write_text(R2)
    d = source.description(defaults(urdf_file=str(f)))
    assert (d.xml, d.origin, d.responsible) == (R2, f"file {f}", "urdf_file")
    d = source.description(defaults(urdf_file=str(f), robot_description=RP))
    assert (d.xml, d.responsible) == (RP, "robot_description")
    with pytest.raises(ParameterValueError, match="urdf_file: cannot read '/no/such.urdf'"):
        source.description(defaults(urdf_file="/no/such.urdf"))


def test_strict_mode_refuses_the_first_misfit_and_names_it():
    source = ModelSource()
    state = source.for_parameters(defaults(robot_description=R2, tip_link="link1"), NO_STATE)
    assert state.snapshot.tip_frame == "link1" and state.origin == "parameter robot_description"
    assert state.snapshot.model.joint_names == ("joint1", "joint2") and not state.resets
    for name, value, words in [("root_link", "nowhere", "'nowhere' is not in the robot model"),
                               ("tip_link", "elbow", "'elbow' is not in the robot model"),
                               ("command_joints", ["joint3"], "'joint3' is not a coordinate"),
                               ("robot_description", "<robot", "robot description from")]:
        with pytest.raises(ParameterValueError, match=words) as info:
            source.for_parameters(defaults(**{"robot_description": R2, name: value}), state)
        assert info.value.name == name


def test_strict_mode_refuses_to_drop_the_only_description():
    source = ModelSource()
    state = source.for_parameters(defaults(robot_description=R2), NO_STATE)
    with pytest.raises(ParameterValueError, match="leaves no robot description"):
        source.for_parameters(defaults(), state)
    assert source.for_parameters(defaults(), NO_STATE).snapshot is None   # nothing to lose


def test_lenient_mode_resets_each_misfit_to_its_default():
    source = ModelSource()
    values = defaults(root_link="link1", tip_link="tool", command_joints=["joint2"],
                      gravity=[0.0, 0.0, 9.81])
    state = source.for_description(Description(RP, "topic robot_description",
                                               "robot_description"), values)
    assert dict(state.values)["root_link"] == "link1"        # RP has link1: kept
    assert set(state.resets) == {"tip_link", "command_joints"}
    assert state.values["tip_link"] == "" and list(state.values["command_joints"]) == []
    np.testing.assert_array_equal(state.snapshot.model.gravity, [0.0, 0.0, 9.81])
    assert values["tip_link"] == "tool"                     # the caller's dict is untouched
    state = source.for_description(Description(RP, "t", "robot_description"),
                                   defaults(root_link="nowhere"))
    assert list(state.resets) == ["root_link"] and state.snapshot.model.root_link == "base_link"


def test_lenient_mode_drops_a_payload_the_core_refuses():
    source = ModelSource()
    values = defaults(**{"payload.frame": "link2", "payload.mass": 1e308,
                         "payload.com": [1e300, 0.0, 0.0]})
    state = source.for_description(Description(R2, "t", "robot_description"), values)
    assert "payload.frame" in state.resets and state.values["payload.frame"] == ""
    assert not state.snapshot.model.payloads
    with pytest.raises(ParameterValueError) as info:
        source.for_parameters(dict(values, robot_description=R2), NO_STATE)
    assert info.value.name == "payload.frame"


def test_parse_cache_and_warnings():
    said = []
    source = ModelSource(warn=said.append)
    # a joint that moves no mass (its link has no <inertial>) makes M singular: the parse
    # warns once, and the cached second parse does not warn again. (A massless leaf on a
    # fixed joint, which this test used before, is a normal frame and is no longer warned.)
    massless = R2.replace('<link name="link1">', '<link name="extra"/><link name="link1">', 1)
    massless = massless.replace('</robot>', '<joint name="fx" type="continuous"><parent '
                                'link="link2"/><child link="extra"/></joint></robot>')
    a = source.parse(massless)
    assert source.parse(massless) is a and len(said) == 1 and "'fx'" in said[0]
    for i in range(6):                  # the cache is bounded: old parses are dropped
        source.parse(R2, "" if i % 2 else "base_link")
        source.parse(RP.replace("planar_rp", f"rp{i}"))
    assert len(source._parsed) <= 4
    with pytest.raises(Exception, match="no movable joints"):
        source.parse("<robot name='x'><link name='a'/></robot>")


def test_xacro_urdf_file_with_arguments(monkeypatch):
    """urdf_file may be xacro: expanded with xacro_args, $(find) through ROS_PACKAGE_PATH;
    what cannot be resolved is refused on urdf_file, naming it."""
    from pathlib import Path
    data = Path(__file__).resolve().parent.parent / "data"
    arm = str(data / "hobby_arm_description" / "urdf" / "hobby_arm.urdf.xacro")
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(data))
    state = ModelSource().for_parameters(defaults(urdf_file=arm, xacro_args="prefix:=b_"),
                                         NO_STATE)
    assert state.base_model.joint_names == ("b_waist", "b_shoulder", "b_elbow", "b_wrist")
    monkeypatch.setenv("ROS_PACKAGE_PATH", "/nowhere")
    with pytest.raises(ParameterValueError, match="urdf_file: xacro .*hobby_arm.urdf.xacro: "
                                                  "package 'hobby_arm_description' not found"):
        ModelSource().description(defaults(urdf_file=arm))
