"""Benchmark: manip_dynamics core vs Pinocchio called from Python, measured in the same run.

Per-state bundle = g, C qd, M, J (tip, LOCAL_WORLD_ALIGNED), Lambda (tip, 6x6):
  ours, separate calls:  gravity_torques, coriolis_torques, mass_matrix, jacobian, effective_inertia
  ours, one call:        compute_all
  Pinocchio:             computeGeneralizedGravity, rnea(q, v, 0) - g, crba,
                         computeFrameJacobian(LOCAL_WORLD_ALIGNED),
                         Lambda = inv(J Minv J^T) with Minv = computeMinverse
                         (np.linalg.inv(crba) where Pinocchio does not support mimic joints)
Batched (N states): our batched calls vs a Python loop of the Pinocchio bundle.

Scaling table (issue 11; ``--scaling``, on by default): per function, our call vs its
Pinocchio counterpart, over the number of joints (UR5 6, Panda 7, Unitree G1 29 and G1
with hands 43, fixed base: example-robot-data's URDFs, whose floating joint is commented
out) and over the batch size N (1, 10, 1000, 100000):

  gravity_torques    vs computeGeneralizedGravity
  coriolis_torques   vs rnea(q, v, 0) on a copy of the model with zero gravity
  mass_matrix        vs crba
  jacobian           vs computeFrameJacobian(LOCAL_WORLD_ALIGNED)
  compute_all        vs the bundle above (rnea, crba, frame Jacobian, M^-1, Lambda)

N = 1 is one call with a single state (ours: a 1-D q); N > 1 is our batched call on an
(N, n) array against a Python loop over Pinocchio. Only the public RobotModel API is used.
Per-state times (us) and ratios ours / Pinocchio (lower is better). On a loaded machine
run it with OPENBLAS_NUM_THREADS=1 too: the core's finite check of (N, n) inputs and outputs
uses np.vdot, which OpenBLAS runs multithreaded above a few thousand entries, and with
the cores busy one such call was seen to take 16-24 ms (a batch of 400-1000 states of the
29-DOF G1 then costs 20-60 us per state instead of the kernel's 4-10 us). Batches whose outputs
would exceed ``--max-gb`` are left out (say so in the table). Bounded: about 1-3 minutes
on a 2-core machine with the defaults (``--batches 1,10,1000`` for a quick look).

Threads: our batched calls (N >= 512) spread their states over numba threads (default: the
CPUs idle at the call; MANIP_DYNAMICS_THREADS=1 for one), the Pinocchio loop is one Python
thread. The scaling
table is measured ``--runs`` times (default 3) and printed as ranges over the runs; the
ratio of a run compares two measurements of that same run.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_core.py [--n-batch 1000]
      [--batches 1,10,1000,100000] [--runs 3] [--no-scaling] [--no-bundle]
Prints times in microseconds per state and the ratios ours / Pinocchio (lower is better).
Goals (issue 3): per-state bundle ratio <= 5 (ambition 1.5); batched per state <= 2x the
Python loop over Pinocchio. Issue 11: single calls within 2x of Pinocchio, compute_all
no slower than the Pinocchio bundle; batched gravity and compute_all at most 0.3x of the
Python loop over Pinocchio.
"""
import argparse
import os
import sys
import time
import warnings

import numba
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from manip_dynamics import RobotModel  # noqa: E402
from manip_dynamics.core.dynamics.launch import get_threads  # noqa: E402

ROBOTS_DIR = os.path.join(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                          "site-packages", "cmeel.prefix", "share", "example-robot-data", "robots")
ROBOTS = {
    "UR5 (6 dof)": ("ur_description/urdf/ur5_robot.urdf", False, "tool0"),
    "Panda (7 dof + mimic fingers)": ("panda_description/urdf/panda.urdf", True, "panda_hand_tcp"),
}
# the scaling table: (label, URDF, mimic, tip frame)
SCALING_ROBOTS = [
    ("UR5", "ur_description/urdf/ur5_robot.urdf", False, "tool0"),
    ("Panda", "panda_description/urdf/panda.urdf", True, "panda_hand_tcp"),
    ("G1", "g1_description/urdf/g1_29dof_rev_1_0.urdf", False, "left_rubber_hand"),
    ("G1 + hands", "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf", False,
     "left_hand_palm_link"),
]
FUNCTIONS = ("gravity_torques", "coriolis_torques", "mass_matrix", "jacobian", "compute_all")


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


def load_pair(rel, mimic):
    """(our RobotModel, Pinocchio model, its Data, q indices, v indices, parse s, warm-up s)
    of one example-robot-data URDF; our joints are mapped to Pinocchio's by name."""
    import pinocchio as pin

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
    ids = [pm.getJointId(j) for j in model.joint_names]
    assert all(pm.joints[i].nq == 1 for i in ids), "continuous joints not handled here"
    iq = np.array([pm.joints[i].idx_q for i in ids])
    iv = np.array([pm.joints[i].idx_v for i in ids])
    return model, pm, pm.createData(), iq, iv, t_parse, t_warm


