# manip_dynamics: `make test` and `make demo` set everything up from nothing (see
# docs/building.md). Set-up steps are stamped and skipped when already done.
#
#   make test                      set up, then run the whole suite (pytest test/), then
#                                  test/core again with OPENBLAS_CORETYPE=Prescott NUMBA_CPU_NAME=generic
#   make test TESTS=test/test_smoke_ros.py PYTEST_ARGS="-k round_trip -x"
#   make demo                      set up, then python -m manip_dynamics.demo
#   make demo ROBOT=arm.urdf.xacro ROBOT_ARGS="prefix:=a_" TIP=tool0   the demo on your arm
#   make demo-identification       set up, then python -m manip_dynamics.demo_identification
#   make bench                     set up, then run every benchmarks/*.py (BENCH_TIMEOUT s each)
#   make setup                     only the set-up (venv, interfaces, editable install, kernels)
#   make setup-render              also the Debian libraries for MuJoCo's offscreen pictures
#   make clean                     remove build products and stamps (never the venv)
#   make constraints VENV=/tmp/pins rewrite constraints.txt from that venv (updating pins)

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV ?= .venv
VENV_ABS := $(abspath $(VENV))
PY := $(VENV_ABS)/bin/python
STAMPS := $(VENV_ABS)/.manip_dynamics_stamps
IFACE_BUILD := $(VENV_ABS)/.manip_dynamics_build/interfaces
LOCK := flock $(VENV_ABS).setup.lock

TESTS ?= test/
PYTEST_ARGS ?=
DEMO_ARGS ?=
DEMO_TIMEOUT ?= 600
BENCH_TIMEOUT ?= 900

IFACE_SOURCES := manip_dynamics_interfaces/CMakeLists.txt manip_dynamics_interfaces/package.xml \
	$(wildcard manip_dynamics_interfaces/msg/*.msg manip_dynamics_interfaces/srv/*.srv)

# Every target that may run ROS keeps discovery on loopback.
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
# Environment the ROS build tools need (the venv is the only ROS prefix on this machine).
BUILD_ENV := VIRTUAL_ENV="$(VENV_ABS)" PATH="$(VENV_ABS)/bin:$$PATH" \
	AMENT_PREFIX_PATH="$(VENV_ABS)$${AMENT_PREFIX_PATH:+:$$AMENT_PREFIX_PATH}" \
	CMAKE_PREFIX_PATH="$(VENV_ABS)$${CMAKE_PREFIX_PATH:+:$$CMAKE_PREFIX_PATH}"
# demo and bench: keep a ROS_DOMAIN_ID from the environment, else one from the shell's pid
# (1..100). The test suite chooses its own in test/conftest.py.
DOMAIN := ROS_DOMAIN_ID="$${ROS_DOMAIN_ID:-$$(( $$$$ % 100 + 1 ))}"

.PHONY: test demo demo-identification bench setup setup-render clean constraints

setup: $(STAMPS)/editable $(STAMPS)/interfaces $(STAMPS)/kernels

# The whole suite (TESTS=test/, the default: what CI runs) is followed by a second run of
# test/core under another BLAS kernel and numba target, so that a result that depends on
# the CPU shows up on any machine (docs/math.md section 5). A TESTS= subset runs once.
# The second run leaves out what computes no dynamics of its own: the input checks and
# fuzzers of parsing and arguments, xacro reading (their numeric comparisons are the
# same kernels the closed-form, Pinocchio and example-robot-data tests rerun), and the
# MCAP recordings and missing optional libraries (no numbers computed at all).
KERNEL_VARIANT := OPENBLAS_CORETYPE=Prescott NUMBA_CPU_NAME=generic
KERNEL_VARIANT_SKIP := --ignore=test/core/dynamics/test_fuzz_urdf.py \
	--ignore=test/core/dynamics/test_fuzz_requests.py --ignore=test/core/dynamics/test_description.py \
	--ignore=test/core/identification/test_identification_inputs.py \
	--ignore=test/core/dynamics/test_adversarial.py --ignore=test/core/identification/test_recording.py \
	--ignore=test/core/test_extras.py

test: setup
	$(PY) -m pytest $(TESTS) $(PYTEST_ARGS)
	@if [ "$(TESTS)" = "test/" ]; then \
		echo "=== test/core again under $(KERNEL_VARIANT)"; \
		$(KERNEL_VARIANT) $(PY) -m pytest test/core $(KERNEL_VARIANT_SKIP) $(PYTEST_ARGS); \
	fi

# make demo ROBOT=arm.urdf|arm.urdf.xacro [ROBOT_ARGS="name:=value ..."] [TIP=link]: your arm
ROBOT ?=
ROBOT_ARGS ?=
TIP ?=
ROBOT_FLAGS := $(if $(ROBOT),--urdf $(ROBOT) $(foreach a,$(ROBOT_ARGS),--xacro-arg $(a)) \
	$(if $(TIP),--tip $(TIP)),)

demo: setup
	$(DOMAIN) timeout --signal=INT --kill-after=15 $(DEMO_TIMEOUT) $(PY) -m manip_dynamics.demo \
		$(ROBOT_FLAGS) $(DEMO_ARGS)

demo-identification: setup
	$(DOMAIN) timeout --signal=INT --kill-after=15 $(DEMO_TIMEOUT) $(PY) \
		-m manip_dynamics.demo_identification $(DEMO_ARGS)

bench: setup
	@shopt -s nullglob; scripts=(benchmarks/*.py); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "no benchmarks/*.py to run"; exit 0; fi; \
	for s in "$${scripts[@]}"; do \
		echo "=== $$s"; \
		$(DOMAIN) timeout --signal=INT --kill-after=15 $(BENCH_TIMEOUT) $(PY) "$$s"; \
	done

# 1. The venv with the pinned dependencies. An existing venv is reused: pip only installs
#    what is missing or differs from the pins.
$(STAMPS)/venv: requirements.txt constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "the ROS 2 Kilted wheels need CPython 3.11; set PYTHON=python3.11")'
	@mkdir -p $(dir $(VENV_ABS))
	@echo "python venv $(VENV_ABS): installing the pinned requirements"
	@$(LOCK) bash -euc '\
		if [ ! -x "$(PY)" ]; then $(PYTHON) -m venv "$(VENV_ABS)"; fi; \
		"$(PY)" -m pip install -q --progress-bar off --disable-pip-version-check \
			-r requirements.txt -c constraints.txt'
	@mkdir -p $(STAMPS) && touch $@

# 2. manip_dynamics_interfaces, generated with cmake and installed into the venv prefix.
$(STAMPS)/interfaces: $(STAMPS)/venv $(IFACE_SOURCES)
	@echo "building manip_dynamics_interfaces (cmake) into $(VENV_ABS)"
	@mkdir -p "$(IFACE_BUILD)"
	@$(LOCK) bash -euc '\
		export $(BUILD_ENV); \
		cmake -S manip_dynamics_interfaces -B "$(IFACE_BUILD)" \
			-DCMAKE_PREFIX_PATH="$(VENV_ABS)" -DCMAKE_INSTALL_PREFIX="$(VENV_ABS)" \
			-DPython3_EXECUTABLE="$(PY)" -DBUILD_TESTING=OFF > "$(IFACE_BUILD).cmake.log" 2>&1 \
			|| { cat "$(IFACE_BUILD).cmake.log"; exit 1; }; \
		cmake --build "$(IFACE_BUILD)" --target install -j2 > "$(IFACE_BUILD).build.log" 2>&1 \
			|| { tail -n 100 "$(IFACE_BUILD).build.log"; exit 1; }; \
		"$(PY)" -c "import manip_dynamics_interfaces.srv, manip_dynamics_interfaces.msg"'
	@touch $@

# 3. This package, editable (the venv imports the working tree).
$(STAMPS)/editable: $(STAMPS)/venv setup.py setup.cfg pyproject.toml package.xml
	@echo "pip install -e . (editable, no deps)"
	@$(LOCK) "$(PY)" -m pip install -q --progress-bar off --disable-pip-version-check \
		--no-deps --no-build-isolation -e .
	@touch $@

# 4. The core's numba kernels, compiled once into numba's on-disk cache (the __pycache__
#    next to each module: manip_dynamics/core/dynamics/kernels/__pycache__ and its
#    neighbours), so no test, node or demo process pays the compile.
$(STAMPS)/kernels: $(STAMPS)/editable $(wildcard manip_dynamics/core/*.py manip_dynamics/core/*/*.py \
		manip_dynamics/core/*/*/*.py)
	@echo "compiling the core's numba kernels (once; cached on disk)"
	@$(LOCK) "$(PY)" -W ignore -c 'from manip_dynamics import RobotModel, robots; \
		RobotModel.from_urdf_file(robots.path("panda")).warm_up()'
	@touch $@

