"""Closed-form equations of motion of a serial chain, by the Lagrangian (Jacobian) form.

    tau = M(q) qdd + C(q, qd) qd + g(q) + tau_fr(qd) - J(q)^T F

the core's convention (:mod:`manip_dynamics.core.dynamics.model`): g on the left-hand side (the
torque that holds the arm still), ``F = [f; n]`` the wrench applied TO the arm at the tip
frame's origin in ROOT axes, ``J`` (6, n) its Jacobian ``[v; w]`` in root axes.

* ``M = sum_i m_i J_vi^T J_vi + J_wi^T R_i I_i R_i^T J_wi`` (seed 003, step 7), ``J_vi =
  d p_ci / dq`` the Jacobian of body i's centre of mass ``p_ci`` (m) and ``J_wi`` its
  angular-velocity Jacobian (world axes of the revolute joints up to i), R_i its rotation.
* Christoffel symbols ``c_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)``,
  ``C_ij = sum_k c_ijk qd_k`` (so dM/dt - 2C is skew-symmetric).
* ``g = dP/dq``, ``P = -sum_i m_i g_vec^T p_ci`` (zero at the root origin).
* the armature ``Ia`` (a side file's, or ``armature=``): ``M + diag(Ia)``.
* ``tau_fr = b qd + fc sign(qd)`` from ``<dynamics damping friction>``; with a side file
  its friction model (core ``friction_torque``): ``b qd + c(qd) s(qd) + f0``, c = fc for
  qd > 0, fcn for qd < 0 (a Piecewise where they differ), s = tanh(qd / width) where the
  width is > 0, else sign(qd).

Rotations are multiplied with the sin/cos products of parallel axes folded into sines and
cosines of sums (sympy's ``fu`` rule TR10i: ``c1 c2 - s1 s2 -> cos(q1 + q2)``) as they are
built. ``simplify=True`` then runs ``trigsimp`` on every entry of M, C qd and g, with
progress and inside the time limit (:mod:`.budget`). Derivatives (J_vi, the Christoffel
symbols, g, J) and the matrix products of M, C qd and J^T F go through :mod:`.algebra`: the
expressions ``sp.diff`` and ``A * B`` give, without their assumption queries (4-5 times
faster on 5-6 joints).
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import sympy as sp

from .algebra import derivative, jacobian, matmul
from .budget import Budget
from .chain import Chain, serial_chain, snap


@dataclass(frozen=True)
class Equations:
    """The derived terms (sympy). q, qd: (n,) symbols ``q_i``, ``qd_i``; M (n, n); christoffel
    [i][j][k] = c_ijk; C (n, n); Cqd (n, 1) = C qd; g (n, 1); tau_fr (n, 1); J (6, n) of the
    tip; F (6, 1) symbols ``f_x .. n_z``; JTF (n, 1) = J^T F; chain: the :class:`Chain`
    (names, parameter values); simplified: whether ``trigsimp`` ran."""

    chain: Chain
    q: tuple
    qd: tuple
    M: sp.Matrix
    christoffel: list
    C: sp.Matrix
    Cqd: sp.Matrix
    g: sp.Matrix
    tau_fr: sp.Matrix
    J: sp.Matrix
    F: sp.Matrix
    JTF: sp.Matrix
    simplified: bool

    @property
    def n(self):
        return len(self.q)

    @property
    def parameters(self):
        """Parameter symbols (sorted by name) and their URDF values."""
        return dict(sorted(self.chain.values.items(), key=lambda kv: kv[0].name))

    def numeric(self):
        """A copy with every parameter symbol replaced by its URDF value."""
        sub = {s: sp.Float(v) for s, v in self.chain.values.items()}

        def num(x):
            return x.xreplace(sub) if sub else x

        return Equations(
            chain=self.chain, q=self.q, qd=self.qd, M=num(self.M),
            christoffel=[[[num(c) for c in row] for row in plane] for plane in self.christoffel],
            C=num(self.C), Cqd=num(self.Cqd), g=num(self.g), tau_fr=num(self.tau_fr),
            J=num(self.J), F=self.F, JTF=num(self.JTF), simplified=self.simplified)


def rotation(axis, angle):
    """R (3, 3) of a rotation by ``angle`` about the unit ``axis`` (numbers): the plain
    matrix for +-x, +-y, +-z, else Rodrigues' ``I + sin a [k]x + (1 - cos a) [k]x^2``."""
    c, s = sp.cos(angle), sp.sin(angle)
    for k in range(3):
        if axis[k] in (1, -1) and all(axis[j] == 0 for j in range(3) if j != k):
            sk = s * axis[k]
            i, j = (k + 1) % 3, (k + 2) % 3
            R = sp.eye(3)
            R[i, i], R[j, j], R[i, j], R[j, i] = c, c, -sk, sk
            return R
    K = sp.Matrix([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return sp.eye(3) + s * K + (1 - c) * K * K


_PARALLEL = 1e-15      # |a x b| below which unit axes are parallel (as chain.snap's 1e-15)


def _same_axis(a, b):
    """+1 / -1 if the numeric unit vectors a and b are parallel / opposite, else 0.

    Parallel means the angle between them is zero to double precision (|a x b| <= 1e-15;
    a dot-product test ``a.b > 1 - eps`` would take angles up to sqrt(2 eps) as zero): an
    rpy typed 1.5707963 or 3.1415926 leaves an angle of ~1e-8 rad between the axes, which is
    kept (the rotations are not merged), so the equations are those of the URDF's numbers,
    not of a nearby arm."""
    a = [float(x) for x in a]
    b = [float(x) for x in b]
    cross = (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])
    if max(abs(x) for x in cross) > _PARALLEL:
        return 0
    return 1 if sum(x * y for x, y in zip(a, b)) > 0 else -1


class _Rotation:
    """R = R_prefix Rot(axis, angle) built along the chain, with rotations about parallel
    axes merged into one rotation by the sum of their angles (exact algebra, no trig
    simplification): Rot(a, t) R_tree = R_tree Rot(R_tree^T a, t), and Rot(a, t) Rot(a, u)
    = Rot(a, t + u). A planar arm thus gets cos(q_1 + q_2) directly."""

    def __init__(self):
        self.prefix, self.axis, self.angle = sp.eye(3), None, sp.S.Zero

    def then_fixed(self, R_tree):
        """Append a constant rotation: the pending axis is carried through it."""
        self.prefix = matmul(self.prefix, R_tree)
        if self.axis is not None:
            self.axis = _snapped(R_tree.T * self.axis)

    def then_joint(self, axis, angle):
        """Append Rot(axis, angle): merged with the pending rotation when the axes are parallel."""
        same = 0 if self.axis is None else _same_axis(self.axis, axis)
        if same:
            self.axis, self.angle = axis, same * self.angle + angle
            return
        self.prefix = self.matrix()
        self.axis, self.angle = axis, angle

    def matrix(self):
        if self.axis is None:
            return self.prefix
        return matmul(self.prefix, rotation(self.axis, self.angle))


def _snapped(v):
    return sp.Matrix([snap(x) for x in v])


def _forward(chain, q, budget):
    """[(R_i, p_i)] of every body (root axes) and the (3, n) angular Jacobians J_wi."""
    n = chain.n
    rot, R, p = _Rotation(), sp.eye(3), sp.zeros(3, 1)
    Jw = sp.zeros(3, n)
    poses, Jws = [], []
    for i, body in enumerate(chain.bodies):
        budget.step("forward kinematics", i + 1, len(chain.bodies))
        p = p + matmul(R, body.p_tree)
        rot.then_fixed(body.R_tree)
        R = rot.matrix()
        if body.kind == "revolute":
            Jw = Jw.copy()
            Jw[:, body.q_index] = matmul(R, body.axis)
            rot.then_joint(body.axis, q[body.q_index])
            R = rot.matrix()
        elif body.kind == "prismatic":
            p = p + matmul(R, body.axis) * q[body.q_index]
        poses.append((R, p))
        Jws.append(Jw)
    return poses, Jws


def _mass_matrix(chain, q, poses, Jws, budget, memo):
    """M (n, n) = sum_i m_i J_vi^T J_vi + J_wi^T R_i I_i R_i^T J_wi; and the com positions.
    memo: :func:`.algebra.derivative`'s."""
    M = sp.zeros(chain.n, chain.n)
    coms = []
    for i, (body, (R, p), Jw) in enumerate(zip(chain.bodies, poses, Jws)):
        budget.step("mass matrix", i + 1, len(chain.bodies))
        pc = p + matmul(R, body.com)
        coms.append(pc)
        if body.mass != 0:
            Jv = jacobian(pc, q, memo)
            M += matmul(body.mass * Jv.T, Jv)
        if body.I_com != sp.zeros(3, 3):
            Jw_body = matmul(R.T, Jw)                 # angular velocity in body axes
            M += matmul(matmul(Jw_body.T, body.I_com), Jw_body)
    return M, coms


def _simplify_entries(A, budget, stage, symmetric=False):
    """trigsimp of every entry of A, with progress (the upper triangle when symmetric)."""
    A = A.copy()
    cells = [(r, c) for r in range(A.rows) for c in range(A.cols) if not symmetric or c >= r]
    for k, (r, c) in enumerate(cells):
        budget.step(stage, k + 1, len(cells))
        A[r, c] = sp.factor_terms(sp.trigsimp(A[r, c]))
        if symmetric:
            A[c, r] = A[r, c]
    return A


def christoffel_symbols(M, q, budget, memo=None):
    """c[i][j][k] = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i), each derivative taken once
    (:func:`.algebra.derivative`: the expressions of ``sp.diff``, faster; memo: its
    cache, shared with the derivation's other derivatives)."""
    n = len(q)
    memo = {} if memo is None else memo
    dM = {}
    for k in range(n):
        budget.step("dM/dq", k + 1, n)
        for i in range(n):
            for j in range(i, n):
                dM[i, j, k] = dM[j, i, k] = derivative(M[i, j], q[k], memo)
    return [[[(dM[i, j, k] + dM[i, k, j] - dM[j, k, i]) / 2 for k in range(n)]
             for j in range(n)] for i in range(n)]


def _potential_gravity(chain, q, coms, budget, memo):
    """g (n, 1) = dP/dq, P = -sum_i m_i g_vec^T p_ci."""
    budget.step("gravity")
    P = sum((-body.mass * matmul(chain.gravity.T, pc)[0, 0]
             for body, pc in zip(chain.bodies, coms)), sp.S.Zero)
    return sp.Matrix([derivative(P, qk, memo) for qk in q])


def _tip_jacobian(chain, q, poses, Jws, memo):
    """J (6, n) = [d p_tip/dq; J_w] of the tip frame's origin, root axes."""
    if chain.tip_body < 0:
        return sp.zeros(6, chain.n)
    R, p = poses[chain.tip_body]
    p_tip = p + matmul(R, chain.X_tip[:3, 3])
    return sp.Matrix.vstack(jacobian(p_tip, q, memo), Jws[chain.tip_body])


def _friction(chain, i, v):
    """tau_fr of coordinate i at qd = v (module docstring)."""
    width = chain.width[i] if chain.width else 0.0
    s = sp.tanh(v / sp.Float(width)) if width > 0 else sp.sign(v)
    c = chain.coulomb[i]
    if chain.coulomb_negative and chain.coulomb_negative[i] != c:
        c = sp.Piecewise((c, v > 0), (chain.coulomb_negative[i], True))
    return chain.viscous[i] * v + c * s + (chain.offset[i] if chain.offset else 0)


def derive(chain_or_xml, simplify=False, time_limit=None, progress=None, budget=None,
           **chain_options):
    """Equations of ``chain_or_xml`` (a :class:`Chain` or URDF text; ``chain_options`` go to
    :func:`serial_chain`: tip, joints, gravity, symbolic_parameters, max_joints).

    simplify: ``trigsimp`` every entry of M, C qd and g. time_limit: seconds (None = none),
    raises DerivationTimeout naming the stage; progress: callback(stage, done, total,
    elapsed_s). budget: a running :class:`.budget.Budget` to use instead (time_limit and
    progress are then ignored), so a caller's limit covers more than the derivation (the
    command line's covers the printing too). Returns :class:`Equations`."""
    chain = chain_or_xml if isinstance(chain_or_xml, Chain) else serial_chain(
        chain_or_xml, **chain_options)
    n = chain.n
    q = tuple(sp.Symbol(f"q_{i + 1}", real=True) for i in range(n))
    qd = tuple(sp.Symbol(f"qd_{i + 1}", real=True) for i in range(n))
    with Budget(time_limit, progress) if budget is None else nullcontext(budget) as budget:
        poses, Jws = _forward(chain, q, budget)
        memo = {}                               # d(subexpression)/dq_k, computed once
        M, coms = _mass_matrix(chain, q, poses, Jws, budget, memo)
        for i, a in enumerate(chain.armature):
            M[i, i] += a
        if simplify:
            M = _simplify_entries(M, budget, "simplifying M", symmetric=True)
        c = christoffel_symbols(M, q, budget, memo)
        C = sp.Matrix(n, n, lambda i, j: sum(c[i][j][k] * qd[k] for k in range(n)))
        Cqd = matmul(C, sp.Matrix(qd))
        g = _potential_gravity(chain, q, coms, budget, memo)
        if simplify:
            Cqd = _simplify_entries(Cqd, budget, "simplifying C qd")
            g = _simplify_entries(g, budget, "simplifying g")
        J = _tip_jacobian(chain, q, poses, Jws, memo)
        budget.step("done")
    F = sp.Matrix(sp.symbols("f_x f_y f_z n_x n_y n_z", real=True))
    tau_fr = sp.Matrix([_friction(chain, i, v) for i, v in enumerate(qd)])
    return Equations(chain=chain, q=q, qd=qd, M=M, christoffel=c, C=C, Cqd=Cqd, g=g,
                     tau_fr=tau_fr, J=J, F=F, JTF=matmul(J.T, F),
                     simplified=bool(simplify))
