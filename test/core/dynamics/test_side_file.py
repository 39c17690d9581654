"""The dynamics side file (core/dynamics/side_file.py, docs/side_file.md): armature, friction
and drive gains per joint from a YAML file beside the URDF.

Round trip: a model's values written and read back are the same bits. A file's values land
on the named joints (a joint not listed keeps the model's values). Every bad file gives one
InputError line naming the file, the joint and the field.
"""
from __future__ import annotations

import numpy as np
import pytest

from manip_dynamics import InputError, RobotModel
from manip_dynamics.core.dynamics import (load_side_file, side_file_beside,
                                          write_side_file)

from .test_pinocchio import PANDA, UR5


@pytest.fixture(scope="module")
def ur5():
    return RobotModel.from_urdf_file(UR5)


def write(tmp_path, text, name="arm.dynamics.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("description, side", [
    ("robots/ur10e.urdf", "robots/ur10e.dynamics.yaml"),
    ("robots/ur10e.urdf.xacro", "robots/ur10e.dynamics.yaml"),
    ("robots/arm.xacro", "robots/arm.dynamics.yaml"),
    ("arm.v2.urdf", "arm.v2.dynamics.yaml"),
    ("robot", "robot.dynamics.yaml"),
])
def test_side_file_beside(description, side):
    assert str(side_file_beside(description)) == side


def test_round_trip_is_exact(ur5, tmp_path):
    rng = np.random.default_rng(1)
    model = ur5.with_armature(rng.uniform(0, 4, 6) / 3).with_friction(
        rng.uniform(0, 20, 6) / 7, rng.uniform(0, 10, 6) / 11)
    model = model.with_armature(np.r_[0.0, 1e-20, model.armature[2:]])   # a tiny value too
    gain = rng.uniform(5, 12, 6) / 3
    path = write_side_file(tmp_path / "ur5.dynamics.yaml", model, gain, comment="fit of\ntoday")
    assert path.read_text().startswith("# fit of\n# today\n# manip_dynamics")
    side = load_side_file(path, ur5)
    for name in ("armature", "viscous", "coulomb"):
        assert np.array_equal(getattr(side.model, name), getattr(model, name)), name
    assert np.array_equal(side.drive_gain, gain) and side.path == path
    q = rng.uniform(-2, 2, 6)
    assert np.array_equal(side.model.mass_matrix(q), model.mass_matrix(q))


def test_round_trip_of_the_friction_model(ur5, tmp_path):
    """Asymmetric Coulomb, offsets of both signs and smooth-sign widths come back as the
    same bits; a symmetric joint is written as one 'coulomb' (the schema's first form)."""
    rng = np.random.default_rng(2)
    fc_neg = rng.uniform(0, 10, 6) / 11
    fc_neg[1] = 0.5
    model = ur5.with_friction(rng.uniform(0, 20, 6) / 7, np.r_[0.3, 0.5, rng.uniform(0, 9, 4)],
                              fc_neg, rng.uniform(-2, 2, 6) / 3,
                              np.r_[0.0, 0.05, rng.uniform(0, 1, 4) / 7])
    path = write_side_file(tmp_path / "ur5.dynamics.yaml", model)
    text = path.read_text()
    assert "coulomb: 0.5" in text and text.count("coulomb_positive") == 5
    side = load_side_file(path, ur5)
    for name in ("viscous", "coulomb", "coulomb_negative", "friction_offset", "friction_width"):
        assert np.array_equal(getattr(side.model, name), getattr(model, name)), name
    qd = rng.normal(size=(20, 6))
    assert np.array_equal(side.model.friction_torques(qd), model.friction_torques(qd))


