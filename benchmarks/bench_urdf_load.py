"""Benchmark: URDF load time against the number of links (the parser must be linear).

Chains of N = 100, 1000, 5000 revolute links (each with an <inertial> whose <origin> has an
rpy, and a joint <origin> with rpy: the work per link of a vendor file). Timed, best of
--repeat, from the XML string:
  ours   RobotModel.from_urdf_string (parse, validate, inertia policy, pack)
  peer   pinocchio.buildModelFromXML of the same string (Pinocchio's C++ urdfdom parser),
         measured in the same run, in a child process: Pinocchio's recursive tree walk
         overflows the C stack (segmentation fault) on chains of a few thousand links,
         which is printed as "crashed"
Prints seconds, microseconds per link (flat when the growth is linear), the growth factor
of the per-link time from the smallest N, and the ratio ours / peer.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_urdf_load.py [--sizes 100 1000 5000]
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from manip_dynamics import RobotModel  # noqa: E402


def chain(n):
    """n revolute links in a chain, each 0.1 m from its parent, rpy on every origin."""
    parts = ['<robot name="chain"><link name="l0"/>']
    for i in range(1, n + 1):
        parts.append(f'<link name="l{i}"><inertial><origin xyz="0.05 0 0" rpy="0.1 0 0.2"/>'
                     '<mass value="1"/><inertia ixx="1e-3" iyy="2e-3" izz="2.5e-3" ixy="0" '
                     'ixz="0" iyz="0"/></inertial></link>')
        parts.append(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/>'
                     f'<child link="l{i}"/><origin xyz="0.1 0 0" rpy="0 0.01 0"/>'
                     '<axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" '
                     'velocity="2"/></joint>')
    parts.append("</robot>")
    return "".join(parts)


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


PEER = """
import sys, time
import pinocchio as pin
xml = open(sys.argv[1]).read()
times = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    pin.buildModelFromXML(xml)
    times.append(time.perf_counter() - t)
print(min(times))
"""


def peer_time(xml, repeat):
    """Best of ``repeat`` pinocchio.buildModelFromXML(xml) in a child process; None if it
    crashed."""
    with tempfile.NamedTemporaryFile("w", suffix=".urdf") as f:
        f.write(xml)
        f.flush()
        r = subprocess.run([sys.executable, "-c", PEER, f.name, str(repeat)],
                           capture_output=True, text=True, timeout=600)
    return float(r.stdout) if r.returncode == 0 else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    print(f"{'links':>6} {'ours s':>9} {'us/link':>8} {'growth':>7} {'pinocchio s':>12} "
          f"{'ours/pin':>9}")
    first = None
    for n in a.sizes:
        xml = chain(n)
        ours = best(lambda: RobotModel.from_urdf_string(xml), a.repeat)
        peer = peer_time(xml, a.repeat)
        per_link = ours / n * 1e6
        first = first or per_link
        print(f"{n:6d} {ours:9.4f} {per_link:8.1f} {per_link / first:7.2f} "
              + (f"{peer:12.4f} {ours / peer:9.2f}" if peer else f"{'crashed':>12} {'-':>9}"))


if __name__ == "__main__":
    main()
