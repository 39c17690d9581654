"""Batched and threaded calls give exactly the single-state results (issue 11).

Every state of a batch runs the same per-state code on its own scratch, in the calling
thread or in one of numba's threads (prange over blocks of states); the results must be
the same bits (np.array_equal), not merely close, whatever the batch size and the thread
count. Also: the thread-count settings are validated, and a non-finite state found inside a
threaded batch is still reported by name.
"""
from __future__ import annotations

import math
import time
import warnings

import numba
import numpy as np
import pytest

from manip_dynamics import InputError, NonFiniteResultError, RobotModel
from manip_dynamics.core.dynamics import launch as launch_module
from manip_dynamics.core.dynamics import model as model_module
from manip_dynamics.core.dynamics.launch import get_threads, set_threads

# batches of at least 2 * MIN_STATES_PER_THREAD states are threaded; lowered here so that
# every thread count below gets its threads with a small batch
MIN_STATES_PER_THREAD = 16
N_STATES = 4 * MIN_STATES_PER_THREAD + 7          # (not a multiple of the thread count)
THREADS = (1, 2, 3, 4)


@pytest.fixture(autouse=True)
def small_thread_blocks(monkeypatch):
    monkeypatch.setattr(launch_module, "MIN_STATES_PER_THREAD", MIN_STATES_PER_THREAD)


from .test_pinocchio import PANDA    # example-robot-data's Panda: 7 dof + a mimic finger
TIP = "panda_hand_tcp"


@pytest.fixture(scope="module")
def panda():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = RobotModel.from_urdf_file(PANDA)
    assert model.mimic_joint_names      # the mimic reduction G^T ... G is exercised too
    return model


@pytest.fixture(scope="module")
def states(panda):
    rng = np.random.default_rng(11)
    Q = rng.uniform(-2.0, 2.0, (N_STATES, panda.n))
    QD = rng.normal(scale=2.0, size=(N_STATES, panda.n))
    return Q, QD


def _calls(model, tip):
    """name -> f(q, qd, **kw) over the calls that take threads=."""
    return {
        "gravity_torques": lambda q, qd, **kw: model.gravity_torques(q, **kw),
        "coriolis_torques": lambda q, qd, **kw: model.coriolis_torques(q, qd, **kw),
        "mass_matrix": lambda q, qd, **kw: model.mass_matrix(q, **kw),
        "jacobian": lambda q, qd, **kw: model.jacobian(q, tip, **kw),
        "compute_all": lambda q, qd, **kw: tuple(model.compute_all(q, qd, tip, **kw)),
        "compute_all linear": lambda q, qd, **kw: tuple(
            model.compute_all(q, qd, tip, linear_only=True, **kw)),
    }


def _as_arrays(result):
    return [np.asarray(x) for x in (result if isinstance(result, tuple) else (result,))]


@pytest.mark.parametrize("name", list(_calls(None, None)))
def test_batched_and_threaded_equal_single_state_bitwise(panda, states, name):
    Q, QD = states
    f = _calls(panda, TIP)[name]
    singles = [_as_arrays(f(Q[s], QD[s])) for s in range(N_STATES)]
    for threads in THREADS:
        batch = _as_arrays(f(Q, QD, threads=threads))
        for field, b in enumerate(batch):
            expected = np.stack([single[field] for single in singles])
            assert np.array_equal(b, expected), (name, threads, field)


def test_threads_really_run_in_parallel_blocks(panda, states, monkeypatch):
    """The threaded entry point is the one used for a large batch with threads > 1 (when
    numba has more than one thread), and the serial one otherwise."""
    Q, _ = states
    used = []
    real = model_module._launch

    def spy(serial, threaded, threads, N, *args):
        used.append((threads, N))
        return real(serial, threaded, threads, N, *args)

    monkeypatch.setattr(model_module, "_launch", spy)
    panda.gravity_torques(Q, threads=2)
    panda.gravity_torques(Q[:1])          # a batch of one: the serial entry point
    panda.gravity_torques(Q[0])           # one state: the one-state kernel, no launch
    assert used == [(2, N_STATES), (None, 1)]
    # the kernels themselves: every block count gives the serial bits
    from manip_dynamics.core.dynamics import kernels as K
    ref = np.empty_like(Q)
    assert K.batch_gravity(panda._bodies, panda.gravity, Q, ref) == 0
    for chunks in (1, 2, 5, N_STATES):
        out = np.empty_like(Q)
        assert K.batch_gravity_threads(panda._bodies, panda.gravity, Q, out, chunks) == 0
        assert np.array_equal(out, ref), chunks


def test_thread_count_settings(panda, states, monkeypatch):
    Q, _ = states
    monkeypatch.delenv("MANIP_DYNAMICS_THREADS", raising=False)
    set_threads(None)
    assert get_threads() == numba.config.NUMBA_NUM_THREADS
    monkeypatch.setenv("MANIP_DYNAMICS_THREADS", "3")
    assert get_threads() == 3
    set_threads(1)
    try:
        assert get_threads() == 1
        ref = panda.gravity_torques(Q)
    finally:
        set_threads(None)
    assert np.array_equal(panda.gravity_torques(Q), ref)
    monkeypatch.setenv("MANIP_DYNAMICS_THREADS", "many")
    with pytest.raises(InputError, match="MANIP_DYNAMICS_THREADS"):
        get_threads()
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(InputError, match="threads"):
            set_threads(bad)
        with pytest.raises(InputError, match="threads"):
            panda.gravity_torques(Q, threads=bad)
        with pytest.raises(InputError, match="threads"):
            panda.mass_matrix(Q[0], threads=bad)