def pin_states(pm, iq, iv, Q, QD):
    """Our (N, n) states as Pinocchio's (N, nq), (N, nv) (other joints at neutral / rest)."""
    import pinocchio as pin

    QP = np.tile(pin.neutral(pm), (len(Q), 1))
    QP[:, iq] = Q
    VP = np.zeros((len(Q), pm.nv))
    VP[:, iv] = QD
    return QP, VP


def pin_functions(pm, pd, tip):
    """{name: f(qp, vp)}: Pinocchio's counterpart of each of our FUNCTIONS."""
    import pinocchio as pin

    fid = pm.getFrameId(tip)
    zero_v = np.zeros(pm.nv)
    pm0 = pin.Model(pm)                       # C(q, v) v = rnea(q, v, 0) without gravity
    pm0.gravity.linear[:] = 0.0
    pd0 = pm0.createData()
    try:
        pin.computeMinverse(pm, pd, pin.neutral(pm))
        minv = pin.computeMinverse
    except RuntimeError:       # mimic joints: not supported by computeMinverse
        def minv(pm, pd, q):
            return np.linalg.inv(pd.M)

    def bundle(qp, vp):
        g = pin.computeGeneralizedGravity(pm, pd, qp)
        c = pin.rnea(pm, pd, qp, vp, zero_v) - g
        M = pin.crba(pm, pd, qp)
        J = pin.computeFrameJacobian(pm, pd, qp, fid, pin.LOCAL_WORLD_ALIGNED)
        Mi = minv(pm, pd, qp)
        Lam = np.linalg.inv(J @ Mi @ J.T)
        return g, c, M, J, Lam

    return {
        "gravity_torques": lambda qp, vp: pin.computeGeneralizedGravity(pm, pd, qp),
        "coriolis_torques": lambda qp, vp: pin.rnea(pm0, pd0, qp, vp, zero_v),
        "mass_matrix": lambda qp, vp: pin.crba(pm, pd, qp),
        "jacobian": lambda qp, vp: pin.computeFrameJacobian(pm, pd, qp, fid,
                                                            pin.LOCAL_WORLD_ALIGNED),
        "compute_all": bundle,
    }


def our_functions(model, tip):
    """{name: f(q, qd)} over our public API, for one state or an (N, n) batch."""
    return {
        "gravity_torques": lambda q, qd: model.gravity_torques(q),
        "coriolis_torques": lambda q, qd: model.coriolis_torques(q, qd),
        "mass_matrix": lambda q, qd: model.mass_matrix(q),
        "jacobian": lambda q, qd: model.jacobian(q, tip),
        "compute_all": lambda q, qd: model.compute_all(q, qd, tip),
    }


def check_agree(model, ours, theirs, q, qd, qp, vp, iv):
    """Max difference of our FUNCTIONS and Pinocchio's at one state (relative for Lambda):
    the two sides must agree before their times mean anything."""
    g, c, M, J, Lam = theirs["compute_all"](qp, vp)
    terms = ours["compute_all"](q, qd)
    M = np.triu(M) + np.triu(M, 1).T        # crba may fill only the upper triangle
    errs = [np.abs(terms.g - g[iv]).max(), np.abs(terms.c - c[iv]).max(),
            np.abs(terms.M - M[np.ix_(iv, iv)]).max(), np.abs(terms.J - J[:, iv]).max(),
            np.abs(terms.Lambda - Lam).max() / np.abs(Lam).max(),
            np.abs(ours["coriolis_torques"](q, qd) - theirs["coriolis_torques"](qp, vp)[iv]).max()]
    return max(errs)


def output_bytes(name, n, N):
    """Bytes of our outputs for N states (compute_all: g, c, M, J, A, Lambda)."""
    per = {"gravity_torques": n, "coriolis_torques": n, "mass_matrix": n * n,
           "jacobian": 6 * n, "compute_all": 2 * n + n * n + 6 * n + 72}[name]
    return 8 * per * N


def time_per_state(fn, N):
    """Best time per state (s): best_time for small N, fewer repetitions for large N."""
    if N >= 100_000:
        return best_time(fn, repeat=1, min_time=0.0) / N
    if N >= 1000:
        return best_time(fn, repeat=5, min_time=0.3) / N
    # many short samples: on a loaded machine the best one is the least disturbed
    return best_time(fn, repeat=25, min_time=0.1) / N


