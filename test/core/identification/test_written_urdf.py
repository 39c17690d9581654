"""What identify writes loads back (issue 34 items 5, 6): negative friction estimates are
not written into a URDF (our parser and Pinocchio would refuse them), and
pipeline.check_written_urdf reads the written URDF back and flags every body that is not a
real rigid body with the margin, or a URDF that does not load."""
from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

from manip_dynamics import RobotModel, robots
from manip_dynamics.core.identification import consistent_fit as CF
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
    negative principal moment (written by hand: identified_urdf writes the nearest real body
instead, test below): the URDF does not load, said so."""
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
    root = ET.fromstring(xml0)                 # written by hand: identified_urdf would not
    inertia = [el for el in root.iter("link") if el.get("name") == model.body_links[3]][0]
    inertia.find("inertial/inertia").set("ixx", "-0.5")
    bodies, problems = I.check_written_urdf(ET.tostring(root, encoding="unicode"), xml0, prior)
    assert bodies == [] and "does not load" in problems[0], problems


def negative_moment(pi_b):
    """pi_b (10,) with 2 lambda_max subtracted from its inertia about the com: principal
    moments of its own size, negative (a least-squares estimate's kind; the UR10e's
    forearm and wrist)."""
    m, c, I_c = R.inertia_from_parameters(pi_b)
    return R.inertial_parameters(m, c, I_c - 2 * np.linalg.eigvalsh(I_c)[-1] * np.eye(3))


def test_a_body_that_is_none_is_written_as_the_nearest_real_one():
    """Issue 34 item 6: a body with negative principal moments (and one with a negative
    mass) is written as the nearest real body, with a note naming it: the URDF loads in our
    parser without a warning and in Pinocchio, every body real with the margin, the other
    bodies as estimated (1e-11). The nearest real body: its scaled pseudo-inertia against
    an independent eigenvalue clipping written here, and no farther from the estimate than
    the prior's body (a real body too). Before: the URDF did not load."""
    xml0, model = panda()
    prior = R.model_parameters(model)
    bad = prior.copy()
    bad[30:40] = negative_moment(prior[30:40])
    bad[50:60] = -prior[50:60]                      # a negative mass (and moments)
    xml, notes = I.identified_urdf(xml0, model, bad, False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        written = RobotModel.from_urdf_string(xml)
    pin_model = pin.buildModelFromXML(xml)
    assert pin_model.nv == model.n
    bodies, problems = I.check_written_urdf(xml, xml0, prior)
    assert not problems and all(b.ok for b in bodies), problems
    links = model.body_links
    assert [note.split(":")[0] for note in notes] == [links[3], links[5]], notes
    assert all("not a real rigid body" in note for note in notes), notes
    got = R.model_parameters(written)
    others = [b for b in range(len(links)) if b not in (3, 5)]
    for b in others:
        assert np.allclose(got[10 * b:10 * b + 10], bad[10 * b:10 * b + 10], rtol=1e-11,
                           atol=1e-14), links[b]
    m_s, L_s = CF.body_scales(prior, len(links))
    for b in (3, 5):
        d = np.array([1 / L_s[b]] * 3 + [1.0]) / np.sqrt(m_s[b])
        S = np.outer(d, d) * R.pseudo_inertia(bad[10 * b:10 * b + 10])
        w, V = np.linalg.eigh(S)
        clipped = V @ np.diag(np.where(w < 1e-6, 1e-6, w)) @ V.T
        S_got = np.outer(d, d) * R.pseudo_inertia(got[10 * b:10 * b + 10])
        assert np.allclose(S_got, clipped, atol=1e-10), links[b]
        S_prior = np.outer(d, d) * R.pseudo_inertia(prior[10 * b:10 * b + 10])
        assert np.linalg.norm(S_got - S) <= np.linalg.norm(S_prior - S)