def test_the_friction_terms_reach_the_model_s_friction_torque(ur5, tmp_path):
    """tau_fr from a side file against the formula written out here (docs/side_file.md)."""
    path = write(tmp_path, """
joints:
  shoulder_pan_joint: {friction: {viscous: 2.0, coulomb_positive: 3.0, coulomb_negative: 1.5,
                                  offset: -0.25}}
  elbow_joint: {friction: {viscous: 1.0, coulomb: 4.0, offset: 0.5, width: 0.1}}
""")
    side = load_side_file(path, ur5.with_friction(viscous=0.0, coulomb=0.0))
    for v in (0.3, -0.3, 0.02, -0.02, 0.0):
        qd = np.full(6, v)
        tau = side.model.friction_torques(qd)
        expect0 = 2.0 * v + (3.0 if v > 0 else -1.5 if v < 0 else 0.0) - 0.25
        expect2 = 1.0 * v + 4.0 * np.tanh(v / 0.1) + 0.5
        assert tau[0] == pytest.approx(expect0, abs=1e-15)
        assert tau[2] == pytest.approx(expect2, abs=1e-15)
        assert np.all(tau[[1, 3, 4, 5]] == 0.0)


def test_values_land_on_the_named_joints(ur5, tmp_path):
    """The UR10e authors' numbers for two joints; the others keep the model's values."""
    path = write(tmp_path, """
version: 1
joints:
  wrist_3_joint:
    armature: 0.4365
    friction: {viscous: 3.02555317117942, coulomb: 2.29785428883088}
    drive_gain: 10.1232
  shoulder_lift_joint:
    armature: 3.7434
  elbow_joint: {friction: {coulomb: 4}}
""")
    base = ur5.with_friction(viscous=0.5, coulomb=0.25)
    side = load_side_file(path, base)
    assert side.model.armature.tolist() == [0, 3.7434, 0, 0, 0, 0.4365]
    assert side.model.viscous.tolist() == [0.5] * 5 + [3.02555317117942]
    assert side.model.coulomb.tolist() == [0.25, 0.25, 4.0, 0.25, 0.25, 2.29785428883088]
    assert side.drive_gain.tolist() == [1, 1, 1, 1, 1, 10.1232]
    q = np.full(6, 0.4)
    assert np.allclose(np.diag(side.model.mass_matrix(q)) - np.diag(ur5.mass_matrix(q)),
                       [0, 3.7434, 0, 0, 0, 0.4365], rtol=0, atol=1e-13)


@pytest.mark.parametrize("text", ["", "version: 1\n", "joints:\n", "joints: {}\n"])
def test_an_empty_file_changes_nothing(ur5, tmp_path, text):
    side = load_side_file(write(tmp_path, text), ur5)
    assert np.array_equal(side.model.armature, np.zeros(6))
    assert np.array_equal(side.model.viscous, ur5.viscous)
    assert np.array_equal(side.drive_gain, np.ones(6))


