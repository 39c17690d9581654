"""The dynamics node's ``dynamics_file`` (ModelSource, no ROS): the side file beside
``urdf_file`` by default, an explicit one, 'none'; its armature and friction in the
snapshot's model (friction.* parameters still override); a bad file refused naming
``dynamics_file`` (parameter change) or reset to 'none' (new description); the same model
object while the file is unchanged."""
from __future__ import annotations

import os

import numpy as np
import pytest

from manip_dynamics import robots
from manip_dynamics.rules.dynamics_parameters import (PARAMETERS, ParameterValueError,
                                                      check_values)
from manip_dynamics.rules.model_source import Applied, ModelSource

SIDE = """joints:
  joint2:
    armature: 0.75
    friction: {viscous: 0.5, coulomb: 0.25}
    drive_gain: 7.0
"""


def defaults(**changes):
    values = {spec.name: spec.default for spec in PARAMETERS}
    values.update(changes)
    return values


NO_STATE = Applied(None, None, defaults())


@pytest.fixture
def arm(tmp_path):
    """arm.urdf (the planar 2R arm) with arm.dynamics.yaml beside it."""
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(open(robots.path("planar_2r"), encoding="utf-8").read())
    (tmp_path / "arm.dynamics.yaml").write_text(SIDE)
    return urdf


def test_the_side_file_beside_the_urdf_is_applied(arm):
    warned = []
    state = ModelSource(warned.append).for_parameters(defaults(urdf_file=str(arm)), NO_STATE)
    assert warned == []
    assert state.snapshot.drive_gain.tolist() == [1.0, 7.0]      # the file's, for the efforts
    assert state.side_file == str(arm.with_name("arm.dynamics.yaml"))
    model = state.snapshot.model
    assert model.armature.tolist() == [0.0, 0.75]
    assert model.viscous[1] == 0.5 and model.coulomb[1] == 0.25
    assert state.origin == f"file {arm} with side file {arm.with_name('arm.dynamics.yaml')}"
    q = np.array([0.3, -0.7])
    plain = ModelSource().for_parameters(defaults(urdf_file=str(arm), dynamics_file="none"),
                                         NO_STATE)
    assert plain.snapshot.model.armature.tolist() == [0.0, 0.0]
    assert plain.origin == f"file {arm}"
    dM = model.mass_matrix(q) - plain.snapshot.model.mass_matrix(q)
    np.testing.assert_allclose(dM, np.diag([0.0, 0.75]), rtol=0, atol=1e-15)


def test_an_explicit_file_and_friction_parameters_over_it(arm, tmp_path):
    other = tmp_path / "elsewhere.yaml"
    other.write_text("joints: {joint1: {armature: 2.0}, joint2: {friction: {viscous: 3.0}}}")
    xml = arm.read_text()
    state = ModelSource().for_parameters(
        defaults(robot_description=xml, dynamics_file=str(other),
                 **{"friction.joints": ["joint2"], "friction.coulomb": [0.125]}), NO_STATE)
    model = state.snapshot.model
    assert model.armature.tolist() == [2.0, 0.0]
    assert model.viscous[1] == 3.0 and model.coulomb[1] == 0.125
    # no urdf_file: nothing beside to look for
    state = ModelSource().for_parameters(defaults(robot_description=xml), NO_STATE)
    assert state.snapshot.model.armature.tolist() == [0.0, 0.0]


