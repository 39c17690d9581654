"""How RobotModel calls its kernels: the thread count of a batch (set_threads,
MANIP_DYNAMICS_THREADS, the CPUs idle now), one threaded launch at a time, and direct
calls of a kernel's compiled entry point (check_direct_calls for the tests)."""
from __future__ import annotations

import math
import os
import threading
import time

import numba
import numpy as np

from ..errors import InputError

# ------------------------------------------------------------------ threads
# Smaller batches run in the calling thread: waking numba's workers costs tens of
# microseconds, more than a few hundred states of work save.
# A threaded launch waits for every worker it woke (an OpenMP barrier): on a machine whose
# CPUs are busy a worker may wait a scheduler time slice to run, and 1000 UR5 states took
# 8 ms on two threads instead of 0.3 ms on one. So the default count (no ``threads=``, no
# set_threads, no MANIP_DYNAMICS_THREADS) is limited to the CPUs idle at the launch: the
# CPUs minus the tasks running on the machine (/proc/loadavg, this thread included), + 1.
# After a launch numba's OpenMP workers spin for a while (libgomp's default wait policy:
# about 30 ms measured here) waiting for the next one; they count as running, so within
# OWN_SPIN_S of our last threaded launch its workers are not counted as load. (A sleeping
# worker would start 50-250 us late here, often on the busy CPU: OMP_WAIT_POLICY=PASSIVE
# made 1000 states slower on two threads than on one.) An explicit count is used as given.
MIN_STATES_PER_THREAD = 256
OWN_SPIN_S = 0.05
_THREADS_ENV = "MANIP_DYNAMICS_THREADS"
_threads_setting = [None]      # set_threads(); None: the environment, else numba's count
_launch_lock = threading.Lock()
_last_launch = [-math.inf, 1]  # (time.monotonic() at the end, thread count) of the last one
_LOADAVG = "/proc/loadavg"
_MACHINE_CPUS = os.cpu_count() or 1   # /proc/loadavg counts the tasks of the whole machine


def running_tasks(path=_LOADAVG):
    """Tasks running or runnable on the machine now (the 4th field of /proc/loadavg,
    'running/total'), or None where that cannot be read (not Linux)."""
    try:
        with open(path, "rb") as f:
            return int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None


def idle_thread_count(threads, running, cpus, own_workers=0):
    """Of ``threads`` wanted, how many can run now: 1 + the CPUs nobody else is running on
    (``running`` includes the calling thread and ``own_workers`` of our own spinning
    workers, which are not load); 1 when ``running`` is unknown (None)."""
    if running is None:
        return 1
    return max(1, min(threads, cpus - max(1, running - own_workers) + 1))


def _thread_count(threads, name):
    """A thread count: an int >= 1 (not bool) -> int; InputError naming ``name`` otherwise."""
    if isinstance(threads, (int, np.integer)) and not isinstance(threads, (bool, np.bool_)) \
            and threads >= 1:
        return int(threads)
    raise InputError(f"{name} must be an integer >= 1, got {threads!r}")


def set_threads(threads=None):
    """Default thread count of the batched calls (None: back to MANIP_DYNAMICS_THREADS, else
    numba's thread count, i.e. the CPUs). More than numba's NUMBA_NUM_THREADS (fixed at
    start-up) run as that many."""
    _threads_setting[0] = None if threads is None else _thread_count(threads, "threads")


def get_threads():
    """The thread count a batched call uses when it is not given ``threads=``: set_threads,
    else MANIP_DYNAMICS_THREADS, else numba's thread count (then limited at each launch to
    the CPUs idle at that moment, see above)."""
    return _configured_threads() or numba.config.NUMBA_NUM_THREADS


def _configured_threads():
    """set_threads' count, else MANIP_DYNAMICS_THREADS', else None (the default)."""
    if _threads_setting[0] is not None:
        return _threads_setting[0]
    env = os.environ.get(_THREADS_ENV, "").strip()
    if env:
        try:
            return _thread_count(int(env), _THREADS_ENV)
        except ValueError:
            raise InputError(f"{_THREADS_ENV} must be an integer >= 1, got {env!r}") from None
    return None


_F64 = np.dtype(np.float64)
_STRIDE1 = (8,)