def scaling_run(batches, max_gb, rng, header):
    """One run of the scaling table: {(label, function, N): (t_ours, t_pin) per state (s)};
    the robots' headers (n, tip, agreement) go into ``header`` (label -> str)."""
    cells = {}
    for label, rel, mimic, tip in SCALING_ROBOTS:
        model, pm, pd, iq, iv, _, _ = load_pair(rel, mimic)
        ours, theirs = our_functions(model, tip), pin_functions(pm, pd, tip)
        Nmax = max(batches)
        Q = rng.uniform(-1.5, 1.5, (Nmax, model.n))
        QD = rng.normal(size=(Nmax, model.n))
        QP, VP = pin_states(pm, iq, iv, Q, QD)
        err = check_agree(model, ours, theirs, Q[0], QD[0], QP[0], VP[0], iv)
        assert err < 1e-8, f"{label}: ours and Pinocchio disagree by {err}"
        header[label] = f"{label}: n={model.n}, tip={tip}, max |ours - pin| {err:.1e}"
        for name in FUNCTIONS:
            for N in batches:
                if output_bytes(name, model.n, N) > max_gb * 1e9:
                    continue
                f, p = ours[name], theirs[name]
                if N == 1:
                    q, qd, qp, vp = Q[0], QD[0], QP[0], VP[0]
                    t_ours = time_per_state(lambda: f(q, qd), 1)
                    t_pin = time_per_state(lambda: p(qp, vp), 1)
                else:
                    Qn, QDn, QPn, VPn = Q[:N], QD[:N], QP[:N], VP[:N]

                    def pin_loop():
                        for k in range(N):
                            p(QPn[k], VPn[k])

                    t_ours = time_per_state(lambda: f(Qn, QDn), N)
                    t_pin = time_per_state(pin_loop, N)
                cells[label, name, N] = (t_ours, t_pin)
        print(f"  measured {label}", flush=True)
    return cells


def _span(values, fmt):
    """'lo-hi' (or one value) of the runs' values."""
    lo, hi = min(values), max(values)
    return fmt % lo if fmt % lo == fmt % hi else f"{fmt % lo}-{fmt % hi}"


def print_scaling(runs, batches, max_gb, header):
    """The scaling table over the runs: per cell the range of ours, Pinocchio (us per state)
    and of the ratio ours / Pinocchio measured in the same run."""
    print(f"Scaling over {len(runs)} run(s): per-state time in us, ours / Pinocchio as ranges "
          "over the runs (N = 1: one call each; N > 1: our batched call vs a Python loop over "
          "Pinocchio)")
    for label, _, _, _ in SCALING_ROBOTS:
        print(f"\n{header[label]}")
        print(f"  {'function':<17s}" + "".join(f" | N={N:<32d}" for N in batches))
        for name in FUNCTIONS:
            row = []
            for N in batches:
                vals = [r[label, name, N] for r in runs if (label, name, N) in r]
                if not vals:
                    row.append(f" | {'(outputs > %g GB: not run)' % max_gb:<34s}")
                    continue
                ours = _span([v[0] * 1e6 for v in vals], "%.2f")
                pin = _span([v[1] * 1e6 for v in vals], "%.2f")
                ratio = _span([v[0] / v[1] for v in vals], "%.2f")
                row.append(f" | {ours:>11s} {pin:>11s} {ratio:>10s}")
            print(f"  {name:<17s}{''.join(row)}", flush=True)
    print("  (each cell: ours us, Pinocchio us, ratio ours / Pinocchio)\n")


def bundle_tables(n_batch, rng):
    """The per-robot bundle tables (issue 3): one state and one batch of n_batch states."""
    import pinocchio as pin

    print(f"pinocchio {pin.__version__}, numpy {np.__version__}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}; times in us per state\n")
    for label, (rel, mimic, tip) in ROBOTS.items():
        model, pm, pd, iq, iv, t_parse, t_warm = load_pair(rel, mimic)
        pin_bundle = pin_functions(pm, pd, tip)["compute_all"]
        N = n_batch
        Q = rng.uniform(-1.5, 1.5, (N, model.n))
        QD = rng.normal(size=(N, model.n))
        QP, VP = pin_states(pm, iq, iv, Q, QD)
        q, qd, qp, vp = Q[0], QD[0], QP[0], VP[0]
        err = check_agree(model, our_functions(model, tip), pin_functions(pm, pd, tip),
                          q, qd, qp, vp, iv)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-batch", type=int, default=1000, help="batch of the bundle tables")
    ap.add_argument("--batches", default="1,10,1000,100000",
                    help="batch sizes of the scaling table (comma-separated)")
    ap.add_argument("--max-gb", type=float, default=2.0,
                    help="leave out scaling cells whose outputs exceed this many GB")
    ap.add_argument("--no-scaling", action="store_true", help="skip the scaling table")
    ap.add_argument("--no-bundle", action="store_true", help="skip the bundle tables")
    ap.add_argument("--runs", type=int, default=3,
                    help="runs of the scaling table, reported as ranges (default 3)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    print(f"threads: {get_threads()} (numba {numba.config.NUMBA_NUM_THREADS}, layer "
          f"{numba.config.THREADING_LAYER}; MANIP_DYNAMICS_THREADS="
          f"{os.environ.get('MANIP_DYNAMICS_THREADS', '(unset)')}); load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    if not args.no_bundle:
        bundle_tables(args.n_batch, rng)
    if not args.no_scaling:
        batches = [int(b) for b in args.batches.split(",")]
        header, runs = {}, []
        for run in range(args.runs):
            print(f"scaling run {run + 1} of {args.runs}", flush=True)
            runs.append(scaling_run(batches, args.max_gb, rng, header))
        print_scaling(runs, batches, args.max_gb, header)
    print(f"total time {time.perf_counter() - t0:.0f} s; load average now "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
