"""The layers, by import analysis of the source (issue 22; docs/architecture.md).

Every ``import`` and ``from ... import`` of every module of manip_dynamics (module level
and inside functions, relative ones resolved) is checked against the rules the folders'
docstrings state:

* core imports no ROS (rclpy, message packages) and nothing of the package outside core;
  inside core, dynamics imports only errors and extras, contact and identification build
  on dynamics and never on each other;
* safety and equations import core only (no ROS); rules, sim: no rclpy, no nodes;
* nothing imports the demos except their entry points (manip_dynamics.demo,
  manip_dynamics.demo_identification) and the demos themselves.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "manip_dynamics"
ROS = ("rclpy", "rosidl_runtime_py", "rosbag2_py", "builtin_interfaces", "std_msgs",
       "std_srvs", "sensor_msgs", "geometry_msgs", "visualization_msgs", "diagnostic_msgs",
       "rcl_interfaces", "manip_dynamics_interfaces", "launch", "launch_ros")


def module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path):
    """Absolute names of everything ``path`` imports (``from a import b``: ``a.b``)."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            found.add(source)
            found.update(f"{source}.{a.name}" for a in node.names)
    return found


def all_imports():
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def under(name, *prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def md(*names):
    return tuple("manip_dynamics." + n for n in names)


CORE_SHARED = md("core.errors", "core.extras")
# (importing modules, what they may not import, what they may import of the package)
RULES = [
    (md("core"), ROS + md("rules", "nodes", "sim", "safety", "equations", "demos", "demo",
                          "demo_identification", "identify", "robots"), None),
    (md("core.dynamics"), (), CORE_SHARED + md("core.dynamics")),
    (md("core.contact"), (), CORE_SHARED + md("core.dynamics", "core.contact")),
    (md("core.identification"), (), CORE_SHARED + md("core.dynamics", "core.identification")),
    (md("core.errors", "core.extras"), (), CORE_SHARED),
    (md("safety"), ROS, md("core", "safety")),
    (md("equations"), ROS, md("core", "equations")),
    (md("rules"), ("rclpy",) + md("nodes", "sim", "demos"), None),
    (md("sim"), ("rclpy",) + md("nodes", "demos"), None),
    (md("nodes"), md("demos"), None),
]
DEMO_ENTRIES = md("demo", "demo_identification", "demos")


def violations(graph):
    found = []
    for module, names in graph.items():
        for importers, forbidden, allowed in RULES:
            if not under(module, *importers):
                continue
            for name in names:
                if forbidden and under(name, *forbidden):
                    found.append(f"{module} imports {name}")
                elif allowed is not None and under(name, "manip_dynamics") \
                        and name != "manip_dynamics" and not under(name, *allowed):
                    found.append(f"{module} imports {name} (may import only "
                                 f"{', '.join(allowed)})")
        if not under(module, *DEMO_ENTRIES):
            found += [f"{module} imports the demos ({name})" for name in names
                      if under(name, "manip_dynamics.demos")]
    return sorted(set(found))


def test_the_import_analysis_sees_the_package():
    graph = all_imports()
    assert len(graph) > 80
    assert "manip_dynamics.core.dynamics.kernels.bundle" in graph
    # relative imports resolved: the bundle's Cholesky comes from linalg
    assert "manip_dynamics.core.dynamics.kernels.linalg.cholesky" in \
        graph["manip_dynamics.core.dynamics.kernels.bundle"]
    # imports inside functions count (the nodes package imports rclpy that way)
    assert "rclpy" in graph["manip_dynamics.demos.processes"]


def test_every_layer_imports_only_what_its_folder_docstring_allows():
    assert violations(all_imports()) == []


@pytest.mark.parametrize("module, bad", [
    ("manip_dynamics.core.contact.observer", "rclpy"),
    ("manip_dynamics.core.dynamics.model", "manip_dynamics.core.contact.observer"),
    ("manip_dynamics.core.contact.detector", "manip_dynamics.core.identification.regressor"),
    ("manip_dynamics.rules.stats", "manip_dynamics.nodes.runner"),
    ("manip_dynamics.sim.scene", "manip_dynamics.demos.plots"),
    ("manip_dynamics.safety.limits", "manip_dynamics.rules.stats"),
])
def test_a_bad_import_is_reported(module, bad):
    """The rules catch each kind of wrong import (added to the real graph here)."""
    graph = all_imports()
    graph[module] = graph[module] | {bad}
    assert violations(graph) == [v for v in violations(graph) if v.startswith(module)] != []
