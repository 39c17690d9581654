"""Validate a dynamic model on held-out recordings (ROS-free CLI).

    python -m manip_dynamics.validate RUN.csv [RUN2.mcap ...] --urdf ARM.urdf \\
        [--dynamics-file ARM.dynamics.yaml] [--drive-gains K1,...,Kn] --csv-map ...

For every recording (never one the model was fitted on): the model's predicted torque
(URDF + side file: armature, friction, drive gains) on the filtered states against the
measured torque, drive gain x the raw effort (a motor current when the gains are given),
and the same for a second model in the same run (by default the URDF alone, no side file,
with the first model's drive gains: the nominal model). Per joint: RMS in N m (and, in the
report, in the effort's units: A for currents, RMS / drive gain) and the
relative residual error rre_j = 100 |tau_meas - tau_pred|_2 / |tau_meas|_2 in % (Mamedov
et al. 2020's metric; the same in current units). Formulas:
:mod:`manip_dynamics.core.identification.validation`. ``--plot`` draws measured against
both predictions, per joint, for the first recording; ``--report`` writes the numbers as
JSON. Recordings are read as ``identify`` reads them (MCAP or a bag directory, or a CSV
log with its column map); bad input: one line ``error: ...`` on stderr, exit code 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

import numpy as np


def _parser():
    p = argparse.ArgumentParser(prog="python -m manip_dynamics.validate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("recordings", nargs="+", metavar="RECORDING",
                   help="held-out recordings: MCAP file, bag directory or CSV log")
    p.add_argument("--urdf", required=True, help="the model's URDF or xacro")
    p.add_argument("--dynamics-file", default=None,
                   help="its side file (armature, friction, drive_gain; default "
                        "<name>.dynamics.yaml beside --urdf if it exists; 'none': none)")
    p.add_argument("--drive-gains", metavar="K1,...,Kn", default=None,
                   help="N m per effort unit, joint order (default: the side file's, else "
                        "the column map's, else 1: the efforts are torques)")
    p.add_argument("--label", default="model", help="the model's name in the tables")
    p.add_argument("--compare-urdf", default=None,
                   help="the second model's URDF (default: --urdf)")
    p.add_argument("--compare-dynamics-file", default="none",
                   help="the second model's side file (default none: the URDF alone)")
    p.add_argument("--compare-drive-gains", metavar="K1,...,Kn", default=None,
                   help="the second model's gains (default: the first model's)")
    p.add_argument("--compare-label", default="nominal URDF")
    from .core.dynamics.description import add_arguments
    add_arguments(p)   # --xacro-arg, --package-path (both models)
    csv = p.add_argument_group("CSV logs (as identify reads them)")
    csv.add_argument("--columns", metavar="MAP.yaml", default=None)
    csv.add_argument("--csv-map", metavar="KEY=VALUE,...", default=None)
    csv.add_argument("--rows", metavar="FIRST:LAST", default=None,
                     help="CSV: lines FIRST..LAST of every file (the validation window)")
    p.add_argument("--topic", default="/joint_states")
    p.add_argument("--root-link", default=None)
    p.add_argument("--cutoff", type=float, default=7.5,
                   help="Hz, zero-phase Butterworth on q and qd (default 7.5: the authors' "
                        "0.15 of Nyquist at 100 Hz)")
    p.add_argument("--order", type=int, default=5, help="its order (default 5)")
    p.add_argument("--plot", default=None, help="PNG: measured against predicted, first file")
    p.add_argument("--report", default=None, help="JSON with every number printed")
    return p


@dataclass(frozen=True)
class Candidate:
    """A model under test: label, RobotModel (side file applied), drive gains (n,), what
    it is made of (one line)."""

    label: str
    model: object
    gains: np.ndarray
    source: str = ""


def _gains(text, n, what):
    from .core.identification.csv_log import ColumnMapError, drive_gains
    gains = drive_gains(text, what)
    if len(gains) != n:
        raise ColumnMapError(f"{what}: {len(gains)} gains for {n} joints")
    return np.asarray(gains, dtype=float)


def load_candidate(args, urdf, dynamics_file, gains, label, fallback_gains):
    """Candidate from a description, a side file ('none', a path, or None: beside the
    description if it exists) and gains ((option name, text or None): the text > the side
    file's > fallback_gains > 1)."""
    from .core import RobotModel
    from .core.dynamics import load_side_file, side_file_beside
    from .core.dynamics.description import load_description

    xml = load_description(urdf, args.xacro_arg, args.package_path)
    model = RobotModel.from_urdf_string(xml, root_link=args.root_link)
    if dynamics_file is None:
        beside = side_file_beside(urdf)
        dynamics_file = str(beside) if beside.is_file() else "none"
    option, gains_text = gains
    gains = None
    if dynamics_file != "none":
        side = load_side_file(dynamics_file, model)
        model = side.model
        if np.any(side.drive_gain != 1):
            gains = np.asarray(side.drive_gain, dtype=float)
    if gains_text is not None:
        gains = _gains(gains_text, model.n, option)
    if gains is None:
        gains = np.ones(model.n) if fallback_gains is None else np.asarray(fallback_gains)
    source = f"{urdf}" + ("" if dynamics_file == "none" else f" + side file {dynamics_file}")
    return Candidate(label, model, gains, source + ", drive gains " + ", ".join(
        f"{k:g}" for k in gains))


def read_recording(args, path, model):
    """(t, q, qd or None, raw effort (N, n)) in the model's joint order; the CSV's rows
    report is printed to stderr."""
    from .core.identification.csv_log import (ColumnMapError, model_limits,
                                              read_csv_joint_states)
    from .core.identification.recording import read_joint_states
    from .identify import column_map, is_csv

    ns = argparse.Namespace(**{**vars(args), "recording": path, "drive_gains": None})
    if is_csv(ns):
        columns = column_map(ns)
        if columns.effort is None:
            raise ColumnMapError(f"{path}: the column map gives no effort column; "
                                 "validation compares measured efforts (effort=A:B)")
        names = columns.joints or model.joint_names
        if len(columns.q) != model.n:
            raise ColumnMapError(f"the column map has {len(columns.q)} q columns, the model "
                                 f"{model.n} joints ({', '.join(model.joint_names)})")
        log = read_csv_joint_states(path, columns.replace(drive_gains=None), names,
                                    model_limits(model, names))
        print(log.skipped.line(), file=sys.stderr)
    else:
        if args.rows is not None:
            raise ColumnMapError("--rows is for CSV logs (an MCAP recording has no rows)")
        log = read_joint_states(path, args.topic)
    q, qd, effort = log.in_order(model.joint_names)
    if effort is None:
        raise ColumnMapError(f"{path}: the recording carries no effort")
    return log.t, q, qd, effort


def csv_gains(args):
    """The column map's drive_gains (None if no map or none given)."""
    if args.columns is None and args.csv_map is None:
        return None
    from .identify import column_map
    ns = argparse.Namespace(**{**vars(args), "recording": "", "drive_gains": None,
                               "rows": None})
    gains = column_map(ns).drive_gains
    return None if gains is None else np.asarray(gains, dtype=float)


def validate_file(args, path, candidates):
    """{label: PredictionErrors} and the measured torques per candidate for one file."""
    from .core.identification.validation import prediction_errors, validation_states
    t, q, qd, effort = read_recording(args, path, candidates[0].model)
    out = {}
    for c in candidates:
        states = validation_states(t, q, qd, effort * c.gains, args.cutoff, args.order)
        out[c.label] = (prediction_errors(c.model, states), states)
    return out


def table(path, names, results):
    """Lines: per joint RMS (N m) and rre (%) of every candidate, then the sums / means."""
    labels = list(results)
    head = "".join(f" {'RMS ' + lb[:18]:>24}" for lb in labels)
    head += "".join(f" {'rre % ' + lb[:16]:>24}" for lb in labels)
    lines = [f"{path}: {len(next(iter(results.values()))[1].t)} samples", f"  {'joint':<22}"
             + head]
    for j, name in enumerate(names):
        rms = "".join(f" {results[lb][0].rms[j]:24.4g}" for lb in labels)
        rre = "".join(f" {results[lb][0].rre[j]:24.3g}" for lb in labels)
        lines.append(f"  {name:<22}" + rms + rre)
    total = "".join(f" {results[lb][0].rms.sum():24.4g}" for lb in labels)
    mean = "".join(f" {np.nanmean(results[lb][0].rre):24.3g}" for lb in labels)
    lines.append(f"  {'sum RMS / mean rre':<22}" + total + mean)
    return lines


def plot(path, names, results):
    """Measured torque (drive gain x effort, first model's gains) against every model's
    prediction, one panel per joint, over the first recording (PNG at ``path``)."""
    from .core.extras import import_extra
    import_extra("matplotlib", __name__).use("Agg")
    plt = import_extra("matplotlib.pyplot", __name__)

    labels = list(results)
    states = results[labels[0]][1]
    n = len(names)
    fig, axes = plt.subplots(n, 1, figsize=(12, 1.7 * n + 0.6), sharex=True, squeeze=False)
    styles = ("b", "r--", "g-.", "m:")
    t = states.t - states.t[0]
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(t, states.tau[:, j], "k", lw=1.2, label="measured")
        for label, style in zip(labels, styles):
            ax.plot(t, results[label][0].tau_pred[:, j], style, lw=0.9, label=label)
        ax.set_title("RMS N m / rre %:  " + ";  ".join(
            f"{label} {results[label][0].rms[j]:.3g} / {results[label][0].rre[j]:.3g}"
            for label in labels), fontsize=7, loc="right")
        ax.set_ylabel(f"{names[j]}\nN m", fontsize=7)
    axes[0, 0].legend(loc="upper left", fontsize=7, ncol=3)
    axes[-1, 0].set_xlabel("t (s) in the validation window")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def run(args):
    """-> (report dict, {path: results}) for every recording."""
    fallback = csv_gains(args)
    first = load_candidate(args, args.urdf, args.dynamics_file,
                           ("--drive-gains", args.drive_gains), args.label,
                           fallback)
    second = load_candidate(args, args.compare_urdf or args.urdf, args.compare_dynamics_file,
                            ("--compare-drive-gains", args.compare_drive_gains),
                            args.compare_label, first.gains)
    if first.model.joint_names != second.model.joint_names:
        from .core.errors import InputError
        raise InputError(f"the two models' joints differ: {first.model.joint_names} and "
                         f"{second.model.joint_names}")
    if first.label == second.label:
        second = Candidate(second.label + " (2)", second.model, second.gains, second.source)
    names = first.model.joint_names
    per_file, report = {}, {"joint_names": list(names), "cutoff_hz": args.cutoff,
                            "models": {c.label: {"drive_gains": c.gains.tolist(),
                                                 "source": c.source}
                                       for c in (first, second)}, "recordings": {}}
    gains = {c.label: c.gains for c in (first, second)}
    for path in args.recordings:
        results = validate_file(args, path, (first, second))
        per_file[path] = results
        report["recordings"][path] = {
            label: {"samples": len(s.t), "rms_nm": e.rms.tolist(), "rre_percent": e.rre.tolist(),
                    "rms_sum_nm": float(e.rms.sum()),
                    "rms_effort_units": (e.rms / gains[label]).tolist()}
            for label, (e, s) in results.items()}
    return report, per_file


def main(argv=None):
    args = _parser().parse_args(argv)
    from .core.errors import ManipDynamicsError
    from .core.extras import import_extra
    try:
        if args.plot:
            import_extra("matplotlib", "the --plot of validate")
        report, per_file = run(args)
    except (ManipDynamicsError, OSError) as e:
        print(f"error: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
              file=sys.stderr)
        return 2
    names = report["joint_names"]
    for label, model in report["models"].items():
        print(f"{label}: {model['source']}")
    for path, results in per_file.items():
        print("\n".join(table(path, names, results)))
    if args.plot:
        plot(args.plot, names, per_file[args.recordings[0]])
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
