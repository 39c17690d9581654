"""Static and live checks of every launch file in launch/ and every parameter file in config/.

``launch`` / ``launch_ros`` cannot be installed here, so the launch files are read with
``ast`` (never imported) and checked against facts obtained for real:

* executables: a ``Node(package='manip_dynamics', executable=X)`` must name a
  ``console_scripts`` entry of setup.py (read by running setup.py with ``setup()``
  captured); another package's executable must be one of ``KNOWN_EXTERNAL``;
* files: a ``PathJoinSubstitution([FindPackageShare('manip_dynamics'), ...])`` (or
  ``os.path.join(get_package_share_directory(...), ...)``) must be a file setup.py installs
  into share/manip_dynamics (and whose source exists); any other ``*.yaml`` / ``*.rviz`` /
  ``*.urdf`` string must be the name of such a file;
* launch arguments: every ``LaunchConfiguration('x')`` is declared in the same file;
* parameters: every key given to one of our nodes (dict literals and the YAML files the
  launch file passes, including a ``config`` argument's default) must be DECLARED by that
  node: each console script is started in its own process (with those YAML files as
  ``--params-file``) and asked through its ``~/list_parameters`` service; the values the
  YAML sets must come back from ``~/get_parameters``. Every YAML in config/ is checked the
  same way even when no launch file uses it.
"""
from __future__ import annotations

import ast
import math
import os
import runpy
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

import ros_utils

REPO = ros_utils.REPO_ROOT
PACKAGE = "manip_dynamics"
LAUNCH_FILES = sorted((REPO / "launch").glob("*.py"))
CONFIG_FILES = sorted((REPO / "config").glob("*.yaml"))
FILE_SUFFIXES = (".yaml", ".yml", ".rviz", ".urdf", ".xacro")
# Executables of other packages a launch file may start (package, executable).
KNOWN_EXTERNAL = {
    ("rviz2", "rviz2"),
    ("robot_state_publisher", "robot_state_publisher"),
    ("joint_state_publisher", "joint_state_publisher"),
    ("joint_state_publisher_gui", "joint_state_publisher_gui"),
}


# --------------------------------------------------------------------------- setup.py facts

def _setup_kwargs() -> dict:
    import setuptools

    captured: dict = {}
    original = setuptools.setup
    cwd = os.getcwd()
    setuptools.setup = lambda **kwargs: captured.update(kwargs)
    try:
        os.chdir(REPO)                      # setup.py globs relative paths
        runpy.run_path(str(REPO / "setup.py"), run_name="__main__")
    finally:
        setuptools.setup = original
        os.chdir(cwd)
    return captured


SETUP = _setup_kwargs()
CONSOLE_SCRIPTS = {
    line.split("=", 1)[0].strip(): line.split("=", 1)[1].strip()
    for line in SETUP["entry_points"]["console_scripts"]
}
# install path (relative to the install prefix) -> source path in the repository
INSTALLED = {
    f"{dest}/{Path(src).name}": REPO / src
    for dest, sources in SETUP.get("data_files", []) for src in sources
}


# --------------------------------------------------------------------------- reading launch files

@dataclass(frozen=True)
class ShareDir:
    package: str


@dataclass(frozen=True)
class SharePath:
    package: str
    relative: str


@dataclass(frozen=True)
class LaunchArg:
    name: str


@dataclass
class NodeSpec:
    file: str
    line: int
    package: object
    executable: object
    name: object = None
    parameter_keys: set = field(default_factory=set)
    parameter_files: list = field(default_factory=list)     # repo paths of YAML files


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _keyword(call: ast.Call, name: str, position: int | None = None):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and len(call.args) > position:
        return call.args[position]
    return None


