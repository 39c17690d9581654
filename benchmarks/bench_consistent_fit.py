"""The physically consistent fit on every example-robot-data arm (up to 12 moving joints):
the table of docs/identification.md section 5.

Per arm (test/core/identification/consistent_truth.py, no identification code there): the URDF's
inertials perturbed physically (masses x 0.8-1.25, centres of mass moved up to 5 mm, inertias
strictly physical), viscous and Coulomb friction U(0.01, 0.1); 2000 random states fitted,
500 held out; torques from Pinocchio's rnea of the perturbed URDF, noise-free and with
1e-3 relative noise (per joint, 1e-3 of its RMS torque). Both fits of ``identify`` with
friction: the unconstrained one (weighted LS closest to the URDF) and the consistent one
(the semidefinite program). Held-out error: |Y pi - tau_true| / |tau_true| against the
noise-free torques. The goals (issue 21): consistent <= 1e-6 noise-free, and within 1.1x
of the unconstrained with noise.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_consistent_fit.py [--states 2000]
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

from core.consistent_truth import all_arms, arm_path, perturbed, recording  # noqa: E402

from manip_dynamics import RobotModel  # noqa: E402
from manip_dynamics.core.identification import pipeline as I  # noqa: E402


def one_arm(rel, states, held, seed=0):
    """{noise: (free error, consistent error, seconds, gap, status)} and the model."""
    with open(arm_path(rel), encoding="utf-8") as f:
        xml = f.read()
    rng = np.random.default_rng(seed)
    true_xml = perturbed(xml, rng)
    model = RobotModel.from_urdf_string(xml)
    viscous, coulomb = rng.uniform(0.01, 0.1, model.n), rng.uniform(0.01, 0.1, model.n)
    q, qd, qdd, tau = recording(true_xml, states + held, rng, viscous, coulomb)
    out = {}
    for noise in (0.0, 1e-3):
        measured = tau + noise * np.sqrt(np.mean(tau ** 2, axis=0)) * rng.normal(size=tau.shape)
        samples = I.Samples(np.arange(states + held) * 1e-3, q, qd, qdd, measured)
        fit, test = samples.split(states / (states + held))
        t0 = time.perf_counter()
        result = I.identify(model, fit, friction=True, consistent=True)
        sec = time.perf_counter() - t0
        err = [np.linalg.norm(I.predicted_torques(model, pi, test, True) - tau[states:])
               / np.linalg.norm(tau[states:]) for pi in (result.pi_unconstrained, result.pi)]
        out[noise] = (*err, sec, result.optimality_gap, result.solver_status)
    return model, out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--states", type=int, default=2000)
    p.add_argument("--held", type=int, default=500)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    print("| arm | joints | bodies | noise-free: unconstrained | consistent | with 1e-3 noise: "
          "unconstrained | consistent | ratio | optimality gap | identify s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rel in all_arms():
        model, out = one_arm(rel, args.states, args.held)
        f0, c0, _, g0, s0 = out[0.0]
        f1, c1, sec, g1, s1 = out[1e-3]
        name = rel.split("/")[-1].removesuffix(".urdf")
        print(f"| {name} | {model.n} | {len(model.body_links)} | {f0:.1e} | {c0:.1e} | "
              f"{f1:.2e} | {c1:.2e} | {c1 / f1:.3f} | {max(abs(g0), abs(g1)):.0e} "
              f"({s0}, {s1}) | {sec:.2f} |", flush=True)


if __name__ == "__main__":
    main()
