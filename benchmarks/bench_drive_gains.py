"""Drive gains of the real UR10e from its unloaded/loaded pairs, how certain they are against
the authors', and the load estimated back (docs/identification.md section 16).

Data: shared/data/ur10e-mamedov2020 (Mamedov et al. 2020; not in the repository, found by
test/shared_data.py), identification_data/: ur-20_02_19_14harm50sec(Load) with the authors'
windows, ur-20_02_19_15harm50sec(Load) and ur-20_01_31-unload/-load whole (2.805 kg), and
ur-19_12_23_free / ur-20_01_13-load_2600 whole (the same path three weeks apart; the load
"2600" by the file's name, 2.6 kg, not confirmed by the README). Motor currents as recorded,
filtered at 5 Hz (default decimation: 25 Hz). Prints:

1. per pair the gains (N m/A, drive_gains.estimate_drive_gains, no bound), their standard
   deviation with the residual taken as white (s^2 (J^T J)^-1, what the estimator reported
   before) and as it reports it now, block-robust over 2 s blocks (the residual of filtered
   data is correlated in time; a moving-block bootstrap, 100 resamples of 2 s blocks, gave
   the same within ~30%), the ratio to the authors' gains, and how many robust sigmas each
   gain lies outside the +-10% box around the authors';
2. UR's controller's own current-to-torque constants: its target torque (columns 26-31) over
   its target current (20-25) at the joints at rest in jointwise_motion/ (least squares with
   an offset; exact to 3e-4 N m where the joint holds a varying load; none for wrist 3,
   which holds almost nothing);
3. the load from each pair (estimate_payload_from_pair, the arm re-fitted, min_speed 0.05)
   with the first pair's gains, the authors' and the controller's (wrist 3: the authors');
4. the authors' formulation: the two runs stacked with the arm's model shared, the gains as
   unknowns of the linear form k_j i_j = W_j beta + E_j phi + Yf_j pi_L (ordinary and
   per-joint weighted least squares), with K1 free and with K1 fixed at their bound 10;
5. with --variants (about 3 min of CPU): the gains with the difference equation extended by
   what could bias them: a change of friction between the runs (per joint offset, viscous,
   Coulomb columns in current units), a load-dependent friction (the load's torque scaled by
   1 + e_j sign(i_u,j qd_j): a gearbox efficiency, power flowing in or out), the load's
   centre of mass held on the flange's axis.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_drive_gains.py [--variants]
"""
import os
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "test")]

import numpy as np  # noqa: E402

from manip_dynamics import RobotModel  # noqa: E402
from manip_dynamics.core.identification import csv_log  # noqa: E402
from manip_dynamics.core.identification import drive_gains as D  # noqa: E402
from manip_dynamics.core.identification import regressor as R  # noqa: E402
from manip_dynamics.core.identification.pipeline import filter_recording  # noqa: E402
from shared_data import missing_reason, shared_data  # noqa: E402

AUTHORS = np.array([10.0, 10.6956, 8.4566, 9.0029, 9.4800, 10.1232])
LOAD = 2.805
PAIRS = {"14harm (their windows)": (("ur-20_02_19_14harm50sec.csv", (195, 4966)),
                                    ("ur-20_02_19_14harm50secLoad.csv", (308, 5071))),
         "15harm": (("ur-20_02_19_15harm50sec.csv", None),
                    ("ur-20_02_19_15harm50secLoad.csv", None)),
         "01_31": (("ur-20_01_31-unload.csv", None), ("ur-20_01_31-load.csv", None))}
OTHER = {"12_23 / 01_13 (2.6 kg)": (("ur-19_12_23_free.csv", None),
                                    ("ur-20_01_13-load_2600.csv", None))}
OTHER_LOAD = 2.6
BLOCK = 2.0                     # s, the blocks of the robust standard deviation
BOX = 0.10