class LaunchFile:
    def __init__(self, path: Path):
        self.path = path
        self.tree = ast.parse(path.read_text(), filename=str(path))
        self.symbols: dict[str, ast.AST] = {}
        for node in ast.walk(self.tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)):
                self.symbols[node.targets[0].id] = node.value
        self.calls = [n for n in ast.walk(self.tree) if isinstance(n, ast.Call)]
        self.consumed: set[int] = set()       # ids of constants that are parts of a path
        self.declared_args = {}
        self.declared_calls = {}
        for call in self.calls:
            if _call_name(call) in ("DeclareLaunchArgument", "SetLaunchConfiguration"):
                name = self.resolve(_keyword(call, "name", 0))
                self.declared_calls[name] = call
                default = _keyword(call, "default_value", 1) if _call_name(call) == \
                    "DeclareLaunchArgument" else _keyword(call, "value", 1)
                self.declared_args[name] = default

    def resolve(self, expr, depth: int = 0):
        """A constant, ShareDir, SharePath, LaunchArg, or None (not resolvable).

        Where a launch argument with ``choices`` takes part in a path, ``resolve_all``
        gives one value per choice; ``resolve`` gives the one for the default.
        """
        values = self.resolve_all(expr, depth)
        return values[0] if values else None

    def argument_values(self, name: str) -> list:
        call = self.declared_calls.get(name)
        choices = _keyword(call, "choices") if call is not None else None
        if isinstance(choices, (ast.List, ast.Tuple)):
            return [c.value for c in choices.elts if isinstance(c, ast.Constant)]
        default = self.resolve(self.declared_args.get(name))
        return [default] if isinstance(default, str) else []

    def resolve_all(self, expr, depth: int = 0) -> list:
        if expr is None or depth > 20:
            return []
        if isinstance(expr, ast.Constant):
            return [expr.value]
        if isinstance(expr, ast.Name):
            return self.resolve_all(self.symbols.get(expr.id), depth + 1)
        if isinstance(expr, (ast.List, ast.Tuple)):          # concatenated substitutions
            combos = [""]
            for part in expr.elts:
                values = self.resolve_all(part, depth + 1)
                if values and isinstance(values[0], LaunchArg):
                    values = self.argument_values(values[0].name)
                if not values or not all(isinstance(v, str) for v in values):
                    return []
                combos = [c + v for c in combos for v in values]
            self.consumed.update(id(e) for e in expr.elts)
            return combos
        if isinstance(expr, ast.Call):
            name = _call_name(expr)
            if name in ("FindPackageShare", "get_package_share_directory"):
                pkg = self.resolve(_keyword(expr, "package", 0), depth + 1)
                return [ShareDir(pkg)] if isinstance(pkg, str) else []
            if name == "LaunchConfiguration":
                arg = self.resolve(_keyword(expr, "variable_name", 0), depth + 1)
                return [LaunchArg(arg)] if isinstance(arg, str) else []
            if name == "ParameterValue":
                return self.resolve_all(_keyword(expr, "value", 0), depth + 1)
            if name in ("PathJoinSubstitution", "join"):
                parts = expr.args[0].elts if (name == "PathJoinSubstitution" and expr.args
                                              and isinstance(expr.args[0], (ast.List, ast.Tuple))) \
                    else expr.args
                heads = self.resolve_all(parts[0], depth + 1) if parts else []
                if not heads or not isinstance(heads[0], (ShareDir, SharePath)):
                    return []
                tails = [""]
                for part in parts[1:]:
                    values = self.resolve_all(part, depth + 1)
                    if values and isinstance(values[0], LaunchArg):
                        values = self.argument_values(values[0].name)
                    if not values or not all(isinstance(v, str) for v in values):
                        return []
                    tails = [t + "/" + v if t else v for t in tails for v in values]
                    self.consumed.add(id(part))
                head = heads[0]
                base = head.relative + "/" if isinstance(head, SharePath) else ""
                return [SharePath(head.package, base + t) for t in tails]
        return []

    def value_of_argument(self, arg: LaunchArg):
        return self.resolve(self.declared_args.get(arg.name))

    def share_paths(self):
        for call in self.calls:
            for value in self.resolve_all(call):
                if isinstance(value, SharePath):
                    yield call.lineno, value

    def nodes(self) -> list[NodeSpec]:
        specs = []
        for call in self.calls:
            if _call_name(call) != "Node":
                continue
            spec = NodeSpec(self.path.name, call.lineno,
                            self.resolve(_keyword(call, "package")),
                            self.resolve(_keyword(call, "executable")),
                            self.resolve(_keyword(call, "name")))
            params = _keyword(call, "parameters")
            if isinstance(params, ast.Name):
                params = self.symbols.get(params.id)
            for item in getattr(params, "elts", []):
                if isinstance(item, ast.Name) and isinstance(self.symbols.get(item.id), ast.Dict):
                    item = self.symbols[item.id]
                if isinstance(item, ast.Dict):
                    spec.parameter_keys |= set(self._dict_keys(item))
                    continue
                value = self.resolve(item)
                if isinstance(value, LaunchArg):
                    value = self.value_of_argument(value)
                if isinstance(value, SharePath) and value.package == PACKAGE:
                    source = INSTALLED.get(f"share/{PACKAGE}/{value.relative}")
                    if source is not None:
                        spec.parameter_files.append(source)
                elif isinstance(value, str) and value.endswith((".yaml", ".yml")):
                    spec.parameter_files.extend(
                        src for dst, src in INSTALLED.items() if Path(dst).name == value)
            specs.append(spec)
        return specs

    def _dict_keys(self, node: ast.Dict, prefix: str = ""):
        for key, value in zip(node.keys, node.values):
            k = self.resolve(key)
            assert isinstance(k, str), (
                f"{self.path.name}:{node.lineno}: a parameter name that is not a string "
                "constant cannot be checked")
            if isinstance(value, ast.Dict):                 # nested dicts: "a.b"
                yield from self._dict_keys(value, prefix + k + ".")
            else:
                yield prefix + k


