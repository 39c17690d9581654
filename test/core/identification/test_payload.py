"""estimate_payload (core/identification/payload.py) against independent references, fast and
ROS-free: its one-sigma ``com_std`` against the spread of the estimate over repeated noise
draws (a Monte Carlo), and its ``friction=True`` path against Pinocchio's rnea of the
loaded URDF plus the friction torques written out by hand.
"""
from __future__ import annotations

import numpy as np

from manip_dynamics import RobotModel, robots
from manip_dynamics.core.identification import payload as P

from .consistent_truth import recording

FRAME = "panda_link8"


def panda_xml_with_payload(mass, com, inertia):
    """The embedded Panda's URDF with a rigid payload (mass kg, com (3,) m and inertia (3, 3)
    kg m^2 about the com, in panda_link8's axes) as a link fixed to panda_link8: Pinocchio
    lumps it into link 7's body itself (no code under test builds the loaded arm)."""
    with open(robots.path("panda"), encoding="utf-8") as f:
        xml = f.read()
    I, c, m = np.asarray(inertia, dtype=float).tolist(), [float(x) for x in com], float(mass)
    link = (
        '<link name="test_payload"><inertial>'
        f'<origin xyz="{c[0]!r} {c[1]!r} {c[2]!r}" rpy="0 0 0"/><mass value="{m!r}"/>'
        f'<inertia ixx="{I[0][0]!r}" ixy="{I[0][1]!r}" ixz="{I[0][2]!r}" iyy="{I[1][1]!r}" '
        f'iyz="{I[1][2]!r}" izz="{I[2][2]!r}"/></inertial></link>'
        '<joint name="test_payload_joint" type="fixed"><parent link="panda_link8"/>'
        '<child link="test_payload"/><origin xyz="0 0 0" rpy="0 0 0"/></joint>')
    return xml, xml.replace("</robot>", link + "</robot>")


def test_com_std_is_the_spread_of_the_com_over_noise_draws():
    """com_std (first-order propagation of sigma^2 (Y^T Y)^-1 to c = h / m) against the
    empirical standard deviation of ``com`` over 800 draws of the same torque noise on the
    same 10 static poses. The noise is the same for every joint and sample (the OLS
    covariance's assumption), small (c = h / m is then linear to 1e-3), and the reported
    variance is averaged over the draws (sigma^2 is itself estimated per draw). The
    payload's CoM sits far out (0.2-0.3 m) so that the m-h correlation matters: measured
    stated / empirical 1.016, 1.025, 1.016 per axis, and 1.06, 0.86, 0.76 with the sign
    of the d c / d m term flipped."""
    model = RobotModel.from_urdf_file(robots.path("panda"))
    m, c = 1.5, np.array([0.2, -0.15, 0.3])
    loaded = model.with_payload(FRAME, m, c)
    rng = np.random.default_rng(7)
    q = rng.uniform(model.position_lower, model.position_upper, (10, model.n))
    tau = loaded.gravity_torques(q)
    sigma = 0.02                                          # N m, every joint
    draws, reported = [], []
    for _ in range(800):
        est = P.estimate_payload(model, FRAME, q, tau + sigma * rng.normal(size=tau.shape))
        draws.append(est.com)
        reported.append(est.com_std ** 2)
    empirical = np.std(np.array(draws), axis=0, ddof=1)
    stated = np.sqrt(np.mean(reported, axis=0))
    # the std of an empirical std over 800 draws is 1 / sqrt(2 * 799) = 2.5% of it:
    # 10% is four of those
    assert np.all(np.abs(stated / empirical - 1.0) < 0.10), (stated, empirical)


def test_friction_true_subtracts_the_models_friction_against_pinocchio():
    """A moving recording of the arm with viscous and Coulomb friction carrying a payload:
    torques from Pinocchio's rnea of the loaded URDF + viscous qd + coulomb sign(qd) (by
    hand). estimate_payload(friction=True) on the unloaded model with that friction finds
    the payload to round-off; the friction torques left in (or added with the wrong sign)
    are read as payload (measured without friction=True: mass 3% off, CoM 8 mm)."""
    m, c, inertia = 1.2, np.array([0.01, 0.02, 0.05]), np.diag([2e-3, 3e-3, 1e-3])
    xml, loaded_xml = panda_xml_with_payload(m, c, inertia)
    rng = np.random.default_rng(3)
    viscous, coulomb = rng.uniform(0.2, 0.6, 7), rng.uniform(0.5, 1.5, 7)
    q, qd, qdd, tau = recording(loaded_xml, 200, rng, viscous, coulomb)
    model = RobotModel.from_urdf_string(xml).with_friction(viscous=viscous, coulomb=coulomb)
    est = P.estimate_payload(model, FRAME, q, tau, qd, qdd, friction=True)
    assert abs(est.mass - m) < 1e-8 and np.abs(est.com - c).max() < 1e-8
    assert est.inertia is not None and np.abs(est.inertia - inertia).max() < 1e-8
    assert np.abs(est.residual_rms).max() < 1e-8
    # the same data without friction=True: the friction torques are not the payload's
    plain = P.estimate_payload(model, FRAME, q, tau, qd, qdd)
    assert abs(plain.mass - m) > 0.01 * m and np.abs(plain.com - c).max() > 0.004