# Optional: the Debian libraries MuJoCo's offscreen renderer (the demo's pictures) needs:
# EGL with Mesa's software rasteriser (llvmpipe), and OSMesa as the fallback
# (MUJOCO_GL=osmesa). Without them `make demo` says it cannot render and goes on.
RENDER_PACKAGES := libegl1 libegl-mesa0 libgl1-mesa-dri libopengl0 libosmesa6

setup-render: setup
	@SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends $(RENDER_PACKAGES)
	@MUJOCO_GL=egl "$(PY)" -c 'import mujoco; \
		mujoco.Renderer(mujoco.MjModel.from_xml_string("<mujoco/>"), 64, 64).close(); \
		print("MuJoCo offscreen rendering works (MUJOCO_GL=egl)")'

clean:
	rm -rf "$(STAMPS)" "$(VENV_ABS)/.manip_dynamics_build" *.egg-info .pytest_cache
	find . -path ./.venv -prune -o -path ./.git -prune -o \
		\( -name __pycache__ -o -name '*.nbi' -o -name '*.nbc' \) -print0 | xargs -0 rm -rf

# Rewrite constraints.txt from the venv's installed distributions (see docs/building.md,
# "Pins"). Only real distributions (.dist-info): the ROS wheels also register egg-info
# names such as rclpy==9.1.2 that pip never needs.
constraints:
	@"$(PY)" -c 'import importlib.metadata as m; \
	d = {x.metadata["Name"].lower(): x.metadata["Name"] + "==" + x.version \
	     for x in m.distributions() if str(x._path).endswith(".dist-info")}; \
	[d.pop(k, None) for k in ("pip", "manip-dynamics", "manip_dynamics")]; \
	print("# Full pinned dependency closure of requirements.txt (pip freeze of a venv built from it)."); \
	print("# Used as \x27pip install -r requirements.txt -c constraints.txt\x27. Regenerate: docs/building.md."); \
	print("\n".join(d[k] for k in sorted(d)))' > constraints.txt.new
	@mv constraints.txt.new constraints.txt
	@git diff --stat -- constraints.txt 2>/dev/null || true
