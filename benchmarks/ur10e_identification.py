"""Benchmark (not a test): the real UR10e of Mamedov et al. (2020), held-out validation.

Data: shared/data/ur10e-mamedov2020 (not in the repository; found as the tests find it,
test/shared_data.py; without it this prints why and exits 0). Every model is judged on
files it was not fitted on, ``validation_data/``, as ``python -m manip_dynamics.validate``
judges (core/identification/validation.py): measured torque = drive gain x the raw motor
current, predicted = the model's inverse dynamics (armature, friction) on q, qd filtered by
a zero-phase 5th-order Butterworth at 7.5 Hz (the authors': 0.15 of Nyquist), qdd by
central differences. Per joint: RMS (N m) and rre_j = 100 |tau_meas - tau_pred| /
|tau_meas| (%), on the authors' validation window (ptp_10_points, lines 700-4200), then
the summed RMS on every validation file (whole files).

The models (drive gains: the authors', except the last row):
  nominal URDF                  the URDF's inertials, no friction (its <dynamics> are 0)
  URDF + authors' drive terms   the URDF's inertials + their armature, viscous and Coulomb
                                friction (a side file: python -m manip_dynamics.validate
                                --dynamics-file gives the same numbers)
  authors' model                their whole identified model, UR10E_parameters.txt: rigid
                                bodies pi_rgd (per link [Ixx Ixy Ixz Iyy Iyz Izz, m c, m] about
                                the link origin, in the link frames of the same URDF), armature,
                                friction Fv qd + Fc sign(qd) + F0 (the offset F0 has no field in
                                the side file or the URDF: predicted as Y pi + the drive terms)
  least squares (Y pi)          identify() unconstrained, fitted on the authors'
                                identification file and window (ur-20_02_10-30sec_12harm.csv,
                                lines 635-3510), currents x the authors' gains,
                                filter_recording at 7.5 Hz, friction, min_speed 0.05;
                                predicted as Y pi (not every body real)
  least squares (its URDF)      the same as written by identified_urdf (bodies that are none
                                written as the nearest real body) and read back
  consistent fit (its URDF)     identify(consistent=True), as written and read back (no
                                armature columns: the model behind the issue's 9.5 N m)
  consistent fit + armature     identify(consistent=True, armature=True): its URDF read back
                                with its armature and friction (pipeline.identified_model,
                                what the side file holds)
  ..., our gains                the same from the currents alone: the drive gains our
                                estimator gives (drive_gains.estimate_drive_gains, 2.805 kg)
                                from the pair ur-20_02_19_14harm50sec / ...Load (the authors'
                                windows, 5 Hz, as benchmarks/bench_drive_gains.py), used to
                                fit and to validate (measured = OUR gains x current)
Measured torque is gain x current, so RMS in N m of rows with other gains is not comparable:
every row is also given as RMS in A (RMS N m / that row's gains: the same currents) and rre
% (scale-free). Then: the fits' masses per link, total and smallest ratio against the URDF's,
each body as written read back (real with the LMI margin or not); the 2.805 kg load at
tool0 from the loaded run of each pair (the three of bench_drive_gains) with each row's
model taken as right and its gains (payload.estimate_payload), and model-free from each
pair with the authors' and our gains (drive_gains.estimate_payload_from_pair); the largest
load that gains within 10% of the authors' can give; the pairs' current-difference misfit
at fixed gains (ours, the authors', inside the 10% box).

The picture docs/images/ur10e_validation.png (``--plot PATH`` to put it elsewhere,
``--no-plot``): measured against predicted on the authors' validation window, per joint.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/ur10e_identification.py
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "test"), os.path.dirname(os.path.abspath(__file__))]

from shared_data import missing_reason, shared_data  # noqa: E402

import bench_drive_gains as G  # noqa: E402  (its pairs, the load, the authors' gains)

from manip_dynamics import RobotModel  # noqa: E402
from manip_dynamics.core.identification import csv_log  # noqa: E402
from manip_dynamics.core.identification import drive_gains as D  # noqa: E402
from manip_dynamics.core.identification import pipeline as I  # noqa: E402
from manip_dynamics.core.identification import regressor as R  # noqa: E402
from manip_dynamics.core.identification.payload import estimate_payload  # noqa: E402
from manip_dynamics.core.identification.validation import (  # noqa: E402
    PredictionErrors, errors, prediction_errors, validation_states)

NAME = "ur10e-mamedov2020"
MAP = "t=1,q=2:7,qd=8:13,effort=14:19"
FIT_FILE, FIT_ROWS = "identification_data/ur-20_02_10-30sec_12harm.csv", (635, 3510)
VAL_FILE, VAL_ROWS = "validation_data/ur-20_01_17-ptp_10_points.csv", (700, 4200)
CUTOFF = 7.5
GAIN_CUTOFF = 5.0                  # the pairs for the drive gains, as bench_drive_gains.py
WIDTH = 48
ARM = "consistent fit + armature (its URDF)"
ARM_OURS = "consistent fit + armature, our gains (its URDF)"


def authors_parameters(path):
    """{name: array} of UR10E_parameters.txt (drvGains, pi_drvs, pi_frcn, pi_rgd)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, eq, values = line.partition("=")
        if eq and "[" in values:
            out[name.strip()] = np.array(values.strip(" []").split(), dtype=float)
    return out