@pytest.mark.parametrize("threads", (1, 2))
def test_nonfinite_state_in_a_threaded_batch_is_named(panda, states, threads):
    Q, QD = states
    Q = Q.copy()
    QD = QD.copy()
    Q[N_STATES - 3, 2] = np.nan
    with pytest.raises(InputError, match=rf"q\[{N_STATES - 3}, 2\] \(joint 'panda_joint3'\) is nan"):
        panda.gravity_torques(Q, threads=threads)
    with pytest.raises(InputError, match=rf"q\[{N_STATES - 3}, 2\]"):
        panda.compute_all(Q, QD, TIP, threads=threads)
    Q[N_STATES - 3, 2] = 0.0
    QD[5, 1] = np.inf
    with pytest.raises(InputError, match=r"qd\[5, 1\] \(joint 'panda_joint2'\) is inf"):
        panda.coriolis_torques(Q, QD, threads=threads)
    # finite inputs whose result overflows: our error, not a silent inf
    QD[5, 1] = 1e200
    with pytest.raises(NonFiniteResultError, match="state 5"):
        panda.coriolis_torques(Q, QD, threads=threads)


def test_default_thread_count_uses_only_idle_cpus():
    """Without an explicit count, a launch takes 1 + the CPUs nobody else runs on (the
    calling thread is one of the running tasks, our spinning workers are not load);
    unknown load: one thread."""
    from manip_dynamics.core.dynamics.launch import idle_thread_count
    assert idle_thread_count(2, 1, 2) == 2          # only this thread runs: both CPUs
    assert idle_thread_count(2, 2, 2) == 1          # one other task: the other CPU is taken
    assert idle_thread_count(4, 3, 8) == 4          # capped by the count wanted
    assert idle_thread_count(8, 3, 8) == 6
    assert idle_thread_count(2, 40, 2) == 1         # never below one
    assert idle_thread_count(2, None, 2) == 1
    # our own workers still spinning after the last launch are not load
    assert idle_thread_count(2, 2, 2, own_workers=1) == 2
    assert idle_thread_count(2, 3, 2, own_workers=1) == 1
    assert idle_thread_count(2, 1, 2, own_workers=1) == 2       # (already asleep)


def test_running_tasks_reads_proc_loadavg(tmp_path):
    from manip_dynamics.core.dynamics.launch import running_tasks
    f = tmp_path / "loadavg"
    f.write_text("0.36 0.54 0.80 3/79 19166\n")
    assert running_tasks(str(f)) == 3
    f.write_text("garbage\n")
    assert running_tasks(str(f)) is None
    assert running_tasks(str(tmp_path / "missing")) is None
    real = running_tasks()                 # this machine: Linux, this thread is running
    assert real is None or real >= 1


def test_default_launch_is_serial_on_a_busy_machine(panda, states, monkeypatch):
    """The default count follows the load read at each launch: every other CPU busy -> the
    serial entry point; idle -> the threaded one; an explicit threads= is used as given.
    The same bits either way. On a one-CPU machine the launcher is told of two CPUs (the
    load is faked below anyway) and numba has two threads (test/conftest.py)."""
    from manip_dynamics.core.dynamics import kernels as K
    assert numba.config.NUMBA_NUM_THREADS >= 2, "NUMBA_NUM_THREADS=1 set: unset it"
    monkeypatch.setattr(launch_module, "_MACHINE_CPUS", max(2, launch_module._MACHINE_CPUS))
    Q, _ = states
    monkeypatch.delenv("MANIP_DYNAMICS_THREADS", raising=False)
    set_threads(None)
    threaded = []
    real = K.batch_gravity_threads

    def spy(*args):
        threaded.append(args[-1])
        return real(*args)

    monkeypatch.setattr(K, "batch_gravity_threads", spy)
    ref = panda.gravity_torques(Q, threads=1)
    cpus = launch_module._MACHINE_CPUS
    t_all = min(numba.config.NUMBA_NUM_THREADS, cpus, N_STATES // MIN_STATES_PER_THREAD)
    long_ago = [-math.inf, 1]
    just_now = [time.monotonic() + 1.0, 2]      # a launch on 2 threads "has just ended"
    for running, last, expected in ((cpus, long_ago, []),    # another task on a CPU
                                    (1, long_ago, [t_all]),  # idle
                                    (2, just_now, [t_all])):  # the other one: our worker
        threaded.clear()
        monkeypatch.setattr(launch_module, "running_tasks", lambda: running)
        monkeypatch.setattr(launch_module, "_last_launch", list(last))
        assert np.array_equal(panda.gravity_torques(Q), ref)
        assert threaded == expected, (running, last)
    threaded.clear()
    monkeypatch.setattr(launch_module, "running_tasks", lambda: 10 * cpus)
    assert np.array_equal(panda.gravity_torques(Q, threads=2), ref)
    assert threaded == [2]                  # explicit: not limited by the load