def test_friction_parameters_keep_the_side_file_s_friction_model_elsewhere(arm, tmp_path):
    """friction.* on joint2 set its Coulomb term in both directions; joint1 keeps the side
    file's per-direction Coulomb, offset and width (before: every joint's coulomb_negative
    was reset to its coulomb by the friction.* override), and the node's feedforward
    (inverse_dynamics with friction) has them."""
    other = tmp_path / "asym.yaml"
    other.write_text("joints: {joint1: {friction: {viscous: 0.5, coulomb_positive: 2.0, "
                     "coulomb_negative: 1.0, offset: -0.25, width: 0.5}},\n"
                     "         joint2: {friction: {coulomb_positive: 4.0, coulomb_negative: 3.0}}}")
    state = ModelSource().for_parameters(
        defaults(urdf_file=str(arm), dynamics_file=str(other),
                 **{"friction.joints": ["joint2"], "friction.coulomb": [0.125],
                    "friction.viscous": [0.0]}), NO_STATE)
    model = state.snapshot.model
    assert model.coulomb.tolist() == [2.0, 0.125]
    assert model.coulomb_negative.tolist() == [1.0, 0.125]
    assert model.friction_offset.tolist() == [-0.25, 0.0]
    assert model.friction_width.tolist() == [0.5, 0.0]
    q, qd = np.array([0.3, -0.7]), np.array([-0.2, 0.4])
    tau = model.inverse_dynamics(q, qd, np.zeros(2), friction=True)
    rigid = model.inverse_dynamics(q, qd, np.zeros(2))
    written = [0.5 * -0.2 + 1.0 * np.tanh(-0.2 / 0.5) - 0.25, 0.125 * 1.0]
    np.testing.assert_allclose(tau - rigid, written, rtol=0, atol=1e-14)


def test_a_bad_file_is_refused_naming_dynamics_file(arm, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("joints: {joint2: {armature: -1}}")
    source = ModelSource()
    for value, words in [(str(bad), "joint 'joint2': armature = -1 must be finite and >= 0"),
                         (str(tmp_path / "absent.yaml"), "cannot read side file")]:
        with pytest.raises(ParameterValueError, match=words) as info:
            source.for_parameters(defaults(urdf_file=str(arm), dynamics_file=value), NO_STATE)
        assert info.value.name == "dynamics_file"


def test_a_new_description_with_a_bad_file_beside_resets_to_none(arm):
    arm.with_name("arm.dynamics.yaml").write_text("joints: {elbow: {armature: 1}}")
    source = ModelSource()
    values = defaults(urdf_file=str(arm))
    state = source.for_description(source.description(values), values)
    assert state.values["dynamics_file"] == "none"
    assert "unknown joint 'elbow'" in state.resets["dynamics_file"]
    assert state.snapshot.model.armature.tolist() == [0.0, 0.0]


def test_the_same_model_while_the_file_is_unchanged(arm):
    source = ModelSource()
    first = source.for_parameters(defaults(urdf_file=str(arm)), NO_STATE)
    second = source.for_parameters(defaults(urdf_file=str(arm), tip_link="link1"), first)
    assert second.base_model is first.base_model
    side = arm.with_name("arm.dynamics.yaml")
    side.write_text(SIDE.replace("0.75", "1.5"))
    st = side.stat()
    os.utime(side, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))   # a later edit
    third = source.for_parameters(defaults(urdf_file=str(arm)), second)
    assert third.base_model is not first.base_model
    assert third.snapshot.model.armature.tolist() == [0.0, 1.5]


def test_drive_gains_from_the_file_unless_the_parameter_gives_them(arm):
    """``drive_gains`` [] takes the side file's (joint2: 7.0, joint1 none: 1); 1 value is
    every joint's, n values one each; all ones (or no file) is None (effort is torque); a
    count other than 0, 1 or n, or a gain <= 0, is refused naming the parameter."""
    source = ModelSource()
    gain = lambda **values: source.for_parameters(defaults(urdf_file=str(arm), **values),
                                                  NO_STATE).snapshot.drive_gain
    assert gain().tolist() == [1.0, 7.0]
    assert gain(drive_gains=[2.5]).tolist() == [2.5, 2.5]
    assert gain(drive_gains=[3.0, 4.0]).tolist() == [3.0, 4.0]
    assert gain(drive_gains=[1.0]) is None
    assert gain(dynamics_file="none") is None
    with pytest.raises(ParameterValueError, match="drive_gains"):
        gain(drive_gains=[1.0, 2.0, 3.0])
    with pytest.raises(ParameterValueError, match="drive_gains"):      # the table's bound
        check_values(defaults(drive_gains=[0.0]))