def authors_pi(rgd):
    """Their pi_rgd (6 x [Ixx Ixy Ixz Iyy Iyz Izz hx hy hz m]) in our order (6 x [m, h,
    Ixx Ixy Iyy Ixz Iyz Izz], Pinocchio's), flattened (60,)."""
    rgd = rgd.reshape(6, 10)
    return rgd[:, [9, 6, 7, 8, 0, 1, 3, 2, 4, 5]].ravel()


def read(path, model, rows, gains):
    """(t, q, qd, tau = gains x current) of a CSV run of the data set, window ``rows``."""
    columns = csv_log.ColumnMap.from_mapping(csv_log.parse_inline(MAP)).replace(
        drive_gains=tuple(gains), rows=rows)
    log = csv_log.read_csv_joint_states(path, columns, model.joint_names,
                                        csv_log.model_limits(model, model.joint_names))
    return log.t, log.position, log.velocity, log.effort


def fits(data, xml, model, gains, armature=False, labels=("least squares", "consistent fit"),
         suffix=""):
    """({label + suffix + " (its URDF)": RobotModel}, {label + suffix: (seconds,
    Identification, notes, BodyCheck list, warnings)}) of our fits on the authors'
    identification window, currents x ``gains``; with ``armature`` the written model carries
    the identified armature and friction (pipeline.identified_model: what the side file
    holds), as the node loads URDF + side file."""
    t, q, qd, tau = read(data / FIT_FILE, model, FIT_ROWS, gains)
    samples = I.filter_recording(t, q, qd, tau, cutoff=CUTOFF)
    out, info = {}, {}
    for label in labels:
        t0 = time.perf_counter()
        result = I.identify(model, samples, True, consistent=label == "consistent fit",
                            min_speed=0.05, armature=armature)
        seconds = time.perf_counter() - t0
        written, notes = I.identified_urdf(xml, model, result.pi, True, armature)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = RobotModel.from_urdf_string(written)
        if armature:
            fitted, more = I.identified_model(fitted, result.pi, result.friction, True)
            notes = notes + more
        bodies, problems = I.check_written_urdf(written, xml, R.model_parameters(model))
        out[f"{label}{suffix} (its URDF)"] = fitted
        info[label + suffix] = (seconds, result, notes, bodies, problems)
    return out, info


def predictions(models, extra, t, q, qd, tau):
    """{label: (PredictionErrors, states)}; ``extra``: {label: f(states) -> tau_pred}."""
    states = validation_states(t, q, qd, tau, CUTOFF, 5)
    out = {label: (prediction_errors(m, states), states) for label, m in models.items()}
    for label, f in extra.items():
        pred = f(states)
        out[label] = (PredictionErrors(*errors(pred, states.tau), pred), states)
    return out


def y_pi(model, pi, friction):
    """states -> Y pi (sign(qd) of the filtered states) [+ the authors' drive terms]."""
    def f(states):
        samples = I.Samples(states.t, states.q, states.qd, states.qdd, states.tau)
        tau = I.predicted_torques(model, pi, samples, friction is None)
        if friction is not None:
            armature, fv, fc, f0 = friction
            tau = tau + armature * states.qdd + fv * states.qd + fc * np.sign(states.qd) + f0
        return tau
    return f


def print_window(names, results, gains):
    """The window's table: RMS in N m (each row's own gains x current: not comparable
    between gain sets), RMS in A (the currents: comparable) and rre % (scale-free)."""
    labels = list(results)
    print(f"\nHeld out: {VAL_FILE}, lines {VAL_ROWS[0]}-{VAL_ROWS[1]} (the authors' "
          f"validation window), {len(results[labels[0]][1].t)} samples")
    for what, key in (("RMS, N m", "rms"), ("RMS, A", "amps"), ("rre, %", "rre")):
        print(f"\n{what:<{WIDTH}}" + "".join(f"{n.replace('_joint', ''):>13}" for n in names)
              + f"{'mean' if key == 'rre' else 'sum':>9}")
        for label in labels:
            e = results[label][0]
            v = e.rms / gains[label] if key == "amps" else getattr(e, key)
            total = v.mean() if key == "rre" else v.sum()
            print(f"{label:<{WIDTH}}" + "".join(f"{x:13.4g}" for x in v) + f"{total:9.4g}")