def _yaml_parameters(path: Path) -> dict[str, dict]:
    """{node key ('/**', 'name', '/ns/name'): {flattened parameter name: value}}."""
    data = yaml.safe_load(path.read_text()) or {}
    out = {}

    def flatten(d, prefix=""):
        for k, v in d.items():
            if isinstance(v, dict):
                yield from flatten(v, f"{prefix}{k}.")
            else:
                yield f"{prefix}{k}", v

    def visit(d, key):
        if "ros__parameters" in d:
            out[key] = dict(flatten(d["ros__parameters"]))
            return
        for k, v in d.items():
            if isinstance(v, dict):
                visit(v, f"{key}/{k}" if key else str(k))

    visit(data, "")
    return out


LAUNCH = {path.name: LaunchFile(path) for path in LAUNCH_FILES}


# --------------------------------------------------------------------------- checks

def executable_problems(launch: LaunchFile) -> list[str]:
    problems = []
    nodes = launch.nodes()
    if not nodes:
        problems.append(f"{launch.path.name}: no launch_ros Node(...) found")
    for spec in nodes:
        where = f"{launch.path.name}:{spec.line}"
        if not (isinstance(spec.package, str) and isinstance(spec.executable, str)):
            problems.append(f"{where}: package / executable must be string constants")
        elif spec.package == PACKAGE:
            if spec.executable not in CONSOLE_SCRIPTS:
                problems.append(
                    f"{where}: executable {spec.executable!r} is not a console_scripts entry "
                    f"of setup.py ({', '.join(sorted(CONSOLE_SCRIPTS))})")
        elif (spec.package, spec.executable) not in KNOWN_EXTERNAL:
            problems.append(f"{where}: unknown executable {spec.package}/{spec.executable}")
    return problems