BAD = [
    ("joints: [1, 2", "is not valid YAML (line 1, column 14): expected ',' or ']'"),
    ("- 1\n- 2\n", "expected a mapping with 'joints', got list"),
    ("joint: {}\n", "unknown key 'joint' (known: version, joints)"),
    ("version: 2\n", "version 2 is not supported (this reader knows version 1)"),
    ("joints: [elbow_joint]\n", "'joints' must be a mapping of joint names, got list"),
    ("joints: {elbow: {armature: 1}}\n", "unknown joint 'elbow'; the model's joints: "
                                         "shoulder_pan_joint, shoulder_lift_joint"),
    ("joints: {elbow_joint: {armature: -0.5}}\n",
     "joint 'elbow_joint': armature = -0.5 must be finite and >= 0"),
    ("joints: {elbow_joint: {armature: .nan}}\n", "joint 'elbow_joint': armature = nan"),
    ("joints: {elbow_joint: {armature: .inf}}\n", "joint 'elbow_joint': armature = inf"),
    ("joints: {elbow_joint: {armature: heavy}}\n",
     "joint 'elbow_joint': armature must be a number, got 'heavy'"),
    ("joints: {elbow_joint: {armature: 1e-3}}\n", "got '1e-3' (YAML reads a number like"),
    ("joints: {elbow_joint: {armature: true}}\n", "armature must be a number, got True"),
    ("joints: {elbow_joint: {armature: [1, 2]}}\n", "armature must be a number, got [1, 2]"),
    ("joints: {elbow_joint: {drive_gain: 0}}\n",
     "joint 'elbow_joint': drive_gain = 0 must be finite and > 0"),
    ("joints: {elbow_joint: {friction: {viscous: -1}}}\n",
     "joint 'elbow_joint': friction.viscous = -1 must be finite and >= 0"),
    ("joints: {elbow_joint: {friction: {stiction: 0.2}}}\n",
     "joint 'elbow_joint': friction: unknown key 'stiction' (known: viscous, coulomb, "
     "coulomb_positive, coulomb_negative, offset, width)"),
    ("joints: {elbow_joint: {friction: 3}}\n",
     "joint 'elbow_joint': friction must be a mapping of viscous, coulomb, coulomb_positive, "
     "coulomb_negative, offset, width, got 3"),
    ("joints: {elbow_joint: {friction: {width: -0.01}}}\n",
     "joint 'elbow_joint': friction.width = -0.01 must be finite and >= 0"),
    ("joints: {elbow_joint: {friction: {width: .inf}}}\n",
     "joint 'elbow_joint': friction.width = inf must be finite"),
    ("joints: {elbow_joint: {friction: {offset: .nan}}}\n",
     "joint 'elbow_joint': friction.offset = nan must be finite"),
    ("joints: {elbow_joint: {friction: {offset: -.inf}}}\n",
     "joint 'elbow_joint': friction.offset = -inf must be finite"),
    ("joints: {elbow_joint: {friction: {offset: 1e-3}}}\n",
     "friction.offset must be a number, got '1e-3' (YAML reads"),
    ("joints: {elbow_joint: {friction: {coulomb_negative: -2.0}}}\n",
     "joint 'elbow_joint': friction.coulomb_negative = -2.0 must be finite and >= 0"),
    ("joints: {elbow_joint: {friction: {coulomb: 1.0, coulomb_positive: 2.0}}}\n",
     "joint 'elbow_joint': friction: give coulomb (both directions) or coulomb_positive / "
     "coulomb_negative, not coulomb and coulomb_positive"),
    ("joints: {elbow_joint: 3}\n",
     "joint 'elbow_joint': expected a mapping of armature, friction, drive_gain, got 3"),
    ("joints: {elbow_joint: {rotor: 3}}\n", "joint 'elbow_joint': unknown key 'rotor'"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_a_bad_file_gives_one_clear_line(ur5, tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_side_file(path, ur5)
    text = str(info.value)
    assert message in text and "\n" not in text
    assert text.startswith(f"side file {str(path)!r}")


def test_a_missing_file_and_a_mimic_joint(ur5, tmp_path):
    with pytest.raises(InputError, match="cannot read side file .*absent.yaml"):
        load_side_file(tmp_path / "absent.yaml", ur5)
    panda = RobotModel.from_urdf_file(PANDA)
    with pytest.raises(InputError, match="joint 'panda_finger_joint2' is a mimic joint"):
        load_side_file(write(tmp_path, "joints: {panda_finger_joint2: {armature: 1}}"), panda)


def test_the_writer_refuses_bad_gains(ur5, tmp_path):
    with pytest.raises(InputError, match=r"drive_gain must have shape \(6,\)"):
        write_side_file(tmp_path / "a.yaml", ur5, [1.0, 2.0])
    with pytest.raises(InputError, match="drive_gain\\[3\\] \\(joint 'wrist_1_joint'\\) = 0.0"):
        write_side_file(tmp_path / "a.yaml", ur5, [1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    assert not (tmp_path / "a.yaml").exists()
