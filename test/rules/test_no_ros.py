"""The rules are ROS-free: importing every module of manip_dynamics.rules loads neither
rclpy nor any ROS message package (checked in a fresh interpreter)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RULES = sorted(p.stem for p in (ROOT / "manip_dynamics" / "rules").glob("*.py")
               if p.stem != "__init__")
ROS_PACKAGES = {"rclpy", "rosidl_runtime_py", "rcl_interfaces", "sensor_msgs", "std_msgs"}


def modules_loaded_by(imports: list[str]) -> set[str]:
    """Top-level packages in sys.modules of a fresh interpreter after ``imports``."""
    script = "\n".join([f"import {m}" for m in imports]
                       + ["import json, sys", "print(json.dumps(sorted(sys.modules)))"])
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    return {name.split(".")[0] for name in json.loads(out)}


def test_importing_the_rules_never_imports_ros():
    assert {"model_source", "stamp_gate", "throttled_log", "parameter_table"} <= set(RULES)
    loaded = modules_loaded_by([f"manip_dynamics.rules.{m}" for m in RULES])
    assert "manip_dynamics" in loaded and not loaded & ROS_PACKAGES, loaded & ROS_PACKAGES