def masses(model, fitted, info):
    """Per fit: link masses, total / the URDF's, the smallest per-link ratio, and each body
    as written read back (pipeline.check_written_urdf: real with the LMI margin or not)."""
    urdf = model.body_inertias()[0]
    print(f"\nLink masses, kg{'':<{WIDTH - 15}}" + "".join(
        f"{b.replace('_link', ''):>13}" for b in model.body_links) + f"{'total':>9}")
    for label, m in [("URDF", urdf)] + [(k, v.body_inertias()[0]) for k, v in fitted.items()]:
        ratio = "" if label == "URDF" else (f"  ({m.sum() / urdf.sum():.3g}x the URDF's, "
                                            f"min link {(m / urdf).min():.3g}x)")
        print(f"{label:<{WIDTH}}" + "".join(f"{x:13.4g}" for x in m) + f"{m.sum():9.4g}" + ratio)
    for label, (_, result, notes, bodies, problems) in info.items():
        real = sum(b.ok for b in bodies)
        print(f"{label}: {real} of {len(bodies)} bodies real as written (scaled lambda_min "
              + ", ".join(f"{b.scaled_min:.2g}" for b in bodies) + "); solver "
              + f"{result.solver_status or 'QR'}")
        for line in list(notes) + list(problems) + list(result.warnings):
            print(f"  note: {line}")


def pair_runs(data, model, cutoff):
    """{pair: (unloaded Samples, loaded Samples)} of bench_drive_gains.PAIRS, the raw
    currents (no gains) filtered at ``cutoff`` Hz, the pair's windows."""
    columns = csv_log.ColumnMap.from_mapping(csv_log.parse_inline(MAP))
    out = {}
    for key, runs in G.PAIRS.items():
        pair = []
        for name, rows in runs:
            log = csv_log.read_csv_joint_states(data / "identification_data" / name,
                                                columns.replace(rows=rows), model.joint_names)
            pair.append(I.filter_recording(log.t, log.position, log.velocity, log.effort,
                                           cutoff=cutoff))
        out[key] = tuple(pair)
    return out


def scaled(samples, gains):
    """The Samples with tau = gains x the recorded currents."""
    return I.Samples(samples.t, samples.q, samples.qd, samples.qdd, samples.tau * gains,
                     samples.coulomb)


def row_payloads(models, gains, runs):
    """{label: [kg per pair]}: the load at tool0 estimated from each pair's LOADED run with
    that row's model taken as right (payload.estimate_payload: tau - tau_model = Y_f pi_L,
    armature and friction included, min_speed 0.05) and that row's gains."""
    return {label: [estimate_payload(m, "tool0", s.q, s.tau, s.qd, s.qdd, friction=True,
                                     min_speed=0.05).mass
                    for s in (scaled(l, gains[label]) for _, l in runs.values())]
            for label, m in models.items()}


def pair_payload(model, runs, gains):
    """[kg per pair]: the load from each pair, the arm's model estimated with it (drive
    gains.estimate_payload_from_pair, min_speed 0.05): no arm model taken as right."""
    return [D.estimate_payload_from_pair(model, u, l, "tool0", gains, min_speed=0.05)
            .payload_mass for u, l in runs.values()]


def best_load_within(model, runs, authors, bound=0.10):
    """The largest load (kg) any gains within +-bound of the authors' give from each pair
    (estimate_payload_from_pair): the load is (nearly) linear in the gains (exactly for the
    unweighted LS: b = k_j i), so its maximum over the box is at the corner the signs of
    its derivatives pick; evaluated there. -> [(kg at the authors', kg at that corner,
    corner / authors' (n,))] per pair."""
    out = []
    for u, l in runs.values():
        def mass(k):
            return D.estimate_payload_from_pair(model, u, l, "tool0", k, min_speed=0.05) \
                .payload_mass
        m0 = mass(authors)
        slope = [mass(authors * np.where(np.arange(len(authors)) == j, 1 + bound, 1.0)) - m0
                 for j in range(len(authors))]
        corner = np.where(np.array(slope) > 0, 1 + bound, 1 - bound)
        out.append((m0, mass(authors * corner), corner))
    return out