def run(data, model, name, rows):
    columns = csv_log.ColumnMap.from_mapping(csv_log.parse_inline(
        "t=1,q=2:7,qd=8:13,effort=14:19")).replace(rows=rows)
    log = csv_log.read_csv_joint_states(data / "identification_data" / name, columns,
                                        model.joint_names)
    return filter_recording(log.t, log.position, log.velocity, log.effort, cutoff=5.0)


def difference(model, u, l):
    """(Yf (N, n, 10) at tool0, di (N, n) A, dt s) of the aligned pair."""
    u, l, _, _ = D.align_pair(u, l)
    return (R.frame_regressor(model, u.q, u.qd, u.qdd, "tool0"), l.tau - u.tau,
            float(np.median(np.diff(u.t))))


def white_std(model, u, l, fit, mass):
    """The standard deviations (n,) of ``fit``'s gains (estimate_drive_gains on this pair) as
    the estimator reported them before it took them block-robust: the residual r = (di -
    Yf [m; p] / k) / s taken as white, s^2 (J^T J)^-1, J its Jacobian in [p, k] (as
    drive_gains._difference_gains forms them)."""
    Yf, di, _ = difference(model, u, l)
    N, n = di.shape
    k, s = fit.gain, fit.sigma_joint
    pred = Yf @ np.concatenate([[mass], fit.payload[1:]])
    r = (di - pred / k) / s
    J = np.zeros((N, n, 9 + n))
    J[:, :, :9] = -Yf[:, :, 1:] / (k * s)[None, :, None]
    J[:, np.arange(n), 9 + np.arange(n)] = pred / (k ** 2 * s)
    H = np.linalg.pinv(np.einsum("tnp,tnq->pq", J, J))
    return np.sqrt(np.diag(H) * (r ** 2).sum() / (r.size - 9 - n))[9:]


def gains_table(model, runs, masses):
    """Prints section 1 -> {pair: (gain, robust std)}."""
    print(f"1. Gains, N m/A (white sigma / block-robust sigma, {BLOCK:g} s blocks); "
          "/ the authors'; robust sigmas above the +10% box (negative: inside)")
    out = {}
    for key, (u, l) in runs.items():
        t0 = time.process_time()
        fit = D.estimate_drive_gains(model, u, l, "tool0", masses[key], block_seconds=BLOCK)
        seconds = time.process_time() - t0
        std, white = fit.gain_std, white_std(model, u, l, fit, masses[key])
        out[key] = (fit.gain, std)
        print(f"  {key:<24} ({seconds:.1f} s CPU)")
        for j, name in enumerate(model.joint_names):
            print(f"    {name:<22} {fit.gain[j]:7.3f} +- {white[j]:.3f} / "
                  f"{std[j]:.3f}   x{fit.gain[j] / AUTHORS[j]:.3f}   "
                  f"{(fit.gain[j] - (1 + BOX) * AUTHORS[j]) / std[j]:+.1f} sigma")
    keys = list(PAIRS)
    k = np.array([out[key][0] for key in keys])
    w = 1 / np.array([out[key][1] for key in keys]) ** 2
    mean, std = (w * k).sum(0) / w.sum(0), 1 / np.sqrt(w.sum(0))
    print("  the three 2.805 kg pairs, inverse-variance mean (robust sigmas):")
    for j, name in enumerate(model.joint_names):
        print(f"    {name:<22} {mean[j]:7.3f} +- {std[j]:.3f}   x{mean[j] / AUTHORS[j]:.3f} "
              f"+- {std[j] / AUTHORS[j]:.3f}   {(mean[j] - (1 + BOX) * AUTHORS[j]) / std[j]:+.1f}"
              " sigma above the box; pair-to-pair spread "
              f"{100 * (k[:, j].max() / k[:, j].min() - 1):.1f}%")
    return out