def file_problems(launch: LaunchFile) -> list[str]:
    problems = []
    name = launch.path.name
    for line, path in launch.share_paths():
        if path.package != PACKAGE:
            continue
        installed = f"share/{PACKAGE}/{path.relative}"
        if installed not in INSTALLED:
            problems.append(f"{name}:{line}: {installed} is not installed by setup.py")
        elif not INSTALLED[installed].is_file():
            problems.append(f"{name}:{line}: {INSTALLED[installed]} does not exist")
    installed_names = {Path(dst).name for dst in INSTALLED}
    for node in ast.walk(launch.tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value.endswith(FILE_SUFFIXES) and id(node) not in launch.consumed
                and "\n" not in node.value and Path(node.value).name not in installed_names):
            problems.append(f"{name}:{node.lineno}: file {node.value!r} is not installed by "
                            "setup.py")
    return problems


def launch_argument_problems(launch: LaunchFile) -> list[str]:
    problems = []
    for call in launch.calls:
        if _call_name(call) == "LaunchConfiguration":
            arg = launch.resolve(call)
            if not isinstance(arg, LaunchArg):
                problems.append(f"{launch.path.name}:{call.lineno}: unresolvable name")
            elif arg.name not in launch.declared_args:
                problems.append(f"{launch.path.name}:{call.lineno}: LaunchConfiguration("
                                f"{arg.name!r}) is never declared (DeclareLaunchArgument)")
    return problems


def section_applies(node_key: str, node_name: str, namespace: str = "") -> bool:
    """Does a parameter-file section (``/**``, ``name``, ``/ns/name``, ``/**/name``) apply
    to the node ``namespace/node_name``?"""
    key = node_key.strip("/")
    if key in ("**", "*"):
        return True
    full = f"{namespace.strip('/')}/{node_name}".strip("/")
    if key.startswith("**/"):                 # any namespace, whole name segments only
        return full == key[3:] or full.endswith("/" + key[3:])
    return key == full


def test_section_matching_is_by_whole_names():
    assert section_applies("/**", "dynamics_node")
    assert section_applies("dynamics_node", "dynamics_node")
    assert section_applies("/arm1/dynamics_node", "dynamics_node", "/arm1")
    assert section_applies("/**/dynamics_node", "dynamics_node", "/arm1")
    assert section_applies("/**/dynamics_node", "dynamics_node")
    assert not section_applies("/**/dynamics_node", "left_dynamics_node")
    assert not section_applies("dynamics_node", "dynamics_node", "/arm1")
    assert not section_applies("arm_simulator", "dynamics_node")


def node_name_of(spec: NodeSpec, default_names: dict[str, str]) -> str:
    return spec.name if isinstance(spec.name, str) else default_names.get(spec.executable, "")


def parameter_problems(launch: LaunchFile, declared_by: dict[str, set],
                       default_names: dict[str, str]) -> list[str]:
    problems = []
    for spec in launch.nodes():
        if spec.package != PACKAGE or spec.executable not in declared_by:
            continue
        declared = declared_by[spec.executable]
        where = f"{launch.path.name}:{spec.line} ({spec.executable})"
        unknown = sorted(spec.parameter_keys - declared)
        if unknown:
            problems.append(f"{where}: parameters not declared by the node: {unknown}")
        name = node_name_of(spec, default_names)
        for f in spec.parameter_files:
            for node_key, params in _yaml_parameters(f).items():
                if not section_applies(node_key, name):
                    continue
                unknown = sorted(set(params) - declared)
                if unknown:
                    problems.append(f"{where}: {f.name} [{node_key}] sets parameters the node "
                                    f"does not declare: {unknown}")
    return problems


def test_there_are_launch_and_config_files():
    assert "dynamics.launch.py" in LAUNCH
    assert REPO / "config" / "dynamics.yaml" in CONFIG_FILES
    assert (REPO / "rviz" / "dynamics.rviz").is_file()


@pytest.mark.parametrize("name", sorted(LAUNCH))
def test_launch_file_executables_exist(name):
    assert executable_problems(LAUNCH[name]) == []


