"""The rules are ROS-free: importing every module of manip_dynamics.rules loads neither
rclpy nor any ROS message package."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = str(pathlib.Path(__file__).resolve().parents[2])
RULES = sorted(p.stem for p in (pathlib.Path(ROOT) / "manip_dynamics" / "rules").glob("*.py")
               if p.stem != "__init__")


def test_importing_the_rules_never_imports_ros():
    assert {"model_source", "stamp_gate", "throttled_log", "parameter_table"} <= set(RULES)
    code = ("import sys, importlib; "
            + "; ".join(f"importlib.import_module('manip_dynamics.rules.{m}')" for m in RULES)
            + "; bad = [m for m in sys.modules if m.split('.')[0] in ('rclpy', "
              "'rosidl_runtime_py', 'rcl_interfaces', 'sensor_msgs', 'std_msgs')]; "
              "print(bad); sys.exit(1 if bad else 0)")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
