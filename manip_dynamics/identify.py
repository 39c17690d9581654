"""Identify an arm's inertial parameters from a joint_states recording (ROS-free CLI).

    python -m manip_dynamics.identify RECORDING.mcap --urdf ARM.urdf --out IDENTIFIED.urdf

RECORDING: a rosbag2 MCAP file, or the bag directory ``ros2 bag record -s mcap
/joint_states`` writes (its metadata.yaml and one or several .mcap files), with
sensor_msgs/JointState on ``--topic`` (position and effort required, velocity optional), or
:func:`manip_dynamics.core.identification.recording.write_joint_states`. Writes the identified URDF
(same links and joints, new ``<inertial>`` and ``<dynamics>`` values), a JSON report next to it
(``--report``), the dynamics side file beside it (``IDENTIFIED.dynamics.yaml``: the
identified armature and friction model, the drive gains; docs/side_file.md) and a plot of
measured against predicted torques (``--plot``). A CSV log
(a real arm's logger) is read through a column map (``--columns MAP.yaml`` and/or
``--csv-map t=1,q=2:7,...``; 1-based columns), ``--rows FIRST:LAST`` its window; its bad
rows are skipped and reported (docs/identification.md section 14). ``--drive-gains``
multiplies the efforts (motor currents -> N m) of either kind of recording. The last
``--holdout`` fraction of the recording is never fitted: the RMS torque errors before
(URDF) and after (identified URDF) are measured on it. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np


def _parser():
    p = argparse.ArgumentParser(prog="python -m manip_dynamics.identify", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("recording", help="rosbag2 MCAP file with sensor_msgs/JointState, or the "
                   "bag directory ros2 bag record -s mcap writes (one or several .mcap files "
                   "and its metadata.yaml), or a CSV log (.csv/.tsv/.txt, or any file given "
                   "with --columns / --csv-map)")
    csv = p.add_argument_group("CSV logs (docs/identification.md, 'A real arm: CSV logs')")
    csv.add_argument("--columns", metavar="MAP.yaml", default=None,
                     help="the CSV log's column map: keys t, q, qd, effort (1-based columns: "
                          "N, \"A:B\" or a list), t_unit, q_unit, qd_unit, drive_gains, rows, "
                          "delimiter, header, joints")
    csv.add_argument("--csv-map", metavar="KEY=VALUE,...", default=None,
                     help="the column map inline, e.g. t=1,q=2:7,qd=8:13,effort=14:19 "
                          "(overrides --columns key by key)")
    csv.add_argument("--rows", metavar="FIRST:LAST", default=None,
                     help="CSV: keep file lines FIRST..LAST (1-based, inclusive)")
    p.add_argument("--drive-gains", metavar="K1,...,Kn", default=None,
                   help="per-joint N m per effort unit (e.g. N m/A when the efforts are motor "
                        "currents), in the model's joint order: effort x K is the torque")
    pair = p.add_argument_group("drive gains from a run without and one with a known load "
                                "(docs/identification.md, 'Drive gains')")
    pair.add_argument("--estimate-drive-gains", nargs=2, metavar=("UNLOADED", "LOADED"),
                      default=None,
                      help="two recordings of the same excitation (read like RECORDING, "
                           "efforts as recorded, e.g. motor currents), the second carrying a "
                           "load of --payload-mass at --payload-frame: the drive gains are "
                           "estimated, used for RECORDING and written to the side file "
                           "beside --out; the load is then estimated from the pair")
    pair.add_argument("--payload-mass", type=float, default=None, metavar="KG",
                      help="the load's mass in the LOADED run, kg")
    pair.add_argument("--payload-frame", default=None, metavar="LINK",
                      help="the link the load is fixed to (default tool0, else the last link)")
    p.add_argument("--urdf", required=True,
                   help="the arm's URDF or xacro (the prior and the structure)")
    from .core.dynamics.description import add_arguments
    add_arguments(p)   # --xacro-arg, --package-path
    p.add_argument("--out", required=True, help="identified URDF to write")
    p.add_argument("--topic", default="/joint_states")
    p.add_argument("--root-link", default=None)
    p.add_argument("--cutoff", type=float, default=10.0, help="low-pass cutoff, Hz (default 10)")
    p.add_argument("--decimate", type=int, default=None,
                   help="keep every k-th filtered sample (default fs / (5 cutoff))")
    p.add_argument("--holdout", type=float, default=0.25,
                   help="fraction at the end kept for validation (default 0.25)")
    p.add_argument("--min-speed", type=float, default=0.05,
                   help="drop a joint's equations where |qd| < this, rad/s or m/s (stick-slip "
                        "at reversals; default 0.05)")
    p.add_argument("--effort-delay", type=float, default=0.0,
                   help="s: the efforts describe the torque this long before their stamp "
                        "(arm_simulator: half its publish period); they are interpolated back "
                        "to the stamps (default 0)")
    p.add_argument("--no-friction", action="store_true", help="do not identify friction")
    p.add_argument("--friction-model", default="symmetric",
                   choices=("symmetric", "asymmetric", "offset", "asymmetric+offset"),
                   help="viscous + Coulomb (symmetric, default), Coulomb per direction "
                        "(asymmetric), + a constant offset (offset), or both")
    p.add_argument("--friction-width", metavar="W or W1,...,Wn", default=None,
                   help="rad/s: the smooth sign tanh(qd / W) in place of sign(qd) (one width, "
                        "or one per joint; default 0: sign)")
    p.add_argument("--no-armature", action="store_true",
                   help="do not identify the joints' armature (reflected rotor inertia)")
    p.add_argument("--unconstrained", action="store_true",
                   help="write the weighted-LS estimate closest to the URDF instead of the "
                        "physically consistent fit (may not be a real body)")
    p.add_argument("--residual-tolerance", type=float, default=1e-3,
                   help="consistent fit: among real arms whose weighted residual is within "
                        "(1 + this) of the best, the one closest to the URDF (default 1e-3)")
    p.add_argument("--report", default=None, help="JSON report (default: OUT.report.json)")
    p.add_argument("--plot", default=None, help="PNG plot (default: OUT.torques.png)")
    p.add_argument("--no-plot", action="store_true")
    return p


class Progress:
    """Plain-text progress bar on stderr: '\\r' updates on a terminal, a line per 25% else."""

    def __init__(self, label, stream=None):
        stream = sys.stderr if stream is None else stream      # today's, not the import's
        self.label, self.stream, self.last = label, stream, -1
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def __call__(self, done, total):
        pct = int(100 * done / max(total, 1))
        if self.tty:
            bar = "#" * (pct // 5)
            self.stream.write(f"\r{self.label} [{bar:<20}] {pct:3d}% ({done}/{total})")
            if done >= total:
                self.stream.write("\n")
        elif pct // 25 > self.last // 25 or done >= total:
            self.stream.write(f"{self.label}: {pct}% ({done}/{total})\n")
        self.last = pct
        self.stream.flush()


def _log(text):
    print(text, file=sys.stderr, flush=True)


def load_samples(args, model):
    """-> (fit Samples, held-out Samples, RowReport of a CSV log or None) from the recording
    (read, efforts x drive gains, filter, decimate, split)."""
    from .core.identification.pipeline import filter_recording
    from .core.identification.csv_log import ColumnMapError
    from .core.identification.recording import read_joint_states
    from .rules.state_buffer import delay_efforts

    if is_csv(args):
        log = read_csv(args, model)
        q, qd, tau = log.in_order(model.joint_names)
        _log(log.skipped.line())
    else:
        if args.rows is not None:
            raise ColumnMapError("--rows is for CSV logs (an MCAP recording has no rows)")
        log = read_joint_states(args.recording, args.topic)
        q, qd, tau = log.in_order(model.joint_names)
        if tau is None:
            raise SystemExit(f"{args.recording}: the JointState messages carry no effort")
        if args.drive_gains is not None:
            tau = tau * np.asarray(_gains(args.drive_gains, model.n))
    _log(f"{args.recording}: {len(log.t)} samples over {log.t[-1]:.2f} s, "
         f"{len(log.names)} joints" + ("" if qd is not None else " (no velocity: from q)"))
    t = log.t
    if args.effort_delay:
        if not 0 < args.effort_delay < 0.5 * t[-1]:
            raise SystemExit("--effort-delay must be >= 0 and shorter than the recording")
        keep, tau = delay_efforts(t, tau, args.effort_delay)
        t, q, qd = t[keep], q[keep], None if qd is None else qd[keep]
    samples = filter_recording(t, q, qd, tau, cutoff=args.cutoff, decimate=args.decimate)
    if not 0 <= args.holdout < 1:
        raise SystemExit("--holdout must be in [0, 1)")
    return (*samples.split(1.0 - args.holdout), log.skipped)


def is_csv(args):
    """A CSV log: a column map given, or a .csv / .tsv / .txt file."""
    return (args.columns is not None or args.csv_map is not None
            or os.path.splitext(args.recording)[1].lower() in (".csv", ".tsv", ".txt"))


def _gains(text, n):
    from .core.identification.csv_log import ColumnMapError, drive_gains
    gains = drive_gains(text)
    if len(gains) != n:
        raise ColumnMapError(f"--drive-gains: {len(gains)} gains for {n} joints")
    return gains


def column_map(args):
    """The ColumnMap of --columns (YAML) updated by --csv-map, --drive-gains, --rows."""
    from .core.identification.csv_log import (ColumnMap, ColumnMapError, drive_gains,
                                              load_column_map, parse_inline, row_window)
    if args.columns is None and args.csv_map is None:
        raise ColumnMapError(f"{args.recording}: a CSV log needs its column map: --columns "
                             "MAP.yaml or --csv-map t=1,q=2:7,... (which columns are t, q, "
                             "qd, effort)")
    mapping = {}
    if args.columns is not None:
        mapping = load_column_map(args.columns)
        if not isinstance(mapping, dict):
            raise ColumnMapError(f"{args.columns}: expected a mapping of keys, got {mapping!r}")
    if args.csv_map is not None:
        mapping = {**mapping, **parse_inline(args.csv_map)}
    source = " + ".join(x for x in (args.columns, args.csv_map and "--csv-map") if x)
    columns = ColumnMap.from_mapping(mapping, source)
    if args.drive_gains is not None:
        columns = columns.replace(drive_gains=drive_gains(args.drive_gains))
    if args.rows is not None:
        columns = columns.replace(rows=row_window(args.rows))
    return columns


def read_csv(args, model):
    """JointStateLog of the CSV recording (rows beyond the model's limits skipped)."""
    from .core.identification.csv_log import (ColumnMapError, model_limits,
                                              read_csv_joint_states)
    columns = column_map(args)
    if columns.effort is None:
        raise ColumnMapError(f"{args.recording}: the column map gives no effort column; "
                             "identification needs the joint torques (effort=A:B, with "
                             "--drive-gains when the log holds motor currents)")
    names = columns.joints or model.joint_names
    if len(columns.q) != model.n:
        raise ColumnMapError(f"the column map has {len(columns.q)} q columns, the model "
                             f"{model.n} joints ({', '.join(model.joint_names)})")
    return read_csv_joint_states(args.recording, columns, names, model_limits(model, names))


def run(args):
    """The pipeline -> (report dict, model, validation Samples, tau_urdf, tau_identified)."""
    from .core import RobotModel
    from .core.dynamics.description import load_description
    from .core.identification.pipeline import identified_urdf, identify
    from .core.identification.regressor import base_parameters

    prior_xml = load_description(args.urdf, args.xacro_arg, args.package_path)
    model = RobotModel.from_urdf_string(prior_xml, root_link=args.root_link)
    if args.friction_width is not None:
        model = model.with_friction(width=_widths(args.friction_width, model.n))
    gains = None
    if args.estimate_drive_gains is not None:      # then written to the side file as given
        gains = estimate_gains(args, model)
        args.drive_gains = ",".join(repr(float(k)) for k in gains["gain"])
    fit, held, rows = load_samples(args, model)
    friction = False if args.no_friction else args.friction_model
    armature = not args.no_armature
    t0 = time.perf_counter()
    base = base_parameters(model, friction, armature=armature)
    _log(f"{base.count} base parameters of {len(base.names)} "
         f"(gap {base.r_kept:.2g} kept / {base.r_dropped:.2g} dropped); "
         + ("weighted least squares" if args.unconstrained else
            "weighted least squares, then the physically consistent fit"))
    result = identify(model, fit, friction, consistent=not args.unconstrained, base=base,
                      min_speed=args.min_speed, progress=Progress("regressor"),
                      tolerance=args.residual_tolerance, armature=armature)
    xml, notes = identified_urdf(prior_xml, model, result.pi, friction, armature)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(xml)
    side = _write_side_file(args, model, result, notes)
    bodies, problems = _check_written(xml, prior_xml, model, args.root_link)
    data = held if len(held) else fit
    before, after = _predictions(model, xml, args.root_link, result, data, notes, side)
    report = _report(model, result, fit, held, before, after, notes,
                     time.perf_counter() - t0)
    report["rms_unconstrained"] = _rms_unconstrained(model, result, data)
    report.update(side_file=str(side), armature=_armature_report(model, result),
                  friction_model=result.friction or None,
                  friction_width=model.friction_width.tolist())
    report.update(recording=args.recording, urdf=args.urdf, out=args.out, cutoff_hz=args.cutoff,
                  residual_tolerance=args.residual_tolerance,
                  written_bodies=[vars(b) for b in bodies],
                  warnings=list(result.warnings) + problems)
    for warning in report["warnings"]:
        _log("WARNING: " + warning)
    if gains is not None:
        gains["side_file"] = str(side)
        report["drive_gains"] = gains
    if rows is not None:
        report["csv_rows"] = rows.as_dict()
        report["csv_rows_text"] = rows.line()
    return report, model, data, before, after


def _check_pair_arguments(args, model):
    """The link of the load; ColumnMapError (exit 2) for a pair without its mass, a mass not
    > 0, gains both given and estimated, an unknown frame."""
    from .core.identification.csv_log import ColumnMapError
    if args.payload_mass is None:
        raise ColumnMapError("--estimate-drive-gains needs --payload-mass KG (the load's mass "
                             "in the LOADED run): the currents alone fix the gains only up "
                             "to a common scale")
    if not args.payload_mass > 0 or not np.isfinite(args.payload_mass):
        raise ColumnMapError(f"--payload-mass must be > 0 kg, got {args.payload_mass!r}")
    if args.drive_gains is not None:
        raise ColumnMapError("--drive-gains and --estimate-drive-gains: give one of them")
    frame = args.payload_frame or ("tool0" if "tool0" in model.frame_names
                                   else model.body_links[-1])
    if frame not in model.frame_names:
        raise ColumnMapError(f"--payload-frame {frame!r} is not a link of the model")
    return frame


def _pair_samples(args, path, model):
    """Samples of one run of the pair: its efforts as recorded (no gains, no window),
    filtered at --cutoff."""
    from .core.identification.csv_log import ColumnMapError
    from .core.identification.pipeline import filter_recording
    from .core.identification.recording import read_joint_states
    one = argparse.Namespace(**{**vars(args), "recording": path, "drive_gains": None,
                                "rows": None})
    if is_csv(one):
        if column_map(one).drive_gains is not None:
            raise ColumnMapError("the column map gives drive_gains and --estimate-drive-gains "
                                 "estimates them: give one of them")
        log = read_csv(one, model)
        q, qd, effort = log.in_order(model.joint_names)
        _log(f"{path}: {log.skipped.line()}")
    else:
        log = read_joint_states(path, args.topic)
        q, qd, effort = log.in_order(model.joint_names)
        if effort is None:
            raise ColumnMapError(f"{path}: the JointState messages carry no effort")
    return filter_recording(log.t, q, qd, effort, cutoff=args.cutoff, decimate=args.decimate)


def estimate_gains(args, model):
    """The drive gains of the pair (drive_gains.estimate_drive_gains) and the load estimated
    back from it with them (estimate_payload_from_pair) -> report dict. An InputError of
    the estimate (runs not on the same path, a gain not > 0) becomes a ColumnMapError: the
    files given cannot give what was asked (exit 2)."""
    from .core.errors import InputError
    from .core.identification.csv_log import ColumnMapError
    from .core.identification.drive_gains import (estimate_drive_gains,
                                                  estimate_payload_from_pair)
    frame = _check_pair_arguments(args, model)
    unloaded, loaded = (_pair_samples(args, path, model) for path in args.estimate_drive_gains)
    try:
        fit = estimate_drive_gains(model, unloaded, loaded, frame, args.payload_mass)
        back = estimate_payload_from_pair(model, unloaded, loaded, frame, fit.gain,
                                          min_speed=args.min_speed)
    except InputError as e:
        raise ColumnMapError(f"--estimate-drive-gains: {e}") from None
    _log("drive gains (N m per effort unit): " + ", ".join(
        f"{k:.4g} +- {s:.2g}" for k, s in zip(fit.gain, fit.gain_std)))
    return {"unloaded": args.estimate_drive_gains[0], "loaded": args.estimate_drive_gains[1],
            "payload_frame": frame, "payload_mass_given": args.payload_mass,
            "gain": fit.gain.tolist(), "gain_std": fit.gain_std.tolist(),
            "payload_com_fit": fit.payload_com.tolist(),
            "payload_mass_estimated": back.payload_mass,
            "payload_mass_estimated_std": float(back.payload_std[0]),
            "payload_com_estimated": back.payload_com.tolist()}


def _widths(text, n):
    """--friction-width: one width or n, >= 0 (rad/s)."""
    from .core.identification.csv_log import ColumnMapError
    try:
        widths = [float(x) for x in text.split(",")]
    except ValueError:
        raise ColumnMapError(f"--friction-width {text!r}: numbers separated by commas "
                             "expected") from None
    if len(widths) not in (1, n) or not all(np.isfinite(w) and w >= 0 for w in widths):
        raise ColumnMapError(f"--friction-width {text!r}: one width or {n}, each finite and "
                             ">= 0 (rad/s; 0: sign(qd))")
    return widths[0] if len(widths) == 1 else widths


def _write_side_file(args, model, result, notes):
    """The side file beside --out (side_file_beside): the model's armature and friction with
    the identified ones (pipeline.identified_model; negative estimates as 0, noted) and the
    drive gains of --drive-gains / the column map (1 if none). -> its path."""
    from .core.dynamics.side_file import side_file_beside, write_side_file
    from .core.identification.pipeline import identified_model
    identified, more = identified_model(model, result.pi, result.friction, result.armature)
    notes.extend(more)
    gains = _drive_gains_used(args, model)
    fit = "consistent" if result.consistent else "least-squares"
    comment = (f"identified by manip_dynamics.identify ({fit} fit, friction "
               f"{result.friction or 'not identified'}, armature "
               f"{'identified' if result.armature else 'not identified'}) from "
               f"{os.path.basename(args.recording)}")
    if args.estimate_drive_gains is not None:
        comment += (f"\ndrive gains estimated from {os.path.basename(args.estimate_drive_gains[0])}"
                    f" and {os.path.basename(args.estimate_drive_gains[1])} (a "
                    f"{args.payload_mass} kg load)")
    if result.inseparable_armature:
        comment += ("\narmature not separable from the link inertias (takes what the URDF's "
                    "link does not hold): " + ", ".join(result.inseparable_armature))
    return write_side_file(side_file_beside(args.out), identified, gains, comment=comment)


def _drive_gains_used(args, model):
    """(n,) the drive gains the efforts were multiplied by (None: 1)."""
    if args.drive_gains is not None:
        return np.asarray(_gains(args.drive_gains, model.n))
    if is_csv(args):
        gains = column_map(args).drive_gains
        if gains is not None and len(gains) == model.n:
            return np.asarray(gains, dtype=float)
    return None


def _armature_report(model, result):
    """{joint: armature} as written (kg m^2), and which joints are inseparable."""
    from .core.identification.regressor import term_values
    if not result.armature:
        return None
    values = term_values(model, result.pi, result.friction, True)["armature"]
    return {"values": dict(zip(model.joint_names, np.maximum(values, 0.0).tolist())),
            "inseparable": list(result.inseparable_armature)}


def _check_written(xml, prior_xml, model, root_link):
    """(BodyCheck list, warnings) of the written URDF read back (pipeline.check_written_urdf)."""
    from .core.identification.pipeline import check_written_urdf
    from .core.identification.regressor import model_parameters
    return check_written_urdf(xml, prior_xml, model_parameters(model), root_link)


def _rms_unconstrained(model, result, data):
    """Held-out RMS (n,) of the unconstrained estimate, predicted as its URDF would (sign(qd)
    of the samples for the Coulomb column, as the written URDF's rms_after is): Y pi with
    the filtered Coulomb column of the fit flattered it (j1 of the UR10e: 1.16 against the
    2.07 N m its URDF gives)."""
    from .core.identification.pipeline import Samples, predicted_torques, rms_error
    plain = Samples(data.t, data.q, data.qd, data.qdd, data.tau)
    friction = result.friction or True
    pi = _with_friction(model, result, result.pi_unconstrained)
    return rms_error(predicted_torques(model, pi, plain, friction, result.armature),
                     data.tau).tolist()


def _predictions(model, xml, root_link, result, data, notes, side):
    """(tau of the URDF, tau of the identified URDF with its side file ``side``, as the
    dynamics node loads them) over ``data``; if the identified URDF does not load (an
    unconstrained estimate that is no real body), tau = Y pi instead."""
    from .core import ManipDynamicsError, RobotModel
    from .core.dynamics.side_file import load_side_file
    from .core.identification.pipeline import predicted_torques

    before = model.inverse_dynamics(data.q, data.qd, data.qdd, friction=True)
    try:
        identified = RobotModel.from_urdf_string(xml, root_link=root_link)
        identified = load_side_file(side, identified).model
        after = identified.inverse_dynamics(data.q, data.qd, data.qdd, friction=True)
    except ManipDynamicsError as e:
        notes.append(f"the identified URDF does not load ({e}); torques predicted as Y pi")
        after = predicted_torques(model, _with_friction(model, result, result.pi), data,
                                  result.friction or True, result.armature)
    return before, after


def _with_friction(model, result, pi):
    """pi with the friction coefficients (the URDF's symmetric ones if friction was not
    identified)."""
    return pi if result.friction else np.concatenate([pi, model.viscous, model.coulomb])


def _report(model, result, fit, held, before, after, notes, elapsed):
    from .core.identification.pipeline import rms_error

    data = held if len(held) else fit
    beta, std = result.beta, result.beta_std
    return {
        "joint_names": list(model.joint_names),
        "fit_samples": len(fit), "held_out_samples": len(held),
        "rms_torque_error_on": "held-out" if len(held) else "fit (no held-out data)",
        "rms_before": rms_error(before, data.tau).tolist(),
        "rms_after": rms_error(after, data.tau).tolist(),
        "condition_number": result.condition_number,
        "sigma_joint": result.sigma_joint.tolist(),
        "consistent": result.consistent, "friction": result.friction,
        "solver": result.solver, "solver_status": result.solver_status,
        "stage_statuses": result.stage_statuses,
        "optimality_gap": result.optimality_gap, "relative_residual": result.residual,
        "best_relative_residual": result.best_residual,
        "base_parameters": [
            {"expression": e, "value": float(b), "std": float(s),
             "relative_std_percent": float(100 * s / abs(b)) if b else None,
             "value_written": float(w)}
            for e, b, s, w in zip(result.base.expressions(), beta, std, result.beta_of_pi)],
        "notes": notes, "seconds": elapsed,
    }


def plot(path, joint_names, samples, before, after):
    """Measured tau against the URDF's and the identified model's predictions, per joint."""
    from .core.extras import import_extra
    import_extra("matplotlib", __name__).use("Agg")
    plt = import_extra("matplotlib.pyplot", __name__)

    n = len(joint_names)
    fig, axes = plt.subplots(n, 1, figsize=(9, 1.8 * n + 0.6), sharex=True, squeeze=False)
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(samples.t, samples.tau[:, j], "k", lw=1.4, label="measured")
        ax.plot(samples.t, before[:, j], "r--", lw=0.9, label="URDF")
        ax.plot(samples.t, after[:, j], "b", lw=0.9, label="identified")
        ax.set_ylabel(f"{joint_names[j]}\nN m", fontsize=7)
    axes[0, 0].legend(loc="upper right", fontsize=7, ncol=3)
    axes[-1, 0].set_xlabel("t (s), validation data")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _print_gains(names, gains):
    print(f"drive gains from {gains['unloaded']} and {gains['loaded']} "
          f"({gains['payload_mass_given']} kg at {gains['payload_frame']}), written to "
          f"{gains['side_file']}:")
    for name, k, s in zip(names, gains["gain"], gains["gain_std"]):
        print(f"  {name:<24} {k:10.5g} +- {s:.2g}")
    com = ", ".join(f"{c:.4f}" for c in gains["payload_com_estimated"])
    print(f"the load estimated back from the pair with these gains: "
          f"{gains['payload_mass_estimated']:.4g} +- {gains['payload_mass_estimated_std']:.2g} "
          f"kg, centre of mass [{com}] m in {gains['payload_frame']}")


def _print_summary(report):
    from .core.identification.pipeline import BodyCheck
    if "csv_rows_text" in report:
        print(report["csv_rows_text"])
    if "drive_gains" in report:
        _print_gains(report["joint_names"], report["drive_gains"])
    print(f"condition number of the weighted base regressor: {report['condition_number']:.4g}")
    print(f"{'base parameter':<60} {'value':>12} {'std %':>8}")
    for p in report["base_parameters"]:
        rel = "-" if p["relative_std_percent"] is None else f"{p['relative_std_percent']:.3g}"
        print(f"{p['expression'][:60]:<60} {p['value']:>12.5g} {rel:>8}")
    if report["consistent"]:
        stages = ", ".join(f"{k}: {v}" for k, v in report["stage_statuses"].items())
        print(f"physically consistent fit: {report['solver']} {report['solver_status']} "
              f"({stages}), optimality gap {report['optimality_gap']:.2g} (primal - dual); "
              f"relative weighted residual {report['relative_residual']:.4g} (best "
              f"{report['best_relative_residual']:.4g}, tolerance "
              f"{report['residual_tolerance']:g}), the closest to the URDF")
    print("bodies as written, read back:")
    for body in report["written_bodies"]:
        print("  " + BodyCheck(**body).line())
    written = "consistent" if report["consistent"] else "identified"
    print(f"RMS torque error ({report['rms_torque_error_on']}), per joint, N m:")
    print(f"  {'joint':<24} {'URDF':>10}   {'unconstrained':>13}   {written:>10}")
    for name, b, u, a in zip(report["joint_names"], report["rms_before"],
                             report["rms_unconstrained"], report["rms_after"]):
        print(f"  {name:<24} {b:10.4g}   {u:13.4g}   {a:10.4g}")
    if report.get("armature"):
        insep = set(report["armature"]["inseparable"])
        print("armature (kg m^2), written to the side file "
              f"{report['side_file']}" + (" (*: not separable from the link's inertia)"
                                          if insep else "") + ":")
        for name, value in report["armature"]["values"].items():
            print(f"  {name:<24} {value:10.4g}{' *' if name in insep else ''}")
    else:
        print(f"side file: {report['side_file']}")
    for note in report["notes"]:
        print("note:", note)
    for warning in report["warnings"]:
        print("WARNING:", warning)


def main(argv=None):
    args = _parser().parse_args(argv)
    from .core.errors import ManipDynamicsError
    from .core.extras import import_extra
    from .core.identification.csv_log import ColumnMapError
    try:
        if not args.no_plot:       # before the fit, not after it
            import_extra("matplotlib", "the torque plot (--no-plot skips it)")
        report, model, data, before, after = run(args)
    except ColumnMapError as e:    # the invocation does not fit the file: as argparse's
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (ManipDynamicsError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    stem = os.path.splitext(args.out)[0]
    with open(args.report or stem + ".report.json", "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    if not args.no_plot:
        plot(args.plot or stem + ".torques.png", model.joint_names, data, before, after)
    _print_summary(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
