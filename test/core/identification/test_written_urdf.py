"""What identify writes loads back (issue 34 items 5, 6): negative friction estimates are
not written into a URDF (our parser and Pinocchio would refuse them), and
pipeline.check_written_urdf reads the written URDF back and flags every body that is not a
real rigid body with the margin, or a URDF that does not load."""
from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin

from manip_dynamics import RobotModel, robots
from manip_dynamics.core.identification import pipeline as I
from manip_dynamics.core.identification import regressor as R


def panda():
    with open(robots.path("panda"), encoding="utf-8") as f:
        xml = f.read()
    return xml, RobotModel.from_urdf_string(xml)


def test_negative_friction_is_written_as_zero_with_a_note():
    """A least-squares estimate with a negative viscous coefficient on joint 2 and a
    negative Coulomb one on joint 3 (the issue's 7-DOF arm had one; our parser refused its
    URDF): written as 0 with a note giving the estimate; the URDF loads in our parser and in
    Pinocchio, the other coefficients as estimated."""
    xml0, model = panda()
    pi = R.model_parameters(model, friction=True)
    n, nb = model.n, len(model.body_links)
    pi[10 * nb:] = np.linspace(0.1, 0.7, 2 * n)
    pi[10 * nb + 1], pi[10 * nb + n + 2] = -0.25, -0.125
    xml, notes = I.identified_urdf(xml0, model, pi, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        written = RobotModel.from_urdf_string(xml)
    expected_v, expected_c = pi[10 * nb:10 * nb + n].copy(), pi[10 * nb + n:].copy()
    expected_v[1] = expected_c[2] = 0.0
    assert np.allclose(written.viscous, expected_v, rtol=1e-11)
    assert np.allclose(written.coulomb, expected_c, rtol=1e-11)
    assert any(model.joint_names[1] in s and "damping -0.25" in s for s in notes), notes
    assert any(model.joint_names[2] in s and "friction -0.125" in s for s in notes), notes
    pin_model = pin.buildModelFromXML(xml)
    assert np.allclose(pin_model.damping, expected_v) and np.allclose(pin_model.friction,
                                                                       expected_c)


def flat_body(pi_b):
    """pi_b (10,) with the inertia about the com replaced by a flat plate's (principal
    moments a, b, a + b: the triangle inequality holds with equality, the pseudo-inertia is
    singular), same mass and com."""
    m, c, _ = R.inertia_from_parameters(pi_b)
    return R.inertial_parameters(m, c, np.diag([0.01, 0.02, 0.03]) * m)


def test_the_check_reads_back_what_is_written():
    """The prior itself: every body real, no warning. A flat body (singular pseudo-inertia,
    which our parser loads without a word): that body flagged, named. A body with a
    negative principal moment of its own size: the URDF does not load, said so."""
    xml0, model = panda()
    prior = R.model_parameters(model)
    bodies, problems = I.check_written_urdf(I.identified_urdf(xml0, model, prior, False)[0],
                                            xml0, prior)
    assert not problems and all(b.ok for b in bodies) and len(bodies) == len(model.body_links)
    assert np.allclose([b.mass for b in bodies], model.body_inertias()[0], rtol=1e-11)
    flat = prior.copy()
    flat[30:40] = flat_body(prior[30:40])
    bodies, problems = I.check_written_urdf(I.identified_urdf(xml0, model, flat, False)[0],
                                            xml0, prior)
    assert [b.ok for b in bodies] == [b != 3 for b in range(len(bodies))], bodies
    assert len(problems) == 1 and model.body_links[3] in problems[0], problems
    assert abs(bodies[3].scaled_min) < 1e-9
    bad = prior.copy()
    m, c, I_c = R.inertia_from_parameters(prior[30:40])
    bad[30:40] = R.inertial_parameters(m, c, I_c - 2 * np.linalg.eigvalsh(I_c)[-1] * np.eye(3))
    bodies, problems = I.check_written_urdf(I.identified_urdf(xml0, model, bad, False)[0],
                                            xml0, prior)
    assert bodies == [] and "does not load" in problems[0], problems