def controller_gains(data, n=6):
    """UR's controller's current-to-torque constants (n,) N m/A (section 2 of the module
    docstring: from the runs in which joint j does not move and its target current varies by
    > 0.1 A, the fit with the smallest residual; nan where there is none) and, per joint,
    every (residual RMS N m, constant, range A) found."""
    found = [[] for _ in range(n)]
    for path in sorted((data / "jointwise_motion").glob("*.csv")):
        rows = [r for r in (line.split(",") for line in path.read_text().splitlines())
                if len(r) == 31]
        a = np.array(rows, dtype=float)
        a = a[np.isfinite(a).all(1) & (np.abs(a) < 1e6).all(1)]
        for j in range(n):
            if path.stem.endswith(f"joint_{j + 1}"):
                continue                                  # the joint that moves in that run
            rest = np.abs(a[:, 7 + j]) < 1e-3
            i, tau = a[rest, 19 + j], a[rest, 25 + j]
            if rest.sum() > 50 and np.ptp(i) > 0.1:
                x, *_ = np.linalg.lstsq(np.column_stack([i, np.ones_like(i)]), tau, rcond=None)
                rms = np.sqrt(np.mean((tau - x[0] * i - x[1]) ** 2))
                found[j].append((rms, x[0], np.ptp(i)))
    return np.array([min(f)[1] if f else np.nan for f in found]), found


def loads(model, runs, masses, gain_sets):
    print("\n3. The load from each pair (arm re-fitted, min_speed 0.05), kg (and / the load - 1)")
    for label, k in gain_sets.items():
        text = []
        for key, (u, l) in runs.items():
            m = D.estimate_payload_from_pair(model, u, l, "tool0", k, min_speed=0.05)
            text.append(f"{m.payload_mass:.3f} ({100 * (m.payload_mass / masses[key] - 1):+.1f}%)")
        print(f"  {label:<34}" + "  ".join(text))


def stacked_linear(model, u, l, k1=None):
    """The authors' formulation without its SDP: both runs stacked, the arm's base parameters
    and per-joint terms shared, k_j i_j - W beta - E phi - Yf' p = Yf_m m_L (loaded rows;
    0 unloaded), min_speed 0.05 -> (gains by ordinary LS, by LS weighted per joint)."""
    base, n = R.base_parameters(model), model.n
    columns = D._independent_columns(model, base, D.KINDS)
    (Wu, Eu, _, iu, ju), (Wl, El, Yl, il, jl) = [
        D._run_blocks(model, base, s, f, columns, np.abs(s.qd) >= 0.05)
        for s, f in ((u, None), (l, "tool0"))]
    A = np.block([[D._diag(iu, ju, n), -Wu, -Eu, np.zeros((len(iu), 9))],
                  [D._diag(il, jl, n), -Wl, -El, -Yl[:, 1:]]])
    b = np.concatenate([np.zeros(len(iu)), Yl[:, 0] * LOAD])
    joint = np.concatenate([ju, jl])
    if k1 is not None:
        A, b = A[:, 1:], b - A[:, 0] * k1
    x = np.linalg.lstsq(A, b, rcond=None)[0]
    s = np.sqrt(np.bincount(joint, (A @ x - b) ** 2) / np.bincount(joint))
    xw = np.linalg.lstsq(A / s[joint, None], b / s[joint], rcond=None)[0]
    m = n if k1 is None else n - 1
    pad = [] if k1 is None else [k1]
    return np.concatenate([pad, x[:m]]), np.concatenate([pad, xw[:m]])


def variant_gains(Yf, di, mass, k0, extra=None, eff=None, fixed=()):
    """Gains (n,) of di_j = (1 + e_j eff_j) Yf_j [m; p] / k_j + extra_j theta (current
    units, rows / s_j, s_j the joint's residual RMS at the start, then at the optimum),
    p (9,) with the entries ``fixed`` held at 0, theta and e free; variable projection.
    -> (k, e, the residual's RMS per joint (n,) A)."""
    import scipy.optimize
    N, n = di.shape
    P, bm = np.delete(Yf[:, :, 1:], list(fixed), axis=2), Yf[:, :, 0] * mass
    ne = 0 if eff is None else n

    def residual(z, s):
        g = (1 + (z[n:] * eff if ne else np.zeros(di.shape))) / z[:n]
        A = P * g[:, :, None]
        if extra is not None:
            A = np.concatenate([A, extra], 2)
        A, y = (A / s[None, :, None]).reshape(N * n, -1), ((di - bm * g) / s).ravel()
        return y - A @ np.linalg.lstsq(A, y, rcond=None)[0]

    z, s = np.concatenate([k0, np.zeros(ne)]), np.ones(n)
    for _ in range(2):
        z = scipy.optimize.least_squares(lambda v: residual(v, s), z, xtol=1e-10,
                                         ftol=1e-10).x
        s = np.sqrt((residual(z, np.ones(n)).reshape(N, n) ** 2).mean(0))
    return z[:n], z[n:], np.sqrt((residual(z, np.ones(n)).reshape(N, n) ** 2).mean(0))


