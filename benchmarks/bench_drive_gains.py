"""Drive gains of the real UR10e from its three unloaded/loaded pairs, and the 2.805 kg load
estimated from each pair with the first pair's gains and with the authors' (the table of
docs/identification.md section 15).

Data: shared/data/ur10e-mamedov2020 (Mamedov et al. 2020; not in the repository, found by
test/shared_data.py), identification_data/: ur-20_02_19_14harm50sec(Load) with the authors'
windows, ur-20_02_19_15harm50sec(Load) and ur-20_01_31-unload/-load whole. Motor currents
as recorded, filtered at 5 Hz (default decimation). Prints per pair the gains (N m/A) with
their standard deviations, the ratio to the authors' gains, the alignment lag, and the load
estimated from each pair (min_speed 0.05) with the first pair's gains and with the authors'.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_drive_gains.py
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
from manip_dynamics.core.identification.pipeline import filter_recording  # noqa: E402
from shared_data import missing_reason, shared_data  # noqa: E402

AUTHORS = np.array([10.0, 10.6956, 8.4566, 9.0029, 9.4800, 10.1232])
LOAD = 2.805
PAIRS = {"14harm (their windows)": (("ur-20_02_19_14harm50sec.csv", (195, 4966)),
                                    ("ur-20_02_19_14harm50secLoad.csv", (308, 5071))),
         "15harm": (("ur-20_02_19_15harm50sec.csv", None),
                    ("ur-20_02_19_15harm50secLoad.csv", None)),
         "01_31": (("ur-20_01_31-unload.csv", None), ("ur-20_01_31-load.csv", None))}


def run(data, model, name, rows):
    columns = csv_log.ColumnMap.from_mapping(csv_log.parse_inline(
        "t=1,q=2:7,qd=8:13,effort=14:19")).replace(rows=rows)
    log = csv_log.read_csv_joint_states(data / "identification_data" / name, columns,
                                        model.joint_names)
    return filter_recording(log.t, log.position, log.velocity, log.effort, cutoff=5.0)


def main():
    data = shared_data("ur10e-mamedov2020")
    if data is None:
        print(missing_reason("ur10e-mamedov2020"))
        return 0
    warnings.simplefilter("ignore")
    model = RobotModel.from_urdf_file(data / "ur10e.urdf")
    runs = {key: (run(data, model, *u), run(data, model, *l)) for key, (u, l) in PAIRS.items()}
    first = None
    for key, (u, l) in runs.items():
        t0 = time.process_time()
        fit = D.estimate_drive_gains(model, u, l, "tool0", LOAD)
        lag = D.align_pair(u, l)[2]
        first = fit.gain if first is None else first
        print(f"{key:<24} gains {np.round(fit.gain, 3)} +- {np.round(fit.gain_std, 3)} / "
              f"authors' {np.round(fit.gain / AUTHORS, 3)}  lag {lag:.3f} s  "
              f"({time.process_time() - t0:.1f} s CPU)")
    for key, (u, l) in runs.items():
        ours = D.estimate_payload_from_pair(model, u, l, "tool0", first, min_speed=0.05)
        theirs = D.estimate_payload_from_pair(model, u, l, "tool0", AUTHORS, min_speed=0.05)
        print(f"{key:<24} load with the first pair's gains {ours.payload_mass:.3f} kg "
              f"({100 * (ours.payload_mass / LOAD - 1):+.1f}%), with the authors' "
              f"{theirs.payload_mass:.3f} kg ({100 * (theirs.payload_mass / LOAD - 1):+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
