"""Benchmark: manip_dynamics core vs Pinocchio called from Python, measured in the same run.

Per-state bundle = g, C qd, M, J (tip, LOCAL_WORLD_ALIGNED), Lambda (tip, 6x6):
  ours, separate calls:  gravity_torques, coriolis_torques, mass_matrix, jacobian, effective_inertia
  ours, one call:        compute_all
  Pinocchio:             computeGeneralizedGravity, rnea(q, v, 0) - g, crba,
                         computeFrameJacobian(LOCAL_WORLD_ALIGNED),
                         Lambda = inv(J Minv J^T) with Minv = computeMinverse
                         (np.linalg.inv(crba) where Pinocchio does not support mimic joints)
Batched (N states): our batched calls vs a Python loop of the Pinocchio bundle.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_core.py [--n-batch 1000]
Prints times in microseconds per state and the ratios ours / Pinocchio (lower is better).
Goals (issue 3): per-state bundle ratio <= 5 (ambition 1.5); batched per state <= 2x the
Python loop over Pinocchio.
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from manip_dynamics import RobotModel  # noqa: E402

ROBOTS_DIR = os.path.join(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                          "site-packages", "cmeel.prefix", "share", "example-robot-data", "robots")
ROBOTS = {
    "UR5 (6 dof)": ("ur_description/urdf/ur5_robot.urdf", False, "tool0"),
    "Panda (7 dof + mimic fingers)": ("panda_description/urdf/panda.urdf", True, "panda_hand_tcp"),
}


def best_time(fn, repeat=7, min_time=0.2):
    """Best-of-`repeat` time per call (s), each sample looping for at least ~min_time/repeat."""
    fn()
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t
        if dt > min_time / repeat:
            break
        n *= 2
    best = dt / n
    for _ in range(repeat - 1):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-batch", type=int, default=1000)
    args = ap.parse_args()
    import pinocchio as pin

    rng = np.random.default_rng(0)
    print(f"pinocchio {pin.__version__}, numpy {np.__version__}; times in us per state\n")
    for label, (rel, mimic, tip) in ROBOTS.items():
        path = os.path.join(ROBOTS_DIR, rel)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = RobotModel.from_urdf_file(path)
        t_parse = time.perf_counter() - t0
        t0 = time.perf_counter()
        model.warm_up()
        t_warm = time.perf_counter() - t0

        pm = pin.buildModelFromUrdf(path, mimic=True) if mimic else pin.buildModelFromUrdf(path)
        pd = pm.createData()
        fid = pm.getFrameId(tip)
        ids = [pm.getJointId(j) for j in model.joint_names]
        assert all(pm.joints[i].nq == 1 for i in ids), "continuous joints not handled here"
        iq = np.array([pm.joints[i].idx_q for i in ids])
        iv = np.array([pm.joints[i].idx_v for i in ids])
        try:
            pin.computeMinverse(pm, pd, pin.neutral(pm))
            minv = pin.computeMinverse
        except RuntimeError:       # mimic joints: not supported by computeMinverse
            def minv(pm, pd, q):
                return np.linalg.inv(pd.M)
        zero_v = np.zeros(pm.nv)

        def pin_bundle(qp, vp):
            g = pin.computeGeneralizedGravity(pm, pd, qp)
            c = pin.rnea(pm, pd, qp, vp, zero_v) - g
            M = pin.crba(pm, pd, qp)
            J = pin.computeFrameJacobian(pm, pd, qp, fid, pin.LOCAL_WORLD_ALIGNED)
            Mi = minv(pm, pd, qp)
            Lam = np.linalg.inv(J @ Mi @ J.T)
            return g, c, M, J, Lam

        N = args.n_batch
        Q = rng.uniform(-1.5, 1.5, (N, model.n))
        QD = rng.normal(size=(N, model.n))
        QP = np.tile(pin.neutral(pm), (N, 1))
        QP[:, iq] = Q
        VP = np.zeros((N, pm.nv))
        VP[:, iv] = QD
        q, qd, qp, vp = Q[0], QD[0], QP[0], VP[0]

        # the two sides must agree before their times mean anything
        g, c, M, J, Lam = pin_bundle(qp, vp)
        terms = model.compute_all(q, qd, tip)
        err = max(np.abs(terms.g - g[iv]).max(), np.abs(terms.c - c[iv]).max(),
                  np.abs(terms.M - M[np.ix_(iv, iv)]).max(), np.abs(terms.J - J[:, iv]).max(),
                  np.abs(terms.Lambda - Lam).max() / np.abs(Lam).max())
        assert err < 1e-8, f"ours and Pinocchio disagree by {err}"

        def ours_separate():
            model.gravity_torques(q)
            model.coriolis_torques(q, qd)
            model.mass_matrix(q)
            model.jacobian(q, tip)
            model.effective_inertia(q, tip)

        t_pin = best_time(lambda: pin_bundle(qp, vp))
        t_sep = best_time(ours_separate)
        t_all = best_time(lambda: model.compute_all(q, qd, tip))

        def pin_loop():
            for k in range(N):
                pin_bundle(QP[k], VP[k])

        def ours_batch_separate():
            model.gravity_torques(Q)
            model.coriolis_torques(Q, QD)
            model.mass_matrix(Q)
            model.jacobian(Q, tip)
            model.effective_inertia(Q, tip)

        def ours_loop():
            for k in range(N):
                model.compute_all(Q[k], QD[k], tip)

        tb_pin = best_time(pin_loop, repeat=3) / N
        tb_sep = best_time(ours_batch_separate, repeat=3) / N
        tb_all = best_time(lambda: model.compute_all(Q, QD, tip), repeat=3) / N
        tb_ours_loop = best_time(ours_loop, repeat=3) / N

        print(f"== {label}: n={model.n}, tip={tip}; parse {t_parse * 1e3:.1f} ms, "
              f"warm_up (numba compile or cache load) {t_warm:.2f} s; max |ours - pin| {err:.1e}")
        rows = [
            ("single state: Pinocchio bundle", t_pin, None),
            ("single state: ours, 5 separate calls", t_sep, t_pin),
            ("single state: ours, compute_all", t_all, t_pin),
            (f"batch N={N}: Python loop over Pinocchio bundle", tb_pin, None),
            (f"batch N={N}: ours, 5 separate batched calls", tb_sep, tb_pin),
            (f"batch N={N}: ours, batched compute_all", tb_all, tb_pin),
            (f"batch N={N}: Python loop over ours compute_all", tb_ours_loop, tb_pin),
        ]
        for name, t, ref in rows:
            ratio = f"ratio {t / ref:6.2f}" if ref else ""
            print(f"  {name:<52s} {t * 1e6:9.2f} us  {ratio}")
        print(f"  batching speed-up over a Python loop of ours: {tb_ours_loop / tb_all:.1f}x\n")


if __name__ == "__main__":
    main()
