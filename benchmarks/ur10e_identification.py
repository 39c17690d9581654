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

The models (drive gains: the authors' everywhere):
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
  consistent fit (its URDF)     identify(consistent=True), as written and read back
The consistent fit's masses per link and total against the URDF's.

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
sys.path[:0] = [ROOT, os.path.join(ROOT, "test")]

from shared_data import missing_reason, shared_data  # noqa: E402

from manip_dynamics import RobotModel  # noqa: E402
from manip_dynamics.core.identification import csv_log  # noqa: E402
from manip_dynamics.core.identification import pipeline as I  # noqa: E402
from manip_dynamics.core.identification import regressor as R  # noqa: E402
from manip_dynamics.core.identification.validation import (  # noqa: E402
    PredictionErrors, errors, prediction_errors, validation_states)

NAME = "ur10e-mamedov2020"
MAP = "t=1,q=2:7,qd=8:13,effort=14:19"
FIT_FILE, FIT_ROWS = "identification_data/ur-20_02_10-30sec_12harm.csv", (635, 3510)
VAL_FILE, VAL_ROWS = "validation_data/ur-20_01_17-ptp_10_points.csv", (700, 4200)
CUTOFF = 7.5


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


def fits(data, xml, model, gains):
    """{label: RobotModel} of our fits and the unconstrained pi, with the seconds each."""
    t, q, qd, tau = read(data / FIT_FILE, model, FIT_ROWS, gains)
    samples = I.filter_recording(t, q, qd, tau, cutoff=CUTOFF)
    out, info = {}, {}
    for label, consistent in (("least squares", False), ("consistent fit", True)):
        t0 = time.perf_counter()
        result = I.identify(model, samples, True, consistent=consistent, min_speed=0.05)
        info[label] = (time.perf_counter() - t0, result)
        written, notes = I.identified_urdf(xml, model, result.pi, True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[f"{label} (its URDF)"] = RobotModel.from_urdf_string(written)
        info[label] += (notes,)
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


def print_window(names, results):
    labels = list(results)
    print(f"\nHeld out: {VAL_FILE}, lines {VAL_ROWS[0]}-{VAL_ROWS[1]} (the authors' "
          f"validation window), {len(results[labels[0]][1].t)} samples")
    for what, key, fmt in (("RMS, N m", "rms", "{:7.3g}"), ("rre, %", "rre", "{:7.3g}")):
        print(f"\n{what:<28}" + "".join(f"{n.replace('_joint', ''):>14}" for n in names)
              + f"{'sum' if key == 'rms' else 'mean':>9}")
        for label in labels:
            v = getattr(results[label][0], key)
            total = v.sum() if key == "rms" else v.mean()
            print(f"{label:<28}" + "".join(f"{fmt.format(x):>14}" for x in v)
                  + f"{total:9.3g}")


def masses(model, fitted, result_notes):
    urdf = model.body_inertias()[0]
    print(f"\nLink masses, kg{'':<15}" + "".join(f"{b.replace('_link', ''):>13}"
                                                 for b in model.body_links) + f"{'total':>9}")
    for label, m in [("URDF", urdf)] + [(k, v.body_inertias()[0]) for k, v in fitted.items()]:
        print(f"{label:<30}" + "".join(f"{x:13.4g}" for x in m) + f"{m.sum():9.4g}"
              + ("" if label == "URDF" else f"  ({m.sum() / urdf.sum():.2f}x the URDF's)"))
    for label, notes in result_notes.items():
        for note in notes:
            print(f"note ({label}): {note}")


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
    fitted, info = fits(data, xml, model, gains)
    for label, (seconds, result, _) in info.items():
        print(f"{label}: fitted in {seconds:.1f} s, solver {result.solver_status or 'QR'}, "
              f"{result.rows} equations, condition number {result.condition_number:.4g}")
    models = {"nominal URDF": model, "URDF + authors' drive": drive,
              "least squares (its URDF)": fitted["least squares (its URDF)"],
              "consistent fit (its URDF)": fitted["consistent fit (its URDF)"]}
    extra = {"authors' model": y_pi(model, authors_pi(par["pi_rgd"]), (armature, fv, fc, f0)),
             "least squares (Y pi)": y_pi(model, info["least squares"][1].pi, None)}
    order = ["nominal URDF", "URDF + authors' drive", "authors' model",
             "least squares (Y pi)", "least squares (its URDF)", "consistent fit (its URDF)"]
    window = predictions(models, extra, *read(data / VAL_FILE, model, VAL_ROWS, gains))
    window = {k: window[k] for k in order}
    print_window(model.joint_names, window)
    print("\nSummed RMS (N m) on every validation file, whole files:")
    short = {"URDF + authors' drive": "URDF + drive", "least squares (Y pi)": "LS (Y pi)",
             "least squares (its URDF)": "LS (URDF)", "consistent fit (its URDF)": "consistent"}
    print(f"{'file':<34}" + "".join(f"{short.get(k, k):>15}" for k in order))
    for path in sorted((data / "validation_data").glob("*.csv")):
        res = predictions(models, extra, *read(path, model, None, gains))
        print(f"{path.name:<34}" + "".join(f"{res[k][0].rms.sum():15.4g}" for k in order))
    masses(model, {"consistent fit": fitted["consistent fit (its URDF)"],
                   "least squares (its URDF)": fitted["least squares (its URDF)"]},
           {k: v[2] for k, v in info.items()})
    if not args.no_plot:
        from manip_dynamics.validate import plot
        shown = ("consistent fit (its URDF)", "authors' model", "URDF + authors' drive",
                 "nominal URDF")
        plot(args.plot, model.joint_names, {k: window[k] for k in shown})
        print(f"\nwrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
