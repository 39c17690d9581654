"""Contact detection on the real UR10e (issue 33): per run, false contacts, pushes found /
labelled and detection delay, with the default options, with calibration and with
motion-following thresholds. No ROS: ContactMonitor.update at the runs' own stamps.

Data: shared/data/ur10e-mamedov2020 (not in the repository); the model: its ur10e.urdf
with the authors' armature, friction (viscous, Coulomb) and drive gains written into a
side file in a temp dir (test/ur10e_contact.py); calibrated on
identification_data/ur-20_02_10-30sec_12harm.csv (the authors' fit run). The four runs
with a payload the model lacks (2.6-2.8 kg) are marked: their load is external; so is
ur-19_09_27-11_32_02.csv, whose first rows are garbled (q jumping by a radian between
10 ms rows, in-range values in the wrong columns): the reader skips them.

Delay: samples from the first sample where |tau - level| (level: the mean tau of the 0.1 s
up to the push's start) exceeds the enter threshold in force on some joint to the
contact's first sample (negative: the residual crossed first; test/ur10e_contact.judge).

Run: PYTHONPATH=. .venv/bin/python benchmarks/contact_real_arm.py [--runs SUBSTR]
[--margin 2] [--calibrate-on identification_data/RUN.csv] [--gains 50] [--loaded]
[--plot docs/images/contact_real_arm.png] [--json F]   (about 1-2 min CPU for all runs)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "test")]

import numpy as np  # noqa: E402

import ur10e_contact as U  # noqa: E402
from shared_data import missing_reason, shared_data  # noqa: E402

MODES = ("fixed", "calibrated", "motion")


def runs(folder, pattern, calibration_run):
    names = sorted(str(p.relative_to(folder)) for p in folder.glob("*/*.csv")
                   if p.parent.name != "jointwise_motion")
    return [n for n in names if pattern in n and n != calibration_run]


def evaluate(model, run, name, cals):
    row = {}
    for mode in MODES:
        res = U.replay(model, run, U.options(mode), cals.get(mode))
        if name in U.PUSHES:
            j = U.judge(run, res, U.PUSHES[name], cals["motion"].settle + 0.2)
            row[mode] = {"found": int(sum(j.found)), "labelled": len(j.found),
                         "delays": [None if d is None else int(d) for d in j.delays],
                         "samples_outside": j.outside}
        else:
            row[mode] = {"false_contacts": int(len(U.contacts(res.in_contact))),
                         "in_contact": float(res.in_contact.mean())}
    return row


def cell(r):
    if "found" in r:
        return (f"{r['found']}/{r['labelled']} found, delays {r['delays']}, "
                f"outside {r['samples_outside']}")
    return f"{r['false_contacts']} ({100 * r['in_contact']:.0f}% in contact)"


def plot(model, folder, gain, cal, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    name = "collision/ur-20_01_22-push_pose_2.csv"
    run = U.read_run(folder, name, model, gain)
    res = U.replay(model, run, U.options("motion"), cal)
    fig, axes = plt.subplots(3, 1, figsize=(10, 7), sharex=True)
    for ax, j in zip(axes, range(3)):
        ax.plot(run.t, res.residual[:, j], lw=1, label="estimate r - bias")
        ax.plot(run.t, res.enter[:, j], "k--", lw=0.8, label="enter threshold")
        ax.plot(run.t, -res.enter[:, j], "k--", lw=0.8)
        for a, b in U.PUSHES[name]:
            ax.axvspan(run.t[a - 1], run.t[b - 1], color="orange", alpha=0.2)
        ax.fill_between(run.t, -80, 80, where=res.in_contact, color="red", alpha=0.08, step="mid")
        ax.set_ylim(-80, 80)
        ax.set_ylabel(f"{model.joint_names[j]}\nN m", fontsize=8)
    axes[0].legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("t (s): push_pose_2; orange: labelled pushes; red: in contact")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


PAYLOAD = {"ur-20_01_13-load_2600.csv": 2.6}   # kg at tool0, by its name; the others 2.805
                                              # (the data's README)


def loaded(folder, gain, base, calibrate_on):
    """The runs with a payload, the payload in the model (a point mass at tool0's origin,
    its mass from the data's README), calibrated on ``calibrate_on`` (another loaded run
    with its payload, or an unloaded run with the model without one): contacts entered per
    run (the payload runs of the table above, with the model a user would give)."""
    def with_load(name):
        return base.with_payload("tool0", PAYLOAD.get(name, 2.805))

    cal_name = Path(calibrate_on).name
    model = with_load(cal_name) if cal_name in U.LOADED else base
    cal = U.calibrate(model, U.read_run(folder, calibrate_on, model, gain), "motion")
    print(f"payload in the model, calibrated on {cal_name}:")
    for name in U.LOADED:
        if name == cal_name:
            continue
        model = with_load(name)
        run = U.read_run(folder, "identification_data/" + name, model, gain)
        res = U.replay(model, run, U.options("motion"), cal)
        print(f"  {name}: motion: {len(U.contacts(res.in_contact))} "
              f"({100 * res.in_contact.mean():.0f}% in contact)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="", help="only runs whose path contains this")
    ap.add_argument("--plot", default=None, help="write the picture of push_pose_2 here")
    ap.add_argument("--json", default=None)
    ap.add_argument("--margin", type=float, default=2.0, help="calibrate_contact's margin")
    ap.add_argument("--calibrate-on", default=U.CALIBRATION_RUN,
                    help="the run to calibrate on (default: the authors' fit run)")
    ap.add_argument("--gains", type=float, default=U.GAINS, help="the observer's K_O (1/s)")
    ap.add_argument("--loaded", action="store_true",
                    help="only the payload runs, the payload in the model (calibrated on "
                         "--calibrate-on: a loaded run, or an unloaded one)")
    args = ap.parse_args()
    U.GAINS = args.gains                      # (U.options reads it)
    folder = shared_data(U.DATA)
    if folder is None:
        print(missing_reason(U.DATA))
        return
    model, gain = U.model_with_side_file(folder, tempfile.mkdtemp())
    if args.loaded:
        loaded(folder, gain, model, args.calibrate_on)
        return
    cal_run = U.read_run(folder, args.calibrate_on, model, gain)
    cals = {m: U.calibrate(model, cal_run, m, margin=args.margin) for m in MODES[1:]}
    c = cals["motion"]
    for f in ("bias", "constant", "rest", "speed", "accel", "band"):
        print(f"{f:9s}", np.round(getattr(c, f), 2))
    out = {}
    for name in runs(folder, args.runs, args.calibrate_on):
        out[name] = row = evaluate(model, U.read_run(folder, name, model, gain), name, cals)
        load = (" (payload)" if Path(name).name in U.LOADED else
                " (garbled rows)" if Path(name).name in U.GARBLED else "")
        print(f"{Path(name).name}{load}: " + " | ".join(f"{m}: {cell(row[m])}" for m in MODES),
              flush=True)
    if args.plot:
        plot(model, folder, gain, cals["motion"], args.plot)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
