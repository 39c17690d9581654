"""``python -m manip_dynamics.identify`` end to end, in a separate process: a simulated
Panda plant (10-30% mass/CoM errors, unknown payload, friction) tracked along an excitation
trajectory, recorded as a rosbag2 MCAP file of sensor_msgs/JointState with 1% torque
noise; the CLI writes an identified URDF, a report and a plot."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from core.identification.identification_plant import excitation, panda_models, simulate
from manip_dynamics import RobotModel, robots
from manip_dynamics.core.identification.recording import write_joint_states

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_cli_identifies_a_recording(tmp_path):
    _, model, true = panda_models(seed=2)
    trajectory = excitation()      # fixed (core/identification/identification_plant.py)
    t, q, qd, tau = simulate(true, model, trajectory)
    rng = np.random.default_rng(0)
    tau = tau + rng.normal(size=tau.shape) * 0.01 * np.sqrt(np.mean(tau ** 2, axis=0))
    bag = tmp_path / "run.mcap"
    write_joint_states(bag, 1.7e9 + t, model.joint_names, q, qd, tau)
    out = tmp_path / "identified.urdf"
    proc = subprocess.run(
        [sys.executable, "-m", "manip_dynamics.identify", str(bag), "--urdf",
         robots.path("panda"), "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "regressor: 100%" in proc.stderr                  # progress (not a terminal)
    assert "base parameters" in proc.stderr and "RMS torque error" in proc.stdout
    report = json.loads((tmp_path / "identified.report.json").read_text())
    before, after = np.array(report["rms_before"]), np.array(report["rms_after"])
    assert report["held_out_samples"] > 0 and (after < before / 5).all(), (before, after)
    assert report["consistent"] and len(report["base_parameters"]) > 40
    # the semidefinite fit: certified optimum, both fits' held-out errors side by side
    assert report["solver_status"] == "optimal" and abs(report["optimality_gap"]) < 1e-8
    assert "optimality gap" in proc.stdout and "unconstrained" in proc.stdout
    free = np.array(report["rms_unconstrained"])
    assert free.shape == after.shape and (free < before / 5).all(), (free, before)
    identified = RobotModel.from_urdf_file(out)
    assert identified.joint_names == model.joint_names
    assert (tmp_path / "identified.torques.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_reports_a_recording_without_effort(tmp_path):
    model = RobotModel.from_urdf_file(robots.path("panda"))
    t = np.arange(200) * 1e-3
    bag = tmp_path / "no_effort.mcap"
    write_joint_states(bag, 1.7e9 + t, model.joint_names, np.zeros((200, model.n)))
    proc = subprocess.run(
        [sys.executable, "-m", "manip_dynamics.identify", str(bag), "--urdf",
         robots.path("panda"), "--out", str(tmp_path / "x.urdf")],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "carry no effort" in proc.stderr
    # The same recording as the bag directory `ros2 bag record -s mcap` writes: read (was
    # "[Errno 21] Is a directory").
    (tmp_path / "bag").mkdir()
    bag.rename(tmp_path / "bag" / "bag_0.mcap")
    proc = subprocess.run(
        [sys.executable, "-m", "manip_dynamics.identify", str(tmp_path / "bag"), "--urdf",
         robots.path("panda"), "--out", str(tmp_path / "x.urdf")],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "carry no effort" in proc.stderr, proc.stderr


def test_effort_delay_undoes_a_lag_of_the_efforts(tmp_path):
    """A 100 Hz recording whose efforts are the torque 5 ms before their stamps (what
    arm_simulator publishes: the torque held over the last period, centred half a period
    back): --effort-delay 0.005 interpolates them back to the stamps, and the held-out
    torque error falls (the model never sees the lag)."""
    from manip_dynamics import identify
    _, model, true = panda_models(seed=2)
    trajectory = excitation()      # fixed (core/identification/identification_plant.py)
    t, q, qd, tau = simulate(true, model, trajectory)
    k = np.arange(10, len(t), 10)                             # 100 Hz
    lagged = np.stack([np.interp(t[k] - 0.005, t, col) for col in tau.T], axis=1)
    bag = tmp_path / "lagged.mcap"
    write_joint_states(bag, 1.7e9 + t[k], model.joint_names, q[k], qd[k], lagged)
    rms = {}
    for delay in ("0", "0.005"):
        out = tmp_path / f"identified_{delay}.urdf"
        assert identify.main([str(bag), "--urdf", robots.path("panda"), "--out", str(out),
                              "--unconstrained", "--no-plot", "--effort-delay", delay]) == 0
        report = json.loads((tmp_path / f"identified_{delay}.report.json").read_text())
        rms[delay] = np.array(report["rms_after"])
    print(rms)
    assert np.linalg.norm(rms["0.005"]) < 0.5 * np.linalg.norm(rms["0"])
    with pytest.raises(SystemExit, match="effort-delay"):
        identify.main([str(bag), "--urdf", robots.path("panda"), "--out",
                       str(tmp_path / "x.urdf"), "--effort-delay", "-1"])


def test_cli_names_a_bad_value_or_option(tmp_path, capsys):
    """A NaN effort in the recording, a negative --min-speed, a NaN --cutoff: exit code 1
    and the core's InputError naming the argument (no traceback)."""
    from manip_dynamics import identify
    model = RobotModel.from_urdf_file(robots.path("panda"))
    t = np.arange(400) * 1e-3
    q = 0.1 * np.sin(np.outer(t, np.arange(1, model.n + 1)))
    tau = np.cos(np.outer(t, np.arange(1, model.n + 1)))
    tau[123, 4] = np.nan
    bag = tmp_path / "nan.mcap"
    write_joint_states(bag, 1.7e9 + t, model.joint_names, q, None, tau)
    common = [str(bag), "--urdf", robots.path("panda"), "--out", str(tmp_path / "x.urdf"),
              "--no-plot"]
    assert identify.main(common) == 1
    assert "error: tau[123, 4] is nan" in capsys.readouterr().err
    tau[123, 4] = 0.0
    write_joint_states(bag, 1.7e9 + t, model.joint_names, q, None, tau)
    for extra, words in ((["--cutoff", "nan"], "error: cutoff must be finite"),
                         (["--min-speed", "-1", "--cutoff", "40"],
                          "error: min_speed must be finite and in [0, inf]")):
        assert identify.main(common + extra) == 1
        assert words in capsys.readouterr().err, words
