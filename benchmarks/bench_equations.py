"""Benchmark: the symbolic path (manip_dynamics.equations) against the numeric core.

1. Derivation time against the number of joints, n = 1 .. 6: a serial arm described as real
   arms are (axes alternating z, y, x in the joint frames, joint origins offset in x and z
   with rpy multiples of pi/2, every link a body with a com off the axis and a full inertia
   tensor), derived with the URDF's numbers; once without simplification (``derive``) and,
   up to --simplify-up-to joints (default 2), with ``simplify=True``. Each run has --time-limit seconds;
   a run that hits it prints "limit".
2. Generated C (gcc -O2) against the core's single call, same arm, same run: the C's g(q) and
   M(q) timed in C (a loop of --calls calls over distinct states, clock_gettime), the core's
   RobotModel.gravity_torques(q) and mass_matrix(q) timed from Python (timeit, best of 5):
   what a caller of each pays per call. Ratios core / C are printed.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_equations.py [--sizes 1 2 3 4 5 6]
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from manip_dynamics.core import RobotModel  # noqa: E402
from manip_dynamics.equations import DerivationTimeout, derive  # noqa: E402
from manip_dynamics.equations.codegen import c_source  # noqa: E402

AXES = ("0 0 1", "0 1 0", "1 0 0")
RPY = ("0 0 0", "1.5707963267948966 0 0", "0 0 1.5707963267948966")


def arm(n):
    """The n-joint arm of the module docstring (URDF text)."""
    parts = ['<robot name="arm"><link name="l0"/>']
    for i in range(1, n + 1):
        parts.append(f'<link name="l{i}"><inertial><origin xyz="0.05 0.01 0.02" rpy="0.1 0 0.2"/>'
                     f'<mass value="{1.0 + 0.1 * i}"/><inertia ixx="0.01" iyy="0.02" izz="0.025" '
                     'ixy="0.001" ixz="0" iyz="0.002"/></inertial></link>')
        parts.append(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/>'
                     f'<child link="l{i}"/><origin xyz="0.2 0 0.05" rpy="{RPY[i % 3]}"/>'
                     f'<axis xyz="{AXES[i % 3]}"/><limit lower="-3" upper="3" effort="10" '
                     'velocity="1"/></joint>')
    parts.append(f'<link name="tool"/><joint name="tj" type="fixed"><parent link="l{n}"/>'
                 '<child link="tool"/><origin xyz="0.1 0 0"/></joint></robot>')
    return "".join(parts)


def timed_derivation(xml, simplify, limit):
    t0 = time.perf_counter()
    try:
        eq = derive(xml, simplify=simplify, time_limit=limit)
    except DerivationTimeout:
        return None, None
    return eq, time.perf_counter() - t0


HARNESS = r"""
#include <stdio.h>
#include <time.h>
void arm_gravity(const double *q, double *g);
void arm_mass_matrix(const double *q, double *M);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
                          return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    long calls = atol(argv[1]); double q[8] = {0}, out[64], sink = 0.0, t0, tg, tm;
    t0 = now();
    for (long k = 0; k < calls; ++k) { q[0] = 1e-6 * k; arm_gravity(q, out); sink += out[0]; }
    tg = now() - t0; t0 = now();
    for (long k = 0; k < calls; ++k) { q[1] = 1e-6 * k; arm_mass_matrix(q, out); sink += out[0]; }
    tm = now() - t0;
    printf("%.6e %.6e %g\n", tg / calls, tm / calls, sink);
    return 0;
}
"""


def c_times(eq, calls):
    """(g, M) seconds per call of the generated C, timed in C."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "arm.c"), "w") as f:
            f.write(c_source(eq, prefix="arm"))
        with open(os.path.join(d, "main.c"), "w") as f:
            f.write("#include <stdlib.h>\n" + HARNESS)
        exe = os.path.join(d, "bench")
        subprocess.run([shutil.which("gcc"), "-O2", "-o", exe, os.path.join(d, "arm.c"),
                        os.path.join(d, "main.c"), "-lm"], check=True)
        out = subprocess.run([exe, str(calls)], check=True, capture_output=True, text=True)
        tg, tm, _ = out.stdout.split()
        return float(tg), float(tm)


def core_times(xml):
    model = RobotModel.from_urdf_string(xml)
    q = np.full(model.n, 0.3)
    model.gravity_torques(q), model.mass_matrix(q)           # compile / warm up
    best = {}
    for name, fn in (("g", model.gravity_torques), ("M", model.mass_matrix)):
        runs = timeit.repeat(lambda: fn(q), number=2000, repeat=5)
        best[name] = min(runs) / 2000
    return best["g"], best["M"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    p.add_argument("--simplify-up-to", type=int, default=2)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--calls", type=int, default=200000)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'n':>2} {'derive s':>9} {'simplify s':>10} {'C g us':>8} {'core g us':>9} "
          f"{'core/C':>7} {'C M us':>8} {'core M us':>9} {'core/C':>7}")
    for n in args.sizes:
        xml = arm(n)
        eq, t_raw = timed_derivation(xml, False, args.time_limit)
        t_simp = None
        if n <= args.simplify_up_to:
            _, t_simp = timed_derivation(xml, True, args.time_limit)
        simp = "-" if n > args.simplify_up_to else "limit" if t_simp is None else f"{t_simp:.2f}"
        row = f"{n:>2} {'limit' if t_raw is None else f'{t_raw:9.2f}':>9} {simp:>10}"
        if eq is not None:
            cg, cm = c_times(eq, args.calls)
            kg, km = core_times(xml)
            row += f" {cg * 1e6:8.3f} {kg * 1e6:9.3f} {kg / cg:7.1f} {cm * 1e6:8.3f} " \
                   f"{km * 1e6:9.3f} {km / cm:7.1f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
