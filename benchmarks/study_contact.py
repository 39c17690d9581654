"""Study: contact-detection thresholds with torque noise and with the plant's friction on.

No ROS: the MuJoCo plant (``manip_dynamics.sim.MujocoPlant``, the Panda, 1 kHz RK4) is
stepped here in the loop the nodes close over DDS in lockstep: a 100 Hz computed-torque
controller on our core's model (Kp = 100 s^-2, Kd = 20 s^-1, the demo's sinusoidal
reference) whose torque is held for a period (zero-order hold), and the joint state
sampled at the period ends with ``effort`` = the torque applied during the period ending
there (as arm_simulator publishes it). The observer is the node's
(``rules.contact_monitor.ContactMonitor``, K_O = ``--gain``, effort timing ``held``),
fed those samples.

Cases (each: 8 s of contact-free tracking, then a push of ``--force`` N at the flange
(panda_link7, 0.1 m off its axis) for 1 s while tracking):

* ``clean``       noise-free, plant frictionless (the model-matched case);
* ``noise``       Gaussian noise on the measured effort, sigma_i = ``--noise`` (1 %) of
                  joint i's peak |tau| over the contact-free tracking (fresh per sample);
* ``friction``    the plant's URDF damping and Coulomb friction loss on; the observer
                  does NOT subtract friction (observer.friction false);
* ``friction_model``  same plant, observer.friction true (the URDF values, sign(qd));
* ``noise+friction``  both: the noise of ``noise`` on the plant of ``friction``.

For each case: the per-joint peak |r| over the contact-free phase (from the start), the
thresholds enter_i = ``--margin`` x that peak (rounded up to 0.01 N*m, at least
``--floor``), the false detections they give over that phase (without noise 0 by
construction; with noise the thresholds come from one noise draw and are checked on
another), and the detection time of the push with those thresholds (from the last
sample before tau_ext != 0: the force acts from inside that period), the isolated link
at the detection and 3/K_O later, and the steady error of r during the push against the
truth passed through the observer's first-order response and against the raw truth
(which adds the 1/K_O lag behind a moving J^T F).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/study_contact.py [--gain 100] [--json F]``
(about 30 s).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
AMPLITUDE = np.array([0.25, 0.2, 0.25, 0.3, 0.3, 0.3, 0.4])
FREQUENCY = np.array([0.3, 0.35, 0.3, 0.4, 0.45, 0.4, 0.5])
KP, KD, RATE, SUBSTEPS = 100.0, 20.0, 100.0, 10
PUSH_LINK, PUSH_POINT = "panda_link7", (0.03, 0.03, 0.05)


def reference(t, amplitude=AMPLITUDE, home=Q0):
    """q_d, qd_d, qdd_d of the controller's reference q_d = home + A (1 - cos(2 pi f t))."""
    w = 2 * np.pi * FREQUENCY
    return (home + amplitude * (1 - np.cos(w * t)), amplitude * w * np.sin(w * t),
            amplitude * w * w * np.cos(w * t))


def simulate(model, urdf_xml, seconds, friction, push=None, obstacle=None,
             amplitude=AMPLITUDE, home=Q0, start=None, gravity_only=False, point=PUSH_POINT):
    """Run the loop; -> dict of t (N,), q, qd, tau (N, n) (tau: applied during the period
    ending at t), truth (N, n) tau_ext at t. push: (t_on, duration, force (3,)) at the
    flange; obstacle: SceneOptions obstacle keyword arguments; the reference is
    home + amplitude (1 - cos(2 pi f t)); start: the initial q (default home);
    gravity_only: tau = g(q) instead of computed torque; point: of the push, link frame."""
    from manip_dynamics.sim.mujoco_plant import MujocoPlant
    from manip_dynamics.sim.scene import SceneOptions
    n = model.n
    zeros = np.zeros(n)
    opts = SceneOptions(timestep=1.0 / (RATE * SUBSTEPS), floor=False,
                        viscous=model.viscous if friction else zeros,
                        coulomb=model.coulomb if friction else zeros, **(obstacle or {}))
    plant = MujocoPlant(urdf_xml, model, opts)
    plant.reset(home if start is None else start)
    out = {k: [] for k in ("t", "q", "qd", "tau", "truth")}
    tau = np.zeros(n)
    for k in range(int(round(seconds * RATE)) + 1):
        t = k / RATE
        q, qd = plant.q, plant.qd
        for key, v in zip(out, (t, q, qd, plant.tau_applied.copy(), plant.external_torques())):
            out[key].append(v)
        if push is not None and abs(t - push[0]) < 0.5 / RATE:
            plant.apply_wrench(PUSH_LINK, push[2], (0.0, 0.0, 0.0), point, push[1])
        q_d, qd_d, qdd_d = reference(t, amplitude, home)
        M = model.mass_matrix(q)
        tau = model.gravity_torques(q) if gravity_only else M @ (
            qdd_d + KD * (qd_d - qd) + KP * (q_d - q)) + model.inverse_dynamics(q, qd, zeros)
        plant.advance(tau, SUBSTEPS)
    return {k: np.array(v) for k, v in out.items()}


def ideal(t, truth, gain):
    """truth through the observer's first-order response dr/dt = K_O (truth - r)."""
    out = np.zeros_like(truth)
    for k in range(1, len(t)):
        a = np.exp(-gain * (t[k] - t[k - 1]))
        out[k] = a * out[k - 1] + (1 - a) * 0.5 * (truth[k - 1] + truth[k])
    return out