def difference_misfit(model, runs, k):
    """[RMS (n,) A per pair]: how far gains k are from explaining the pair's aligned current
    difference di_j = Yf_j [m_L; p] / k_j (drive_gains' gain problem at fixed k, m_L the
    known 2.805 kg, p = m c, I_O eliminated by least squares, unweighted): the misfit our
    estimator minimises (weighted) over k."""
    out = []
    for u, l in runs.values():
        u, l, _, _ = D.align_pair(u, l)
        Yf = R.frame_regressor(model, u.q, u.qd, u.qdd, "tool0")      # (N, n, 10)
        A = (Yf[:, :, 1:] / k[None, :, None]).reshape(-1, 9)
        y = ((l.tau - u.tau) - Yf[:, :, 0] * G.LOAD / k).ravel()
        r = (y - A @ np.linalg.lstsq(A, y, rcond=None)[0]).reshape(-1, model.n)
        out.append(np.sqrt(np.mean(r ** 2, axis=0)))
    return out


def print_misfits(model, runs, gain_sets):
    print("\nThe pairs' aligned current difference, RMS misfit per joint (A), summed over "
          "joints, per pair, at fixed gains:")
    for label, k in gain_sets.items():
        print(f"{label:<{WIDTH}}" + "".join(f"{r.sum():10.4f}" for r in
                                            difference_misfit(model, runs, k))
              + f"   (gains / authors' {np.round(k / G.AUTHORS, 3)})")


def print_payloads(model, runs, rows, gain_sets, authors):
    print(f"\nThe {G.LOAD} kg load at tool0, kg (and / the truth - 1), from each pair "
          f"({', '.join(runs)}):")
    for label, kg in rows.items():
        print(f"{label:<{WIDTH}}" + "".join(f"{m:9.3f} ({100 * (m / G.LOAD - 1):+5.1f}%)"
                                             for m in kg) + "   its model and gains")
    for label, k in gain_sets.items():
        kg = pair_payload(model, runs, k)
        print(f"{'pair, arm re-fitted, ' + label:<{WIDTH}}" + "".join(
            f"{m:9.3f} ({100 * (m / G.LOAD - 1):+5.1f}%)" for m in kg))
    print("\nThe largest load any gains within 10% of the authors' give (pair, arm re-fitted):")
    for key, (m0, m1, corner) in zip(runs, best_load_within(model, runs, authors)):
        print(f"  {key:<24} authors' {m0:.3f} kg, best corner {m1:.3f} kg "
              f"({100 * (m1 / G.LOAD - 1):+.1f}%), gains / authors' {np.round(corner, 2)}")


def authors_model(xml, model, par):
    """RobotModel of their identified model (pi_rgd written as a URDF, nearest real bodies
    where not; their armature, Fv, Fc and offset F0) -> (model, notes)."""
    written, notes = I.identified_urdf(xml, model, authors_pi(par["pi_rgd"]), False)
    fv, fc, f0 = par["pi_frcn"].reshape(6, 3).T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = RobotModel.from_urdf_string(written)
    return out.with_armature(par["pi_drvs"]).with_friction(fv, fc, None, f0), notes


def our_gains(model, runs):
    """Our drive gains (N m/A) from the first pair (14 harmonics, the authors' windows),
    drive_gains.estimate_drive_gains with the known 2.805 kg: from currents alone."""
    u, l = runs[next(iter(runs))]
    fit = D.estimate_drive_gains(model, u, l, "tool0", G.LOAD)
    print(f"\nour drive gains from the pair {next(iter(runs))!r} (cutoff {GAIN_CUTOFF} Hz): "
          f"{np.round(fit.gain, 3)} +- {np.round(fit.gain_std, 3)}, / the authors' "
          f"{np.round(fit.gain / G.AUTHORS, 3)}")
    return fit.gain


