"""Every example-robot-data URDF that Pinocchio loads as a fixed-base model, against Pinocchio.

For each URDF of the example-robot-data package (installed with ``pin``): if Pinocchio
builds a model from it (``buildModelFromXML``, with ``mimic=True`` when the file has mimic
joints) whose joints are all one-dof (revolute, continuous, prismatic: a fixed-base tree),
the core must load it too and agree with Pinocchio (``PinocchioReference`` of
test_pinocchio.py, which evaluates Pinocchio in our coordinates) at random states within
the joint limits on

    g(q), C(q, qd) qd, M(q), J(q) at the default tip and at a link half-way down the
    frame list, and Lambda = (J M^-1 J^T)^-1 where the 6 x 6 A is well conditioned
    (cond(A) < 1e8),

to 1e-10 relative to max(1, |Pinocchio's value|) (Lambda: times max(1, cond(A) / 1e3)).
Files Pinocchio refuses, or loads only with a floating/planar joint, are skipped with the
reason. Pinocchio 4.1 refuses with ``mimic=True`` three files whose mimic joints it cannot
place (romeo.urdf, talos_full_v2.urdf, talos_full_v2_box.urdf: "the parent joint of the
mimic joint is not in the kinematic tree") but loads them with ``mimic=False``; the core
loads them, and they are compared with Pinocchio's ``mimic=False`` model reduced to our
coordinates (q_mimic = multiplier q_master + offset, chains composed).

Measured (example-robot-data 6.0.0, 69 URDFs): 65 compared, all agree -- the 62 files
Pinocchio loads as fixed-base trees with ``mimic=True`` (or without mimic joints) and the 3
above (TIAGo x3 and romeo_laas_small included, which the core refused before its inertia
policy). 4 skipped: ur3.urdf (a xacro wrapper, no URDF model for Pinocchio), the two
quadrotors (hector, iris: no moving joint), alex_psyonic_hands.urdf (its <mimic> elements
name joints the file does not have: Pinocchio refuses it with mimic=True, the core refuses
it naming the joint; checked). These counts and the skipped files with their reasons are
asserted (``SKIPPED``, ``N_COMPARED``).
"""
from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import pinocchio as pin
import pytest

from manip_dynamics import RobotModel, URDFError

from .. import urdf_factory as uf
from .test_pinocchio import ERD, TOL, PinocchioReference, assert_close

FILES = sorted(os.path.relpath(f, ERD) for f in glob.glob(f"{ERD}/**/*.urdf", recursive=True))
N_STATES = 3


def pinocchio_fixed_base(xml, mimic):
    """None if Pinocchio loads ``xml`` as a fixed-base tree, else the reason it does not."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = pin.buildModelFromXML(xml, mimic=mimic)
    except Exception as exc:           # noqa: BLE001 (Pinocchio raises RuntimeError/ValueError)
        return f"Pinocchio refuses it (mimic={mimic}): {str(exc).splitlines()[0][:100]}"
    if model.nv == 0:
        return "no moving joint"
    multi = [model.names[j] for j in range(1, model.njoints)
             if model.joints[j].nv != 1 and model.joints[j].shortname() != "JointModelMimic"]
    if multi:
        return f"not a fixed-base tree in Pinocchio (multi-dof joints {multi[:3]})"
    return None


# Measured (example-robot-data 6.0.0, pinned in constraints.txt): 69 files; every one not
# listed here is compared, every one listed is skipped, for the reason given (a substring
# of the skip message).
SKIPPED = {
    "alex_description/urdf/alex_psyonic_hands.urdf": "its <mimic> names joints that do not exist",
    "hector_description/robots/quadrotor_base.urdf": "no moving joint",
    "iris_description/robots/iris_simple.urdf": "no moving joint",
    "ur_description/urdf/ur3.urdf": "Pinocchio refuses it (mimic=False)",   # a xacro wrapper
}
N_FILES, N_COMPARED = 69, 65


def test_the_package_is_there():
    assert len(FILES) == N_FILES, (ERD, len(FILES))
    assert set(SKIPPED) <= set(FILES) and N_FILES - len(SKIPPED) == N_COMPARED


def _skip(rel, reason):
    """Skip ``rel`` for ``reason``, which must be the one SKIPPED gives it."""
    assert rel in SKIPPED and SKIPPED[rel] in reason, (rel, reason)
    pytest.skip(reason)


@pytest.mark.parametrize("rel", FILES)
def test_every_file_pinocchio_loads_agrees(rel):
    with open(os.path.join(ERD, rel), encoding="utf-8") as f:
        xml = f.read()
    reason = pinocchio_fixed_base(xml, mimic="<mimic" in xml)
    if reason is not None and "<mimic" in xml and pinocchio_fixed_base(xml, False) is None:
        joints = uf.urdf_joints(xml)
        missing = sorted({j["mimic"][0] for j in joints.values() if j["mimic"]} - set(joints))
        if missing:      # the <mimic> is broken: Pinocchio (mimic=True) and the core refuse
            with pytest.raises(URDFError, match=f"mimics '({'|'.join(missing)})'"):
                RobotModel.from_urdf_string(xml)
            _skip(rel, reason + f"; its <mimic> names joints that do not exist: {missing}, "
                  "which the core refuses too (checked)")
        reason = None    # Pinocchio's mimic=True refuses mimic chains the core resolves:
        #                  compared with Pinocchio's mimic=False model reduced to our q
    if reason is not None:
        _skip(rel, reason)
    assert rel not in SKIPPED, f"{rel} is compared now: update SKIPPED and the docs"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # InertiaWarning / MasslessLinkWarning: policy
        model = RobotModel.from_urdf_string(xml)
    ref = PinocchioReference(xml)
    assert model.joint_names == tuple(ref.names)
    frames = [model.default_tip, model.frame_names[len(model.frame_names) // 2]]
    q, qd, _ = ref.states(N_STATES, seed=sum(map(ord, rel)))
    for k in range(N_STATES):
        assert_close(model.gravity_torques(q[k]), ref.gravity(q[k]), what=f"{rel} g")
        assert_close(model.coriolis_torques(q[k], qd[k]), ref.coriolis(q[k], qd[k]),
                     what=f"{rel} C qd")
        M = ref.mass_matrix(q[k])
        assert_close(model.mass_matrix(q[k]), M, what=f"{rel} M")
        for frame in frames:
            assert_close(model.jacobian(q[k], frame), ref.jacobian(q[k], frame),
                         what=f"{rel} J {frame}")
            if np.linalg.cond(M) > 1e12:     # joints that move no mass: M singular
                continue
            A = ref.inverse_effective_inertia(q[k], frame)
            cond = np.linalg.cond(A)
            if cond < 1e8:
                assert_close(model.effective_inertia(q[k], frame), np.linalg.inv(A),
                             tol=TOL * max(1.0, cond / 1e3), what=f"{rel} Lambda {frame}")