def observe(model, trace, options, tau_noise=None, seed=0):
    """Residuals and contact states of the ContactMonitor over a trace."""
    from manip_dynamics.rules.contact_monitor import ContactMonitor
    monitor = ContactMonitor(model, options, model.default_tip)
    rng = np.random.default_rng(seed)
    r, contact, link = [], [], []
    for t, q, qd, tau in zip(trace["t"], trace["q"], trace["qd"], trace["tau"]):
        if tau_noise is not None:
            tau = tau + rng.normal(0.0, tau_noise)
        res = monitor.update(t, q, qd, tau)
        r.append(res.residual)
        contact.append(res.contact.in_contact)
        link.append(res.contact.link)
    return np.array(r), np.array(contact), link


def run_case(name, model, urdf_xml, args, free_s, friction, observer_friction, noise):
    from manip_dynamics.rules.contact_monitor import ObserverOptions
    push_at = free_s
    force = np.array([args.force, -0.5 * args.force, 0.3 * args.force])
    trace = simulate(model, urdf_xml, free_s + 1.5, friction,
                     push=(push_at, 1.0, force))
    free = trace["t"] < push_at - 0.005
    sigma = noise * np.abs(trace["tau"][free]).max(axis=0) if noise else None
    opts = ObserverOptions(gains=(args.gain,), enter=(1e9,), friction=observer_friction,
                           timing="held")
    r, _, _ = observe(model, trace, opts, sigma, seed=1)
    peak = np.abs(r[free]).max(axis=0)
    enter = np.maximum(np.ceil(args.margin * peak * 100) / 100, args.floor)
    opts = ObserverOptions(gains=(args.gain,), enter=tuple(enter), friction=observer_friction,
                           timing="held")
    r, contact, link = observe(model, trace, opts, sigma, seed=2)    # another noise draw
    onset = int(np.argmax(np.abs(trace["truth"]).max(axis=1) > 0))
    detected = onset + int(np.argmax(contact[onset:])) if contact[onset:].any() else None
    steady = slice(onset + int(np.ceil(5.0 / args.gain * RATE)), onset + int(0.95 * RATE))
    truth = trace["truth"][steady]
    err = np.abs(r[steady] - truth).max() / np.abs(truth).max()
    filtered = ideal(trace["t"], trace["truth"], args.gain)[steady]
    err_filtered = np.abs(r[steady] - filtered).max() / np.abs(truth).max()
    later = None if detected is None else detected + int(np.ceil(3.0 / args.gain * RATE))
    return dict(
        case=name, noise_sigma=None if sigma is None else [round(float(s), 4) for s in sigma],
        peak_free_residual=[round(float(x), 4) for x in peak],
        enter_thresholds=[float(x) for x in enter],
        false_detections=int(contact[free].sum()),
        detection_ms=None if detected is None else round(1e3 * (
            trace["t"][detected] - trace["t"][onset - 1]), 1),
        isolated_link=None if detected is None else link[detected],
        isolated_link_3_over_K=None if later is None else link[later],
        peak_truth=float(np.abs(truth).max()), steady_error=float(err),
        steady_error_filtered=float(err_filtered))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gain", type=float, default=100.0, help="K_O (1/s)")
    parser.add_argument("--noise", type=float, default=0.01, help="sigma / peak |tau|")
    parser.add_argument("--force", type=float, default=20.0, help="push |f_x| (N)")
    parser.add_argument("--margin", type=float, default=1.5)
    parser.add_argument("--floor", type=float, default=0.05, help="lowest threshold (N*m)")
    parser.add_argument("--free", type=float, default=8.0, help="contact-free seconds")
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from manip_dynamics.sim.plants import load_robot
    model, urdf_xml = load_robot("panda", "")
    start = time.monotonic()
    rows = [run_case("clean", model, urdf_xml, args, args.free, False, False, 0.0),
            run_case("noise", model, urdf_xml, args, args.free, False, False, args.noise),
            run_case("friction", model, urdf_xml, args, args.free, True, False, 0.0),
            run_case("friction_model", model, urdf_xml, args, args.free, True, True, 0.0),
            run_case("noise+friction", model, urdf_xml, args, args.free, True, False,
                     args.noise)]
    print(f"contact study: Panda on MuJoCo, 100 Hz loop, K_O = {args.gain:g} 1/s "
          f"(3/K_O = {3e3 / args.gain:.0f} ms), thresholds = {args.margin} x peak |r| over "
          f"{args.free:.1f} s of contact-free tracking; push |f| = "
          f"{np.linalg.norm([1, 0.5, 0.3]) * args.force:.1f} N at {PUSH_LINK}")
    for row in rows:
        print(f"{row['case']:<15} thresholds {row['enter_thresholds']} N*m  false "
              f"{row['false_detections']}  detection {row['detection_ms']} ms  isolated "
              f"{row['isolated_link']} (3/K_O later: {row['isolated_link_3_over_K']})  "
              f"steady error {100 * row['steady_error_filtered']:.2f} % vs the filtered "
              f"truth, {100 * row['steady_error']:.2f} % vs the truth, of "
              f"{row['peak_truth']:.2f} N*m")
        if row["noise_sigma"]:
            print(f"{'':<15} noise sigma {row['noise_sigma']} N*m")
    print(f"({time.monotonic() - start:.1f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
