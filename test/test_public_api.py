"""The public names of ``manip_dynamics`` and ``manip_dynamics.core``, pinned (issue 22).

The layout under core/ may change (it did: dynamics/, contact/, identification/); these
imports may not. The lists are written out here, as they were before the move, not read
from the package: a name dropped from an ``__all__`` or an ``__init__`` fails.
"""
import importlib

import pytest

TOP = ["BaseParameters", "ContactDetector", "DynamicsTerms", "FourierTrajectory",
       "Identification", "InertiaEllipsoid", "InertiaWarning", "InputError",
       "ManipDynamicsError", "MasslessLinkWarning", "MissingDependencyError", "MissingExtraError",
       "MomentumObserver", "NonFiniteResultError", "PayloadEstimate", "RobotModel", "Samples",
       "SingularConfigurationError", "URDFError", "UnknownFrameError", "UnsupportedJointError",
       "base_parameters", "contact_point", "estimate_payload", "filter_recording",
       "frame_regressor", "identified_urdf", "joint_torque_regressor", "model_parameters",
       "optimize_excitation", "parameter_names", "tip_wrench"]

CORE = TOP + ["ArmTopology", "ContactPoint", "ContactState", "ObserverStep", "WrenchEstimate",
              "arm_topology", "identify"]


@pytest.mark.parametrize("module, names", [("manip_dynamics", TOP), ("manip_dynamics.core", CORE)])
def test_all_lists_exactly_the_pinned_names(module, names):
    assert sorted(importlib.import_module(module).__all__) == sorted(names)


@pytest.mark.parametrize("module, names", [("manip_dynamics", TOP), ("manip_dynamics.core", CORE)])
def test_every_pinned_name_imports(module, names):
    scope = {}
    exec(f"from {module} import {', '.join(names)}", scope)
    assert all(scope[name] is not None for name in names)


def test_top_level_names_are_the_cores_objects():
    import manip_dynamics
    import manip_dynamics.core as core
    for name in TOP:
        assert getattr(manip_dynamics, name) is getattr(core, name), name


def test_identify_is_the_function_in_core_and_the_cli_at_the_top():
    """``manip_dynamics.core.identify`` is the fit; ``manip_dynamics.identify`` the command
    line module (``python -m manip_dynamics.identify``), as before."""
    from manip_dynamics.core import identify
    import manip_dynamics.identify as cli
    assert callable(identify) and identify.__name__ == "identify"
    assert hasattr(cli, "main") and cli.__name__ == "manip_dynamics.identify"


@pytest.mark.parametrize("entry, target", [
    ("manip_dynamics.demo", "manip_dynamics.demos.closed_loop"),
    ("manip_dynamics.demo_identification", "manip_dynamics.demos.identification")])
def test_demo_entry_points_run_the_demos(entry, target):
    """``python -m manip_dynamics.demo`` / ``.demo_identification`` keep working: the entry
    modules call the demos' main (the demos themselves: test/demos)."""
    assert importlib.import_module(entry).main is importlib.import_module(target).main


def test_robot_model_body_table_and_direct_call_for_kernels_outside_the_core():
    """``RobotModel.body_table`` and ``core.dynamics.launch.direct_call`` are public (the
    safety points' kernels take the model's body table through them): the table is the
    kernels' read-only array itself, one row per moving body in ``body_links`` order, its
    masses and centres of mass those Pinocchio gives each joint's body (fixed links
    lumped), a payload's mass added to its body."""
    import numpy as np
    import pinocchio as pin

    from manip_dynamics import RobotModel, robots
    from manip_dynamics.core.dynamics.bodies import BODY
    from manip_dynamics.core.dynamics.launch import direct_call
    from manip_dynamics.safety.points import PointKinematics, default_points

    path = robots.path("panda")
    model = RobotModel.from_urdf_file(path)
    table = model.body_table
    assert table.dtype == BODY and table.shape == (len(model.body_links),)
    assert table is model.body_table and not table.flags.writeable
    ref = pin.buildModelFromUrdf(str(path))
    inertias = [ref.inertias[i] for i in range(1, ref.njoints)]
    np.testing.assert_allclose(table["mass"], [i.mass for i in inertias], rtol=1e-12)
    np.testing.assert_allclose(table["com"], [i.lever for i in inertias], atol=1e-12)
    b = model.frame_body(model.default_tip)[0]
    heavy = model.with_payload(model.default_tip, 2.5)
    assert heavy.body_table["mass"][b] == table["mass"][b] + 2.5
    assert PointKinematics(model, default_points(model))._bodies is table
    assert callable(direct_call)