@pytest.mark.parametrize("name", sorted(LAUNCH))
def test_launch_file_files_exist(name):
    assert file_problems(LAUNCH[name]) == []


@pytest.mark.parametrize("name", sorted(LAUNCH))
def test_launch_configurations_are_declared(name):
    assert launch_argument_problems(LAUNCH[name]) == []


def test_dynamics_launch_passes_config_to_dynamics_node():
    (spec,) = [s for s in LAUNCH["dynamics.launch.py"].nodes() if s.executable == "dynamics_node"]
    assert REPO / "config" / "dynamics.yaml" in spec.parameter_files
    assert {"urdf_file", "robot_description", "tip_link"} <= spec.parameter_keys


def test_rviz_config_shows_robot_and_inertia_markers():
    config = yaml.safe_load((REPO / "rviz" / "dynamics.rviz").read_text())
    displays = config["Visualization Manager"]["Displays"]
    classes = {d["Class"]: d for d in displays}
    assert "rviz_default_plugins/RobotModel" in classes
    markers = classes["rviz_default_plugins/MarkerArray"]
    # relative on purpose: rviz2 runs in the node's namespace (see the launch file)
    assert markers["Topic"]["Value"] == "dynamics_node/inertia_markers"
    from manip_dynamics.nodes import markers as marker_module
    assert set(markers["Namespaces"]) == {marker_module.ELLIPSOID_NS,
                                          marker_module.ELLIPSOID_LABEL_NS,
                                          marker_module.MASS_BARS_NS,
                                          marker_module.MASS_LABEL_NS}


# --------------------------------------------------------------------------- live: declared parameters

@dataclass
class Started:
    executable: str
    namespace: str
    proc: subprocess.Popen
    node_name: str = ""
    declared: set = field(default_factory=set)