def _one_state(x, shape1) -> bool:
    """x is one C-contiguous float64 state of shape ``shape1`` (n,): the one-state kernels
    (``K.one_*``) take it as it is."""
    return (type(x) is np.ndarray and x.strides == _STRIDE1 and x.dtype is _F64
            and len(x) == shape1[0])          # (strides (8,): one axis, so len is its size)

# ------------------------------------------------------------------ direct kernel calls
# numba's dispatcher finds the compiled overload from the numba types of the arguments on
# every call: about 0.7 us for the body table and three arrays, more than a Panda g(q)'s
# arithmetic. The wrappers here always pass the same types to a kernel (the model's own
# body table, gravity and frame arrays; C-contiguous float64 states and outputs made by
# ``_states`` and ``np.empty``; Python ints and floats), so each kernel's entry point for
# those types is looked up once and called directly. A call with other types would be read
# with the wrong shapes: ``check_direct_calls(True)`` (the core tests turn it on) compares
# every call's types with the entry's.
_entries: dict = {}          # kernel -> its entry point (or, when checking, a checker)
_check_direct = [False]


def check_direct_calls(on: bool) -> None:
    """Verify on every direct kernel call that the argument types are those of the entry
    point (readonly flags aside: they do not change how an array is passed). For tests."""
    if _check_direct[0] != bool(on):
        _check_direct[0] = bool(on)
        _entries.clear()      # made again at each kernel's next call, in the new mode


def direct_call(kernel, args):
    """kernel(*args) (a numba dispatcher, args a tuple) through its compiled entry point for
    the types of ``args`` (see above): for callers that pass a kernel arguments of the
    same numba types on every call (the first call's types; other types are read with
    the wrong layout unless :func:`check_direct_calls` is on). The first call per kernel
    goes through the dispatcher (compiling or loading the cache)."""
    entry = _entries.get(kernel)
    if entry is not None:
        return entry(*args)
    result = kernel(*args)
    sig = tuple(numba.typeof(a) for a in args)
    entry = kernel.overloads[sig].entry_point
    _entries[kernel] = _checked(kernel, entry, _mutable(sig)) if _check_direct[0] else entry
    return result


_direct = direct_call          # (the core's own name for it)


def _checked(kernel, entry, expected):
    """entry, raising AssertionError when called with other argument types than ``expected``."""
    def call(*args):
        sig = _mutable(tuple(numba.typeof(a) for a in args))
        if sig != expected:
            raise AssertionError(f"{kernel.__name__}: direct call with {sig}, entry point "
                                 f"compiled for {expected}")
        return entry(*args)
    return call


def _mutable(sig):
    """The signature with every array type's readonly flag cleared."""
    return tuple(t.copy(readonly=False) if isinstance(t, numba.types.Array) else t for t in sig)


def _launch(serial, threaded, threads, N, *args):
    """serial(*args) in the calling thread (a direct call), or threaded(*args, t) over t numba
    threads when the batch of N states has MIN_STATES_PER_THREAD states for each (the
    default count: only the CPUs idle now, see above). One threaded launch at a time: a
    second Python thread meanwhile runs its batch serially (no oversubscription; numba's
    workqueue layer also forbids concurrent launches). Returns the kernel's result."""
    if N < 2 * MIN_STATES_PER_THREAD:
        if threads is not None:
            _thread_count(threads, "threads")
        return _direct(serial, args)
    if threads is not None:
        t = _thread_count(threads, "threads")
    else:
        t = _configured_threads()
        if t is None:
            end, last = _last_launch
            spinning = last - 1 if time.monotonic() - end < OWN_SPIN_S else 0
            t = idle_thread_count(numba.config.NUMBA_NUM_THREADS, running_tasks(),
                                  _MACHINE_CPUS, spinning)
    t = min(t, N // MIN_STATES_PER_THREAD, numba.config.NUMBA_NUM_THREADS)
    if t > 1 and _launch_lock.acquire(blocking=False):
        try:
            numba.set_num_threads(t)
            return threaded(*args, t)
        finally:
            _last_launch[:] = time.monotonic(), t
            _launch_lock.release()
    return _direct(serial, args)
