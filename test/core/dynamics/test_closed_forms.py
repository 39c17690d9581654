"""The core against closed forms of planar arms (derivations: docs/math.md).

Arms (built by ``urdf_factory``): planar in the root x-y plane, revolute axes +z, gravity
passed as (0, -g0, 0), the seeds' convention. Four families:

* 2R with point masses at the link ends (seed 001, Lynch & Park 8.9),
* 2R with uniform thin rods, I = m L^2 / 12 about the centre (seed 003, corrected),
* 2R with general, off-axis centres of mass (seed 004's dynamic coefficients a1..a5,
  generalised to off-axis COMs: a2, a4, a5 become 2-vectors),
* the RP arm (seed 000, corrected).

The expected values below are plain formulas (no dynamics library), evaluated at many
random states; every comparison is at 1e-10 relative to max(1, |expected|). The formulas
themselves are checked against Pinocchio on the same URDF strings
(``test_closed_forms_agree_with_pinocchio``) so a wrong reference cannot pass silently.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from .. import urdf_factory as uf
from .test_pinocchio import PinocchioReference, assert_close

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

G0 = 9.81
GRAVITY = (0.0, -G0, 0.0)
N_STATES = 40


# ============================================================== closed forms: planar 2R
class Planar2R:
    """2R arm, link i of mass m_i, COM (cix, ciy) in link frame i (origin at joint i),
    planar moment I_i about the COM; link lengths l1 (joint 1 -> joint 2), l2 (joint 2 ->
    tip). Gravity (gx, gy) in the plane (default (0, -g0)).

    Dynamic coefficients (seed 004 with off-axis COMs; reduce to the seed when ciy = 0):
        a1  = I1 + m1 |c1|^2 + I2 + m2 |c2|^2 + m2 l1^2
        a2  = m2 l1 (c2x, c2y)            beta(q2)  = a2x cos q2 - a2y sin q2
        a3  = I2 + m2 |c2|^2              beta'(q2) = -a2x sin q2 - a2y cos q2
        a4  = g0 (m1 c1x + m2 l1, m1 c1y)
        a5  = g0 m2 (c2x, c2y)
        M   = [[a1 + 2 beta, a3 + beta], [a3 + beta, a3]]
        C   = [[beta' qd2, beta' (qd1 + qd2)], [-beta' qd1, 0]]      (Christoffel)
        g1  = a4x c1 - a4y s1 + a5x c12 - a5y s12,   g2 = a5x c12 - a5y s12
    """

    def __init__(self, m1, m2, l1, l2, c1, c2, I1, I2):
        self.m1, self.m2, self.l1, self.l2 = m1, m2, l1, l2
        self.c1, self.c2, self.I1, self.I2 = c1, c2, I1, I2
        self.a1 = I1 + m1 * (c1[0] ** 2 + c1[1] ** 2) + I2 + m2 * (c2[0] ** 2 + c2[1] ** 2) \
            + m2 * l1 ** 2
        self.a2x, self.a2y = m2 * l1 * c2[0], m2 * l1 * c2[1]
        self.a3 = I2 + m2 * (c2[0] ** 2 + c2[1] ** 2)
        self.a4x, self.a4y = G0 * (m1 * c1[0] + m2 * l1), G0 * m1 * c1[1]
        self.a5x, self.a5y = G0 * m2 * c2[0], G0 * m2 * c2[1]

    def beta(self, q):
        return self.a2x * math.cos(q[1]) - self.a2y * math.sin(q[1])

    def dbeta(self, q):
        return -self.a2x * math.sin(q[1]) - self.a2y * math.cos(q[1])

    def M(self, q):
        b = self.beta(q)
        return np.array([[self.a1 + 2 * b, self.a3 + b], [self.a3 + b, self.a3]])

    def C(self, q, qd):
        d = self.dbeta(q)
        return np.array([[d * qd[1], d * (qd[0] + qd[1])], [-d * qd[0], 0.0]])

    def c(self, q, qd):
        d = self.dbeta(q)
        return np.array([d * (2 * qd[0] * qd[1] + qd[1] ** 2), -d * qd[0] ** 2])

    def g(self, q):
        c1, s1 = math.cos(q[0]), math.sin(q[0])
        c12, s12 = math.cos(q[0] + q[1]), math.sin(q[0] + q[1])
        g2 = self.a5x * c12 - self.a5y * s12
        return np.array([self.a4x * c1 - self.a4y * s1 + g2, g2])

    def coms(self, q):
        """World positions of the two COMs (2-vectors)."""
        c1, s1 = math.cos(q[0]), math.sin(q[0])
        c12, s12 = math.cos(q[0] + q[1]), math.sin(q[0] + q[1])
        p1 = np.array([c1 * self.c1[0] - s1 * self.c1[1], s1 * self.c1[0] + c1 * self.c1[1]])
        p2 = np.array([self.l1 * c1 + c12 * self.c2[0] - s12 * self.c2[1],
                       self.l1 * s1 + s12 * self.c2[0] + c12 * self.c2[1]])
        return p1, p2

    def g_tilted(self, q, gvec):
        """g for any gravity vector: g_i = -sum_k m_k gvec . (z x (p_k - o_i)), joints about
        z at o_1 = 0, o_2 = l1 (c1, s1); the z component of gvec does no work."""
        p1, p2 = self.coms(q)
        o2 = self.l1 * np.array([math.cos(q[0]), math.sin(q[0])])
        gx, gy = gvec[0], gvec[1]

        def work(m, r):  # m gvec . (z x r) with z x (rx, ry) = (-ry, rx)
            return m * (gx * -r[1] + gy * r[0])

        return np.array([-(work(self.m1, p1) + work(self.m2, p2)), -work(self.m2, p2 - o2)])

    def T(self, q, qd):
        return 0.5 * qd @ self.M(q) @ qd

    def U(self, q):
        p1, p2 = self.coms(q)
        return G0 * (self.m1 * p1[1] + self.m2 * p2[1])

    # ---- the massless tip frame at (l2, 0, 0) of link 2
    def tip(self, q):
        c1, s1 = math.cos(q[0]), math.sin(q[0])
        c12, s12 = math.cos(q[0] + q[1]), math.sin(q[0] + q[1])
        X = np.eye(4)
        X[:2, :2] = [[c12, -s12], [s12, c12]]
        X[:2, 3] = [self.l1 * c1 + self.l2 * c12, self.l1 * s1 + self.l2 * s12]
        return X

    def J(self, q):
        c1, s1 = math.cos(q[0]), math.sin(q[0])
        c12, s12 = math.cos(q[0] + q[1]), math.sin(q[0] + q[1])
        l1, l2 = self.l1, self.l2
        return np.array([[-l1 * s1 - l2 * s12, -l2 * s12],
                         [l1 * c1 + l2 * c12, l2 * c12],
                         [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])

    def Jdot_qd(self, q, qd):
        """d/dt (J qd) at qdd = 0: centripetal acceleration of the tip."""
        c1, s1 = math.cos(q[0]), math.sin(q[0])
        c12, s12 = math.cos(q[0] + q[1]), math.sin(q[0] + q[1])
        w1, w12 = qd[0], qd[0] + qd[1]
        return np.array([-self.l1 * c1 * w1 ** 2 - self.l2 * c12 * w12 ** 2,
                         -self.l1 * s1 * w1 ** 2 - self.l2 * s12 * w12 ** 2, 0.0, 0.0, 0.0, 0.0])


def lp_point_mass(m1, m2, L1, L2, q, qd):
    """Seed 001 (Lynch & Park eq. 8.9), verbatim: point masses at the link ends."""
    c1, c2, s2 = math.cos(q[0]), math.cos(q[1]), math.sin(q[1])
    c12 = math.cos(q[0] + q[1])
    M = np.array([[m1 * L1 ** 2 + m2 * (L1 ** 2 + 2 * L1 * L2 * c2 + L2 ** 2),
                   m2 * (L1 * L2 * c2 + L2 ** 2)],
                  [m2 * (L1 * L2 * c2 + L2 ** 2), m2 * L2 ** 2]])
    c = np.array([-m2 * L1 * L2 * s2 * (2 * qd[0] * qd[1] + qd[1] ** 2),
                  m2 * L1 * L2 * qd[0] ** 2 * s2])
    g = np.array([(m1 + m2) * L1 * G0 * c1 + m2 * G0 * L2 * c12, m2 * G0 * L2 * c12])
    T = 0.5 * m1 * L1 ** 2 * qd[0] ** 2 + 0.5 * m2 * (
        (L1 ** 2 + 2 * L1 * L2 * c2 + L2 ** 2) * qd[0] ** 2
        + 2 * (L2 ** 2 + L1 * L2 * c2) * qd[0] * qd[1] + L2 ** 2 * qd[1] ** 2)
    U = m1 * G0 * L1 * math.sin(q[0]) + m2 * G0 * (L1 * math.sin(q[0]) + L2 * math.sin(q[0] + q[1]))
    return M, c, g, T, U


def rods(m1, m2, L1, L2, q, qd):
    """Seed 003, corrected (docs/math.md lists the seed's slips): uniform thin rods."""
    c1, c2, s2 = math.cos(q[0]), math.cos(q[1]), math.sin(q[1])
    c12 = math.cos(q[0] + q[1])
    M = np.array([[m1 * L1 ** 2 / 3 + m2 * (L1 ** 2 + L1 * L2 * c2 + L2 ** 2 / 3),
                   m2 * (L1 * L2 * c2 / 2 + L2 ** 2 / 3)],
                  [m2 * (L1 * L2 * c2 / 2 + L2 ** 2 / 3), m2 * L2 ** 2 / 3]])
    c = np.array([-m2 * L1 * L2 * s2 * (qd[0] * qd[1] + qd[1] ** 2 / 2),
                  m2 * L1 * L2 * s2 * qd[0] ** 2 / 2])
    g = G0 * np.array([(m1 / 2 + m2) * L1 * c1 + m2 * L2 * c12 / 2, m2 * L2 * c12 / 2])
    return M, c, g


# ============================================================== closed forms: RP arm
class RP:
    """Seed 000, corrected: q = (theta, r); link 1 COM c1 = (a, b) in link 1, moment H1;
    link 2 (slider) COM at R(theta) (r, 0), moment H2; Hbar = H1 + m1 |c1|^2 + H2.
        M = diag(Hbar + m2 r^2, m2),  c = (2 m2 r rd thd, -m2 r thd^2)
        C = [[m2 r rd, m2 r thd], [-m2 r thd, 0]]
        g = g0 (m1 (a cos th - b sin th) + m2 r cos th, m2 sin th)
        Lambda (planar, at the slider origin) = m2 e_r e_r^T + (m2 + Hbar / r^2) e_t e_t^T
    """

    def __init__(self, m1, m2, c1, H1, H2):
        self.m1, self.m2, self.c1, self.H1, self.H2 = m1, m2, c1, H1, H2
        self.Hbar = H1 + m1 * (c1[0] ** 2 + c1[1] ** 2) + H2

    def M(self, q):
        return np.diag([self.Hbar + self.m2 * q[1] ** 2, self.m2])

    def C(self, q, qd):
        m2r = self.m2 * q[1]
        return np.array([[m2r * qd[1], m2r * qd[0]], [-m2r * qd[0], 0.0]])

    def c(self, q, qd):
        return np.array([2 * self.m2 * q[1] * qd[1] * qd[0], -self.m2 * q[1] * qd[0] ** 2])

    def g(self, q):
        th, r = q
        a, b = self.c1
        return G0 * np.array([self.m1 * (a * math.cos(th) - b * math.sin(th))
                              + self.m2 * r * math.cos(th), self.m2 * math.sin(th)])

    def g_tilted(self, q, gvec):
        """Any gravity: g_theta = -sum_k m_k gvec . (z x p_k), g_r = -m2 gvec . e_r."""
        th, r = q
        a, b = self.c1
        p1 = np.array([a * math.cos(th) - b * math.sin(th), a * math.sin(th) + b * math.cos(th)])
        p2 = r * np.array([math.cos(th), math.sin(th)])
        gx, gy = gvec[0], gvec[1]
        g_th = -(self.m1 * (-gx * p1[1] + gy * p1[0]) + self.m2 * (-gx * p2[1] + gy * p2[0]))
        g_r = -self.m2 * (gx * math.cos(th) + gy * math.sin(th))
        return np.array([g_th, g_r])

    def T(self, q, qd):
        return 0.5 * (self.Hbar + self.m2 * q[1] ** 2) * qd[0] ** 2 + 0.5 * self.m2 * qd[1] ** 2

    def U(self, q):
        th, r = q
        a, b = self.c1
        return G0 * (self.m1 * (a * math.sin(th) + b * math.cos(th)) + self.m2 * r * math.sin(th))

    def J(self, q):
        th, r = q
        return np.array([[-r * math.sin(th), math.cos(th)], [r * math.cos(th), math.sin(th)],
                         [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])

    def Jdot_qd(self, q, qd):
        (th, r), (thd, rd) = q, qd
        return np.array([-2 * rd * thd * math.sin(th) - r * thd ** 2 * math.cos(th),
                         2 * rd * thd * math.cos(th) - r * thd ** 2 * math.sin(th), 0, 0, 0, 0])

    def Lambda(self, q):
        th, r = q
        er = np.array([math.cos(th), math.sin(th)])
        et = np.array([-math.sin(th), math.cos(th)])
        return self.m2 * np.outer(er, er) + (self.m2 + self.Hbar / r ** 2) * np.outer(et, et)


# ============================================================== parameter sets
POINT = [dict(m1=1.3, m2=0.8, l1=0.9, l2=0.6), dict(m1=2.0, m2=3.5, l1=0.4, l2=1.1)]
ROD = [dict(m1=1.7, m2=0.9, l1=1.2, l2=0.7), dict(m1=0.5, m2=2.2, l1=0.3, l2=0.8)]
GENERAL = [
    dict(m1=1.4, m2=0.9, l1=0.8, l2=0.5, c1=(0.35, 0.07), c2=(0.2, -0.11), I1=0.021, I2=0.013),
    dict(m1=0.7, m2=1.9, l1=0.5, l2=0.9, c1=(-0.1, 0.2), c2=(0.6, 0.25), I1=0.004, I2=0.05),
]
RPS = [dict(m1=2.1, m2=0.7, c1=(0.25, 0.05), H1=0.03, H2=0.002),
       dict(m1=0.9, m2=1.6, c1=(-0.15, -0.1), H1=0.01, H2=0.02)]


def general_urdf(p, **kw):
    return uf.planar_2r(p["m1"], p["m2"], p["l1"], p["l2"], p["c1"], p["c2"],
                        uf.planar_inertia(p["I1"]), uf.planar_inertia(p["I2"]),
                        inertial_yaw=(0.4, -1.1), **kw)


def arms():
    """(label, URDF, closed form object with M C c g T U J Jdot_qd, tip frame)."""
    out = []
    for k, p in enumerate(POINT):
        out.append((f"point{k}", uf.point_mass_2r(**p),
                    Planar2R(p["m1"], p["m2"], p["l1"], p["l2"], (p["l1"], 0.0), (p["l2"], 0.0),
                             0.0, 0.0), "tip"))
    for k, p in enumerate(ROD):
        out.append((f"rod{k}", uf.rod_2r(**p),
                    Planar2R(p["m1"], p["m2"], p["l1"], p["l2"], (p["l1"] / 2, 0.0),
                             (p["l2"] / 2, 0.0), p["m1"] * p["l1"] ** 2 / 12,
                             p["m2"] * p["l2"] ** 2 / 12), "tip"))
    for k, p in enumerate(GENERAL):
        out.append((f"general{k}", general_urdf(p),
                    Planar2R(p["m1"], p["m2"], p["l1"], p["l2"], p["c1"], p["c2"], p["I1"],
                             p["I2"]), "tip"))
    for k, p in enumerate(RPS):
        out.append((f"rp{k}", uf.rp_arm(**p), RP(**p), "link2"))
    return out


ARMS = arms()


def states(seed, count=N_STATES, rp=False):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-math.pi, math.pi, (count, 2))
    if rp:  # r away from 0 (Lambda is infinite at r = 0), both signs
        q[:, 1] = rng.choice([-1.0, 1.0], count) * rng.uniform(0.2, 1.5, count)
    return q, rng.normal(0, 2.0, (count, 2)), rng.normal(0, 3.0, (count, 2))


def core_model(xml, **kw):
    from manip_dynamics import RobotModel

    return RobotModel.from_urdf_string(xml, gravity=GRAVITY, **kw)


# ============================================================== the references are right
def test_seed_formulas_are_special_cases_of_the_general_2r():
    """LP 8.9 (point masses) and the rod formulas equal the general-COM closed form."""
    q, qd, _ = states(1)
    for p in POINT:
        gen = Planar2R(p["m1"], p["m2"], p["l1"], p["l2"], (p["l1"], 0.0), (p["l2"], 0.0), 0, 0)
        for k in range(N_STATES):
            M, c, g, T, U = lp_point_mass(p["m1"], p["m2"], p["l1"], p["l2"], q[k], qd[k])
            assert_close(M, gen.M(q[k]), 1e-13)
            assert_close(c, gen.c(q[k], qd[k]), 1e-13)
            assert_close(g, gen.g(q[k]), 1e-13)
            assert_close(T, gen.T(q[k], qd[k]), 1e-13)
            assert_close(U, gen.U(q[k]), 1e-13)
    for p in ROD:
        gen = Planar2R(p["m1"], p["m2"], p["l1"], p["l2"], (p["l1"] / 2, 0.0), (p["l2"] / 2, 0.0),
                       p["m1"] * p["l1"] ** 2 / 12, p["m2"] * p["l2"] ** 2 / 12)
        for k in range(N_STATES):
            M, c, g = rods(p["m1"], p["m2"], p["l1"], p["l2"], q[k], qd[k])
            assert_close(M, gen.M(q[k]), 1e-13)
            assert_close(c, gen.c(q[k], qd[k]), 1e-13)
            assert_close(g, gen.g(q[k]), 1e-13)


@pytest.mark.parametrize("label,xml,cf,tip", ARMS, ids=[a[0] for a in ARMS])
def test_closed_forms_agree_with_pinocchio(label, xml, cf, tip):
    """The closed forms and the URDF strings describe the same arm (checked by Pinocchio)."""
    ref = PinocchioReference(xml, gravity=GRAVITY)
    q, qd, qdd = states(2, 10, rp=label.startswith("rp"))
    for k in range(10):
        assert_close(ref.mass_matrix(q[k]), cf.M(q[k]), what="M")
        assert_close(ref.coriolis(q[k], qd[k]), cf.c(q[k], qd[k]), what="c")
        assert_close(cf.C(q[k], qd[k]) @ qd[k], cf.c(q[k], qd[k]), what="C qd")
        Cm = cf.C(q[k], qd[k])
        assert_close(Cm + Cm.T, ref.mass_matrix_rate(q[k], qd[k]), what="C + C^T")
        assert_close(ref.gravity(q[k]), cf.g(q[k]), what="g")
        assert_close(ref.jacobian(q[k], tip), cf.J(q[k]), what="J")
        assert_close(ref.classical_bias(q[k], qd[k], tip), cf.Jdot_qd(q[k], qd[k]), what="Jdot qd")
        assert_close(ref.kinetic_energy(q[k], qd[k]), cf.T(q[k], qd[k]), what="T")
        assert_close(ref.potential_energy(q[k]), cf.U(q[k]), what="U")


def test_rp_lambda_closed_form_is_lp_8_21():
    """RP: the polar closed form equals J^-T M J^-1 (LP 8.21) with the 2x2 planar J."""
    for p in RPS:
        cf = RP(**p)
        q, _, _ = states(3, rp=True)
        for k in range(N_STATES):
            Jp = cf.J(q[k])[:2]
            Jinv = np.linalg.inv(Jp)
            assert_close(cf.Lambda(q[k]), Jinv.T @ cf.M(q[k]) @ Jinv, 1e-12)


# ============================================================== the core against them
@pytest.fixture(scope="module", params=ARMS, ids=[a[0] for a in ARMS])
def arm(request):
    label, xml, cf, tip = request.param
    return label, core_model(xml), cf, tip


def test_joint_space_terms(arm):
    label, model, cf, tip = arm
    q, qd, qdd = states(10, rp=label.startswith("rp"))
    for k in range(N_STATES):
        assert_close(model.mass_matrix(q[k]), cf.M(q[k]), what="M")
        assert_close(model.coriolis_torques(q[k], qd[k]), cf.c(q[k], qd[k]), what="C qd")
        # for n = 2 (qd != 0) C qd = c and C + C^T = dM/dt fix C uniquely: Christoffel's
        assert_close(model.coriolis_matrix(q[k], qd[k]), cf.C(q[k], qd[k]), what="C")
        assert_close(model.gravity_torques(q[k]), cf.g(q[k]), what="g")
        tau = cf.M(q[k]) @ qdd[k] + cf.c(q[k], qd[k]) + cf.g(q[k])
        assert_close(model.inverse_dynamics(q[k], qd[k], qdd[k]), tau, what="tau")
        assert_close(model.forward_dynamics(q[k], qd[k], tau), qdd[k], what="qdd")
        assert_close(model.kinetic_energy(q[k], qd[k]), cf.T(q[k], qd[k]), what="T")
        assert_close(model.potential_energy(q[k]), cf.U(q[k]), what="U")


def test_seed_formulas_directly():
    """The core against the seeds' own (corrected) expressions, not just the general one."""
    q, qd, qdd = states(11)
    for p in POINT:
        model = core_model(uf.point_mass_2r(**p))
        for k in range(N_STATES):
            M, c, g, T, U = lp_point_mass(p["m1"], p["m2"], p["l1"], p["l2"], q[k], qd[k])
            assert_close(model.mass_matrix(q[k]), M)
            assert_close(model.coriolis_torques(q[k], qd[k]), c)
            assert_close(model.gravity_torques(q[k]), g)
            assert_close(model.kinetic_energy(q[k], qd[k]), T)
            assert_close(model.potential_energy(q[k]), U)
    for p in ROD:
        model = core_model(uf.rod_2r(**p))
        for k in range(N_STATES):
            M, c, g = rods(p["m1"], p["m2"], p["l1"], p["l2"], q[k], qd[k])
            assert_close(model.inverse_dynamics(q[k], qd[k], qdd[k]), M @ qdd[k] + c + g)


def test_dynamic_coefficients_of_the_general_2r():
    """Seed 004: with the COMs on the link axes the coefficients are the seed's a1..a5,
    and M, C qd, g of the core are the seed's model written with them."""
    m1, m2, l1, l2, d1, d2, I1, I2 = 1.1, 0.6, 0.7, 0.45, 0.3, 0.2, 0.02, 0.008
    a1 = I1 + m1 * d1 ** 2 + I2 + m2 * d2 ** 2 + m2 * l1 ** 2
    a2 = m2 * l1 * d2
    a3 = I2 + m2 * d2 ** 2
    a4 = G0 * (m1 * d1 + m2 * l1)
    a5 = G0 * m2 * d2
    model = core_model(uf.planar_2r(m1, m2, l1, l2, (d1, 0.0), (d2, 0.0),
                                    uf.planar_inertia(I1), uf.planar_inertia(I2)))
    q, qd, qdd = states(12)
    for k in range(N_STATES):
        (q1, q2), (v1, v2) = q[k], qd[k]
        c2, s2, c1, c12 = math.cos(q2), math.sin(q2), math.cos(q1), math.cos(q1 + q2)
        M = np.array([[a1 + 2 * a2 * c2, a3 + a2 * c2], [a3 + a2 * c2, a3]])
        c = np.array([-a2 * s2 * (v2 ** 2 + 2 * v1 * v2), a2 * s2 * v1 ** 2])
        g = np.array([a4 * c1 + a5 * c12, a5 * c12])
        assert_close(model.mass_matrix(q[k]), M)
        assert_close(model.coriolis_torques(q[k], qd[k]), c)
        assert_close(model.gravity_torques(q[k]), g)
    # a2 = 0 (d2 = 0): constant M, no Coriolis/centrifugal torques, a5 = 0
    model = core_model(uf.planar_2r(m1, m2, l1, l2, (d1, 0.0), (0.0, 0.0),
                                    uf.planar_inertia(I1), uf.planar_inertia(I2)))
    for k in range(5):
        assert_close(model.mass_matrix(q[k]), model.mass_matrix(q[0]), 1e-14)
        assert_close(model.coriolis_torques(q[k], qd[k]), np.zeros(2), 1e-14)
        assert_close(model.gravity_torques(q[k])[1], 0.0, 1e-14)
    # a4 = 0 needs d1 = -m2 l1 / m1 (the seed's "d1 = -l1" is a slip): then g1 = a5 c12
    d1 = -m2 * l1 / m1
    model = core_model(uf.planar_2r(m1, m2, l1, l2, (d1, 0.0), (d2, 0.0),
                                    uf.planar_inertia(I1), uf.planar_inertia(I2)))
    for k in range(5):
        g = model.gravity_torques(q[k])
        assert_close(g, [a5 * math.cos(q[k, 0] + q[k, 1])] * 2)


def test_frame_kinematics(arm):
    label, model, cf, tip = arm
    q, qd, _ = states(13, rp=label.startswith("rp"))
    for k in range(N_STATES):
        assert_close(model.jacobian(q[k], tip), cf.J(q[k]), what="J")
        assert_close(model.frame_bias_acceleration(q[k], qd[k], tip), cf.Jdot_qd(q[k], qd[k]),
                     what="Jdot qd")
        if isinstance(cf, Planar2R):
            assert_close(model.frame_pose(q[k], tip), cf.tip(q[k]), what="pose")


def test_friction(arm):
    """URDF <dynamics damping friction> -> tau_fr = b qd + f_c sign(qd)."""
    label, _, cf, tip = arm
    b, fc = (0.35, 0.12), (0.2, 0.05)
    p = (POINT + ROD + GENERAL + RPS)[[a[0] for a in ARMS].index(label)]
    if label.startswith("rp"):
        xml = uf.rp_arm(**p, damping=b, friction=fc)
    elif label.startswith("point"):
        xml = uf.point_mass_2r(**p, damping=b, friction=fc)
    elif label.startswith("rod"):
        xml = uf.rod_2r(**p, damping=b, friction=fc)
    else:
        xml = general_urdf(p, damping=b, friction=fc)
    model = core_model(xml)
    assert_close(model.viscous, b)
    assert_close(model.coulomb, fc)
    assert_close(model.friction_torques(np.zeros(2)), np.zeros(2), 0.0, what="sign(0) = 0")
    q, qd, qdd = states(14, rp=label.startswith("rp"))
    for k in range(N_STATES):
        fr = np.array(b) * qd[k] + np.array(fc) * np.sign(qd[k])
        assert_close(model.friction_torques(qd[k]), fr, what="tau_fr")
        tau = cf.M(q[k]) @ qdd[k] + cf.c(q[k], qd[k]) + cf.g(q[k])
        assert_close(model.inverse_dynamics(q[k], qd[k], qdd[k]), tau, what="no friction")
        assert_close(model.inverse_dynamics(q[k], qd[k], qdd[k], friction=True), tau + fr)
        assert_close(model.forward_dynamics(q[k], qd[k], tau + fr, friction=True), qdd[k])


def test_external_wrench(arm):
    """Seed 003: Q = tau + J^T F_e - tau_fr, i.e. tau = M qdd + c + g - J^T F_e, with F_e =
    [f; n] at the tip origin in root axes. (J^T F)_i written out for the planar arm."""
    label, model, cf, tip = arm
    rng = np.random.default_rng(15)
    q, qd, qdd = states(15, rp=label.startswith("rp"))
    for k in range(N_STATES):
        F = rng.normal(0, 4.0, 6)
        fx, fy, nz = F[0], F[1], F[5]
        Jm = cf.J(q[k])
        JtF = np.array([fx * Jm[0, i] + fy * Jm[1, i] + nz * Jm[5, i] for i in range(2)])
        tau = cf.M(q[k]) @ qdd[k] + cf.c(q[k], qd[k]) + cf.g(q[k]) - JtF
        assert_close(model.inverse_dynamics(q[k], qd[k], qdd[k], f_ext=F, f_ext_frame=tip), tau)
        assert_close(model.forward_dynamics(q[k], qd[k], tau, f_ext=F, f_ext_frame=tip), qdd[k])


def test_tilted_gravity(arm):
    """Any gravity vector: only its in-plane part does work (g_i formula in Planar2R)."""
    label, model, cf, tip = arm
    gvec = np.array([3.1, -8.2, 4.4])
    tilted = model.with_gravity(gvec)
    assert_close(tilted.gravity, gvec)
    assert_close(model.gravity, GRAVITY)  # the original is untouched
    q, _, _ = states(16, rp=label.startswith("rp"))
    for k in range(N_STATES):
        assert_close(tilted.gravity_torques(q[k]), cf.g_tilted(q[k], gvec))
        assert_close(model.gravity_torques(q[k]), cf.g_tilted(q[k], GRAVITY))


# ============================================================== effective inertia
def planar_A(cf, q):
    """J M^-1 J^T for the 3 translational rows: in-plane 2x2 block, zero out of plane."""
    Jv = cf.J(q)[:3]
    return Jv @ np.linalg.solve(cf.M(q), Jv.T)


def test_effective_inertia_planar(arm):
    """LP 8.21 Lambda = J^-T M J^-1 with the 2x2 planar J, compared with the in-plane block
    of the core's A = J M^-1 J^T (3x3: the out-of-plane row is zero) and with effective
    masses along in-plane unit directions; out of plane the arm cannot be pushed."""
    from manip_dynamics.core.errors import SingularConfigurationError

    label, model, cf, tip = arm
    q, _, _ = states(17, rp=label.startswith("rp"))
    for k in range(N_STATES):
        J2 = cf.J(q[k])[:2]
        if abs(np.linalg.det(J2)) < 1e-3:
            continue
        J2inv = np.linalg.inv(J2)
        Lam = J2inv.T @ cf.M(q[k]) @ J2inv
        if isinstance(cf, RP):
            assert_close(Lam, cf.Lambda(q[k]), 1e-12)
        A = model.inverse_effective_inertia(q[k], tip, linear_only=True)
        assert_close(A, planar_A(cf, q[k]), what="A")
        assert_close(np.linalg.inv(A[:2, :2]), Lam, 1e-9, what="Lambda in plane")
        for ang in (0.0, 0.7, 2.0):
            u = np.array([math.cos(ang + q[k, 0]), math.sin(ang + q[k, 0]), 0.0])
            mu_expected = 1.0 / (u[:2] @ np.linalg.solve(Lam, u[:2]))
            assert_close(model.effective_mass(q[k], tip, u), mu_expected, 1e-9, what="m_u")
        if isinstance(cf, RP):  # radial effective mass is exactly the slider mass
            er = np.array([math.cos(q[k, 0]), math.sin(q[k, 0]), 0.0])
            et = np.array([-math.sin(q[k, 0]), math.cos(q[k, 0]), 0.0])
            assert_close(model.effective_mass(q[k], tip, er), cf.m2, 1e-9)
            assert_close(model.effective_mass(q[k], tip, et), cf.m2 + cf.Hbar / q[k, 1] ** 2, 1e-9)
        with pytest.raises(SingularConfigurationError):
            model.effective_inertia(q[k], tip, linear_only=True)
        with pytest.raises(SingularConfigurationError):
            model.effective_inertia(q[k], tip)
        # design.md: +inf along a singular direction (no force moves a planar arm's tip
        # out of its plane)
        m_z = model.effective_mass(q[k], tip, np.array([0.0, 0.0, 1.0]))
        assert m_z == math.inf, f"out-of-plane effective mass {m_z}"


def test_inertia_ellipsoid_planar(arm):
    label, model, cf, tip = arm
    q, _, _ = states(18, 10, rp=label.startswith("rp"))
    for k in range(10):
        ell = model.inertia_ellipsoid(q[k], tip, linear_only=True)
        A = planar_A(cf, q[k])
        s = np.sort(np.linalg.eigvalsh(A[:2, :2]))
        assert bool(ell.singular)
        ev = np.asarray(ell.eigenvalues)
        assert ev.shape == (3,) and ev[2] == math.inf
        assert_close(ev[:2], np.sort(1.0 / s), 1e-9, what="ellipsoid eigenvalues")
        R = np.asarray(ell.eigenvectors)
        assert_close(R.T @ R, np.eye(3), 1e-12)
        assert abs(np.linalg.det(R) - 1.0) < 1e-12
        assert_close(np.abs(R[:, 2]), [0.0, 0.0, 1.0], 1e-12, what="singular axis is z")


def test_stretched_arm_is_singular_in_plane():
    """q2 = 0: the 2R arm's planar J loses rank too; damped Lambda stays finite and equals
    V diag(s / (s^2 + d^2)) V^T of the closed-form A."""
    from manip_dynamics.core.errors import SingularConfigurationError

    p = GENERAL[0]
    cf = Planar2R(p["m1"], p["m2"], p["l1"], p["l2"], p["c1"], p["c2"], p["I1"], p["I2"])
    model = core_model(general_urdf(p))
    for q1 in (-1.0, 0.3, 2.5):
        q = np.array([q1, 0.0])
        A = planar_A(cf, q)
        assert np.linalg.matrix_rank(A[:2, :2], tol=1e-12) == 1
        assert_close(model.inverse_effective_inertia(q, "tip", linear_only=True), A)
        with pytest.raises(SingularConfigurationError):
            model.effective_inertia(q, "tip", linear_only=True)
        for d in (1e-3, 0.1):
            s, V = np.linalg.eigh(A)
            damped = V @ np.diag(s / (s * s + d * d)) @ V.T
            got = model.effective_inertia(q, "tip", linear_only=True, damping=d)
            assert np.all(np.isfinite(got))
            assert_close(got, damped, 1e-9, what="damped Lambda")
        ell = model.inertia_ellipsoid(q, "tip", linear_only=True)
        assert bool(ell.singular)
        assert np.sum(np.isinf(ell.eigenvalues)) == 2


def test_operational_space_planar(arm):
    """Cartesian state-space equation (seed 003, corrected sign of the Jdot term):
        F = Lambda xdd + mu + p,  mu = Lambda (J M^-1 c - Jdot qd),  p = J^-T g
    (1) the core's damped (Lambda, mu, p) equal the damped closed form; (2) the undamped
    planar closed form, pushed through the core's forward dynamics as tau = J^T F,
    produces exactly the commanded tip acceleration xdd."""
    label, model, cf, tip = arm
    rng = np.random.default_rng(19)
    q, qd, _ = states(19, rp=label.startswith("rp"))
    d = 0.05
    for k in range(N_STATES):
        M, c, g = cf.M(q[k]), cf.c(q[k], qd[k]), cf.g(q[k])
        Jv, a = cf.J(q[k])[:3], cf.Jdot_qd(q[k], qd[k])[:3]
        s, V = np.linalg.eigh(Jv @ np.linalg.solve(M, Jv.T))
        Lam_d = V @ np.diag(s / (s * s + d * d)) @ V.T
        Lam, mu, p = model.operational_space(q[k], qd[k], tip, linear_only=True, damping=d)
        assert_close(Lam, Lam_d, what="damped Lambda")
        assert_close(mu, Lam_d @ (Jv @ np.linalg.solve(M, c) - a), what="damped mu")
        assert_close(p, Lam_d @ Jv @ np.linalg.solve(M, g), what="damped p")
        J2 = Jv[:2]
        if abs(np.linalg.det(J2)) < 1e-2:
            continue
        J2inv = np.linalg.inv(J2)
        Lam2 = J2inv.T @ M @ J2inv
        mu2 = Lam2 @ (J2 @ np.linalg.solve(M, c) - a[:2])
        p2 = J2inv.T @ g
        assert_close(mu2, J2inv.T @ c - Lam2 @ a[:2], 1e-9)  # the seed's V_x, sign fixed
        xdd = rng.normal(0, 2.0, 2)
        F = Lam2 @ xdd + mu2 + p2
        qdd = model.forward_dynamics(q[k], qd[k], J2.T @ F)
        assert_close(J2 @ qdd + a[:2], xdd, 1e-9, what="commanded tip acceleration")