def _start_console_script(executable: str, ros_args, log_dir: Path, log_name: str):
    """Run a console_scripts entry exactly as its wrapper would (module:function)."""
    module, func = CONSOLE_SCRIPTS[executable].split(":")
    code = f"import sys; from {module} import {func} as main; sys.exit(main())"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(ros_utils.TEST_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    log_path = log_dir / f"{log_name}.log"
    # cwd: files a node writes (the recorder's default output) land in the test's
    # directory, never in the repository
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-u", "-c", code, "--ros-args", *ros_args],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=str(log_dir))
    proc.log_path = log_path
    proc.name = log_name
    return proc


def _stop(proc) -> None:
    ros_utils.stop_process(proc)
    print(f"----- log of {proc.name} (exit code {proc.returncode})")
    print(ros_utils.read_log(proc, tail=100))


def _wait_for_node(node, namespace: str, proc, name: str | None = None) -> str:
    def found():
        ros_utils.assert_running(proc)
        names = [n for n, ns in node.get_node_names_and_namespaces()
                 if ns == namespace and (name is None or n == name)]
        return names[0] if names else None

    return ros_utils.wait_for(found, timeout=60.0, interval=0.1,
                              message=f"{proc.name}: no node in {namespace}")


def _parameter_value(value):
    """rcl_interfaces/ParameterValue -> Python value."""
    from rcl_interfaces.msg import ParameterType as T

    return {
        T.PARAMETER_BOOL: lambda v: v.bool_value,
        T.PARAMETER_INTEGER: lambda v: v.integer_value,
        T.PARAMETER_DOUBLE: lambda v: v.double_value,
        T.PARAMETER_STRING: lambda v: v.string_value,
        T.PARAMETER_BOOL_ARRAY: lambda v: list(v.bool_array_value),
        T.PARAMETER_INTEGER_ARRAY: lambda v: list(v.integer_array_value),
        T.PARAMETER_DOUBLE_ARRAY: lambda v: list(v.double_array_value),
        T.PARAMETER_STRING_ARRAY: lambda v: list(v.string_array_value),
    }.get(value.type, lambda v: None)(value)


@pytest.fixture(scope="module")
def running_executables(tmp_path_factory, module_ros_node):
    """Every console script, each in its own namespace: its node name and the parameters
    it declares (``~/list_parameters``)."""
    from rcl_interfaces.srv import ListParameters

    log_dir = tmp_path_factory.mktemp("launch_file_nodes")
    started = {}
    try:
        for i, executable in enumerate(sorted(CONSOLE_SCRIPTS)):
            ns = f"/launch_check_{i}"
            started[executable] = Started(executable, ns, _start_console_script(
                executable, ["-r", f"__ns:={ns}"], log_dir, executable))
        for s in started.values():
            s.node_name = _wait_for_node(module_ros_node, s.namespace, s.proc)
            listed = ros_utils.call_service(
                module_ros_node, ListParameters, f"{s.namespace}/{s.node_name}/list_parameters",
                ListParameters.Request(depth=ListParameters.Request.DEPTH_RECURSIVE),
                timeout=60.0)
            s.declared = set(listed.result.names)
            ros_utils.assert_running(s.proc)
        yield started
    finally:
        for s in started.values():
            _stop(s.proc)


def _declared_and_names(running):
    return ({exe: s.declared for exe, s in running.items()},
            {exe: s.node_name for exe, s in running.items()})


def _same(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            math.isclose(a, b, rel_tol=1e-12)
    return a == b


@pytest.mark.timeout(180)
def test_launch_parameters_are_declared_by_the_nodes(running_executables):
    declared_by, names = _declared_and_names(running_executables)
    for launch in LAUNCH.values():
        assert parameter_problems(launch, declared_by, names) == []


BROKEN_LAUNCH = """
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare('manip_dynamics')
    return LaunchDescription([
        DeclareLaunchArgument('config', default_value=PathJoinSubstitution(
            [share, 'config', 'dynamics.yaml'])),
        Node(package='manip_dynamics', executable='dynamics_node',
             parameters=[{'markers': {'scale': 0.2}, 'marker.scale': 0.2}]),
        Node(package='manip_dynamics', executable='dynamics_nodes'),
        Node(package='manip_dynamics', executable='dynamics_node',
             parameters=[LaunchConfiguration('config'), {'tip': 'tool0'},
                         PathJoinSubstitution([share, 'config', 'absent.yaml'])],
             remappings=[('joint_states', LaunchConfiguration('joint_topic'))]),
        Node(package='rviz2', executable='rviz', arguments=['-d', 'demo.rviz']),
    ])
"""


def test_the_checks_catch_mistakes(tmp_path, running_executables):
    """The checker is not vacuous: a launch file with one mistake of each kind fails."""
    path = tmp_path / "broken.launch.py"
    path.write_text(BROKEN_LAUNCH)
    launch = LaunchFile(path)
    text = "\n".join(executable_problems(launch))
    assert "'dynamics_nodes' is not a console_scripts entry" in text
    assert "rviz2/rviz" in text
    text = "\n".join(file_problems(launch))
    assert "share/manip_dynamics/config/absent.yaml is not installed" in text
    assert "'demo.rviz'" in text
    assert "joint_topic" in "\n".join(launch_argument_problems(launch))
    problems = parameter_problems(launch, *_declared_and_names(running_executables))
    text = "\n".join(problems)
    assert "['tip']" in text and "['marker.scale']" in text
    assert "markers.scale" not in text            # nested dict flattened: declared


def test_config_files_are_declared(running_executables):
    """Every key of every config/*.yaml is declared by the node its section names (a
    ``/**`` section: by at least one of our nodes)."""
    by_name = {s.node_name: s for s in running_executables.values()}
    all_declared = set().union(*(s.declared for s in running_executables.values()))
    for f in CONFIG_FILES:
        sections = _yaml_parameters(f)
        assert sections, f"{f.name}: no ros__parameters section"
        for node_key, params in sections.items():
            targets = [s for name, s in by_name.items() if section_applies(node_key, name)]
            if node_key.strip("/") in ("**", "*"):
                declared = all_declared
            else:
                assert targets, f"{f.name} [{node_key}]: names none of our nodes"
                declared = set().union(*(t.declared for t in targets))
            unknown = sorted(set(params) - declared)
            assert not unknown, f"{f.name} [{node_key}]: undeclared parameters {unknown}"


def _launched_with_files():
    """(launch file, NodeSpec) of our nodes that a launch file gives YAML files."""
    return [(name, spec) for name, launch in sorted(LAUNCH.items())
            for spec in launch.nodes()
            if spec.package == PACKAGE and spec.executable in CONSOLE_SCRIPTS
            and spec.parameter_files]


@pytest.mark.timeout(240)
def test_launch_yaml_values_reach_the_nodes(tmp_path, module_ros_node, running_executables):
    """Each node a launch file gives YAML files is started as launch_ros would start it
    (root namespace, ``-r __node:=<name>``, ``--params-file`` per file), one at a time;
    its ``~/get_parameters`` must report the values of every section that applies."""
    from rcl_interfaces.srv import GetParameters

    cases = _launched_with_files()
    assert cases, "no launch file passes a parameter file to one of our nodes"
    default_names = _declared_and_names(running_executables)[1]
    for launch_name, spec in cases:
        name = node_name_of(spec, default_names)
        ros_args = ["-r", f"__node:={name}"]
        for f in spec.parameter_files:
            ros_args += ["--params-file", str(f)]
        proc = _start_console_script(spec.executable, ros_args, tmp_path,
                                     f"{launch_name}_{name}")
        try:
            _wait_for_node(module_ros_node, "/", proc, name)
            expected = {}
            for f in spec.parameter_files:
                for node_key, params in _yaml_parameters(f).items():
                    if section_applies(node_key, name):
                        expected.update(params)
            keys = sorted(expected)
            got = ros_utils.call_service(module_ros_node, GetParameters, f"/{name}/get_parameters",
                                         GetParameters.Request(names=keys), timeout=60.0)
            reported = {k: _parameter_value(v) for k, v in zip(keys, got.values)}
            ros_utils.assert_running(proc)
        finally:
            _stop(proc)
        for key in keys:
            assert _same(reported.get(key), expected[key]), (
                f"{launch_name} ({name}): node reports {key} = {reported.get(key)!r}, "
                f"the parameter file sets {expected[key]!r}")


def test_dynamics_node_declares_the_documented_parameters(running_executables):
    expected = {
        "robot_description", "urdf_file", "root_link", "tip_link", "gravity",
        "payload.frame", "payload.mass", "payload.com", "payload.inertia",
        "friction.joints", "friction.viscous", "friction.coulomb", "command_joints",
        "damping", "singular_condition", "outputs.inertia_markers.enabled",
        "outputs.inertia_markers.rate", "outputs.dynamics.enabled", "outputs.dynamics.rate",
        "outputs.gravity_torques.enabled", "outputs.gravity_torques.rate",
        "outputs.gravity_command.enabled", "outputs.gravity_command.rate",
        "outputs.coriolis_torques.enabled", "outputs.coriolis_torques.rate", "executor",
        "outputs.external_torques.enabled", "outputs.external_torques.rate",
        "outputs.external_wrench.enabled", "outputs.external_wrench.rate",
        "outputs.contact.enabled", "outputs.contact.rate",
        "joint_states_latest_wins", "joint_states_backlog",
        "markers.scale", "markers.show_mass_matrix", "markers.alpha",
        "joint_states_qos.reliability", "joint_states_qos.depth", "max_state_age",
    }
    missing = expected - running_executables["dynamics_node"].declared
    assert not missing, f"dynamics_node does not declare {sorted(missing)}"