def variants(model, runs):
    print("\n5. Gains / the authors' with the difference equation extended; the residual RMS "
          "summed over joints (A)")
    for key, (u, l) in runs.items():
        Yf, di, _ = difference(model, u, l)
        N, n = di.shape
        k0 = D.estimate_drive_gains(model, u, l, "tool0", LOAD).gain
        E = np.zeros((N, n, 3 * n))
        ua = D.align_pair(u, l)[0]
        for c, v in enumerate((np.ones((N, n)), ua.qd, np.sign(ua.qd))):
            E[:, np.arange(n), c * n + np.arange(n)] = v
        eff = np.sign(ua.tau * ua.qd)
        for label, kw in (("as estimate_drive_gains", {}),
                          ("friction change (offset, Fv, Fc)", dict(extra=E)),
                          ("load-dependent friction (1 + e s)", dict(eff=eff)),
                          ("both", dict(extra=E, eff=eff)),
                          ("centre of mass on the flange axis", dict(fixed=(0, 1)))):
            k, e, rms = variant_gains(Yf, di, LOAD, k0, **kw)
            print(f"  {key:<24} {label:<36} x{np.round(k / AUTHORS, 3)}  misfit "
                  f"{rms.sum():.4f} A" + (f"  e {np.round(e, 3)}" if len(e) else ""))


def main():
    data = shared_data("ur10e-mamedov2020")
    if data is None:
        print(missing_reason("ur10e-mamedov2020"))
        return 0
    warnings.simplefilter("ignore")
    model = RobotModel.from_urdf_file(data / "ur10e.urdf")
    runs = {key: (run(data, model, *u), run(data, model, *l))
            for key, (u, l) in {**PAIRS, **OTHER}.items()}
    masses = {key: OTHER_LOAD if key in OTHER else LOAD for key in runs}
    gains = gains_table(model, runs, masses)
    ur, found = controller_gains(data)
    print("\n2. UR's controller's constants, target torque / target current at rest, N m/A:"
          f" {np.round(ur, 4)}; / the authors' {np.round(ur / AUTHORS, 3)}; residual RMS "
          + ", ".join(f"{min(f)[0]:.1g}" if f else "-" for f in found) + " N m; runs that agree "
          "with it within 0.1%: " + ", ".join(
              f"{sum(abs(c / min(f)[1] - 1) < 1e-3 for _, c, _ in f)} of {len(f)}"
              for f in found))
    first = gains[next(iter(PAIRS))][0]
    loads(model, runs, masses, {"the first pair's gains": first, "the authors'": AUTHORS,
                                "UR's controller's (j6 the authors')":
                                    np.where(np.isfinite(ur), ur, AUTHORS)})
    print("\n4. The authors' formulation (stacked, arm shared, linear in k), gains / theirs:")
    for key, (u, l) in runs.items():
        if key in OTHER:
            continue
        for k1 in (None, 10.0):
            ols, wls = stacked_linear(model, u, l, k1)
            print(f"  {key:<24} K1 {'free ' if k1 is None else '= 10'}  OLS "
                  f"x{np.round(ols / AUTHORS, 3)}  weighted x{np.round(wls / AUTHORS, 3)}")
    if "--variants" in sys.argv[1:]:
        variants(model, {k: v for k, v in runs.items() if k in PAIRS})
    return 0


if __name__ == "__main__":
    sys.exit(main())