def whole_files(data, model, models, extra, gains, ours, order):
    """Summed RMS per validation file, whole files: N m (the authors' gains) and, for the
    armature fits, A."""
    short = {"URDF + authors' drive": "URDF + drive", "least squares (Y pi)": "LS (Y pi)",
             "least squares (its URDF)": "LS (URDF)", "consistent fit (its URDF)": "consistent",
             ARM: "cons.+arm.", ARM_OURS: "c.+arm.ours"}
    theirs = [k for k in order if k != ARM_OURS]
    print("\nSummed RMS on every validation file, whole files: N m (the authors' gains), "
          "then A:")
    print(f"{'file':<34}" + "".join(f"{short.get(k, k):>15}" for k in theirs)
          + f"{'cons. A':>10}{'c.+arm. A':>10}{'ours A':>10}")
    for path in sorted((data / "validation_data").glob("*.csv")):
        res = predictions({k: v for k, v in models.items() if k != ARM_OURS}, extra,
                          *read(path, model, None, gains))
        mine = predictions({ARM_OURS: models[ARM_OURS]}, {},
                           *read(path, model, None, ours))[ARM_OURS][0]
        print(f"{path.name:<34}" + "".join(f"{res[k][0].rms.sum():15.4g}" for k in theirs)
              + "".join(f"{(res[k][0].rms / gains).sum():10.4g}"
                        for k in ("consistent fit (its URDF)", ARM))
              + f"{(mine.rms / ours).sum():10.4g}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plot", default=os.path.join(ROOT, "docs", "images",
                                                  "ur10e_validation.png"))
    p.add_argument("--no-plot", action="store_true")
    args = p.parse_args()
    data = shared_data(NAME)
    if data is None:
        print(missing_reason(NAME) + ": nothing to measure")
        return 0
    xml = (data / "ur10e.urdf").read_text(encoding="utf-8")
    model = RobotModel.from_urdf_string(xml)
    par = authors_parameters(data / "UR10E_parameters.txt")
    gains, armature = par["drvGains"], par["pi_drvs"]
    fv, fc, f0 = par["pi_frcn"].reshape(6, 3).T
    drive = model.with_armature(armature).with_friction(fv, fc)
    runs = pair_runs(data, model, GAIN_CUTOFF)
    ours = our_gains(model, runs)
    fitted, info = fits(data, xml, model, gains)
    more, more_info = fits(data, xml, model, gains, True, ("consistent fit",), " + armature")
    mine, mine_info = fits(data, xml, model, ours, True, ("consistent fit",),
                           " + armature, our gains")
    fitted.update(more, **mine)
    info.update(more_info, **mine_info)
    for label, (seconds, result, *_) in info.items():
        print(f"{label}: fitted in {seconds:.1f} s, solver {result.solver_status or 'QR'}, "
              f"{result.rows} equations, condition number {result.condition_number:.4g}")
    models = {"nominal URDF": model, "URDF + authors' drive": drive,
              **{k: fitted[k] for k in ("least squares (its URDF)", "consistent fit (its URDF)",
                                        ARM, ARM_OURS)}}
    extra = {"authors' model": y_pi(model, authors_pi(par["pi_rgd"]), (armature, fv, fc, f0)),
             "least squares (Y pi)": y_pi(model, info["least squares"][1].pi, None)}
    order = ["nominal URDF", "URDF + authors' drive", "authors' model",
             "least squares (Y pi)", "least squares (its URDF)", "consistent fit (its URDF)",
             ARM, ARM_OURS]
    window = predictions({k: v for k, v in models.items() if k != ARM_OURS}, extra,
                         *read(data / VAL_FILE, model, VAL_ROWS, gains))
    window.update(predictions({ARM_OURS: models[ARM_OURS]}, {},
                              *read(data / VAL_FILE, model, VAL_ROWS, ours)))
    window = {k: window[k] for k in order}
    row_gains = {k: ours if k == ARM_OURS else gains for k in order}
    print_window(model.joint_names, window, row_gains)
    whole_files(data, model, models, extra, gains, ours, order)
    masses(model, {k: fitted[k] for k in ("least squares (its URDF)",
                                          "consistent fit (its URDF)", ARM, ARM_OURS)}, info)
    theirs, theirs_notes = authors_model(xml, model, par)
    for note in theirs_notes:
        print(f"  note (authors' model as a URDF): {note}")
    payload_models = {"authors' model (as a URDF)": theirs, **{k: v for k, v in models.items()
                                                              if k != "nominal URDF"}}
    rows = row_payloads(payload_models, {**row_gains, "authors' model (as a URDF)": gains},
                        runs)
    print_payloads(model, runs, rows, {"authors' gains": gains, "our gains": ours}, gains)
    box = gains * np.clip(ours / gains, 0.9, 1.1)
    print_misfits(model, runs, {"our gains": ours, "authors' gains": gains,
                                "authors' x 1.1": 1.1 * gains,
                                "ours clipped to the authors' +-10%": box})
    print("the load with ours clipped to the authors' +-10% (pair, arm re-fitted): " + ", ".join(
        f"{m:.3f} kg ({100 * (m / G.LOAD - 1):+.1f}%)" for m in pair_payload(model, runs, box)))
    if not args.no_plot:
        from manip_dynamics.validate import plot
        shown = ("consistent fit (its URDF)", "authors' model", "URDF + authors' drive",
                 "nominal URDF")
        plot(args.plot, model.joint_names, {k: window[k] for k in shown})
        print(f"\nwrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
