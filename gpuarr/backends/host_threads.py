"""The host's cores for NumPy work: a small shared thread pool and BLAS's own threads.

NumPy releases the GIL inside ufunc loops, reductions and BLAS calls, so large host kernels
(elementwise steps of compiled Programs, reductions, threefry, erf_inv) split their range over a
few threads from one persistent pool. How many threads pay off, and from what length, is
measured once per process (`thread_policy`; GPUARR_HOST_THREADS=n fixes the count).
Matrix products instead use OpenBLAS's threads, but only where those pay for themselves: they
are switched off for mid-sized products and on machines whose cores are busy.
"""
from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from gpuarr.backends.float_env import flush_in_this_thread
from gpuarr.backends.host_memory import aligned_empty

# ---------------------------------------------------------------- the shared pool

# Below _PARALLEL_MIN elements the hand-off to another thread costs more than it saves.
_PARALLEL_MIN = 1 << 15
# The cores this process may run on; the pool uses at most four of them.
_CPUS = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
         else (os.cpu_count() or 1))
_THREADS = max(1, min(4, _CPUS))
# Host kernels made of many NumPy passes (threefry, XLA's erf_inv and log) work through blocks
# this long on one thread: small enough to stay in the L2 cache between passes, large enough
# that the per-call cost of each pass does not dominate.
CACHE_BLOCK = 1 << 17
_pool: ThreadPoolExecutor | None = None


class ThreadPolicy(NamedTuple):
    """How this machine's threads pay off for NumPy passes: `steps` holds (part length in
    elements, threads) pairs, each count used once every part is at least that long, and
    `block` is how many elements each pass of a split run covers."""
    steps: tuple[tuple[int, int], ...]
    block: int


_ONE_THREAD = ThreadPolicy(((_PARALLEL_MIN, 1),), CACHE_BLOCK)
# Measured at the first parallel run (`_measure_threads`), or fixed by GPUARR_HOST_THREADS=n.
_policy: ThreadPolicy | None = None


def submit(fn, *args) -> Future:
    """Run `fn(*args)` on the shared pool (started on first use)."""
    global _pool
    if _pool is None:
        # The pool's threads compute as XLA's do, with subnormals flushed (float_env).
        _pool = ThreadPoolExecutor(max(1, _THREADS - 1), thread_name_prefix="gpuarr-host",
                                   initializer=flush_in_this_thread)
    return _pool.submit(fn, *args)


def _bounds(n: int, min_part: int, row_size: int) -> list[int]:
    """Row bounds of the parts [0, n) splits into: as many as there are threads that pay off
    for parts that long, each at least `min_part` rows."""
    parts = 1
    if n >= 2 * min_part:
        for length, threads in thread_policy().steps:
            rows = max(min_part, -(-length // max(row_size, 1)))
            parts = max(parts, min(threads, n // rows))
    return [n * i // parts for i in range(parts + 1)]


def _run_parts(chunk, bounds) -> None:
    futures = [submit(chunk, lo, hi) for lo, hi in zip(bounds[1:-1], bounds[2:])]
    chunk(bounds[0], bounds[1])
    for fut in futures:
        fut.result()


def run_in_blocks(chunk, n: int, min_part: int = _PARALLEL_MIN, row_size: int = 1) -> None:
    """Call `chunk(lo, hi)` over contiguous ranges of rows covering [0, n): one range for small
    n, one per thread (the caller's thread included) for large n, each at least `min_part` rows
    long and long enough (in elements, `row_size` to a row) for this machine's threads to pay
    off. `chunk` must only write its range."""
    _run_parts(chunk, _bounds(n, min_part, row_size))


def run_in_passes(chunk, n: int, min_part: int = _PARALLEL_MIN, row_size: int = 1,
                  costly: bool = False) -> None:
    """`run_in_blocks` for a `chunk(lo, hi, rows)` that works through its range in passes of
    `rows` rows: cache-sized on one thread, and on several as long as the measured policy
    says, since every NumPy pass hands the GIL over and on some machines that is slow.
    `costly` passes (transcendental functions) take long enough at the cache size, and there
    keep their temporaries in cache, so they stay cache-sized on several threads too."""
    bounds = _bounds(n, min_part, row_size)
    length = CACHE_BLOCK if len(bounds) == 2 or costly else thread_policy().block
    rows = max(1, length // max(row_size, 1))
    _run_parts(lambda lo, hi: chunk(lo, hi, rows), bounds)


def thread_policy() -> ThreadPolicy:
    """The `ThreadPolicy` for splitting NumPy passes over the pool."""
    global _policy
    if _policy is None:
        fixed = os.environ.get("GPUARR_HOST_THREADS", "").strip()
        if fixed.isdigit() and int(fixed) > 0:
            _policy = ThreadPolicy(((_PARALLEL_MIN, min(int(fixed), _THREADS)),), CACHE_BLOCK)
        else:
            _policy = _measure_threads()
    return _policy


# Each NumPy pass on a thread of the pool hands the GIL over twice. Where a thread switch is
# slow (a sandboxed kernel, a virtual machine) short passes split over several threads can run
# slower than on one: under gVisor, 32768-element passes on two threads took 3.5 times as long as
# on one, and threefry on four threads ran twice as fast with 524288-element passes as with
# 131072. So the first parallel run times the same passes on 1, 2 and 4 threads at three part
# lengths, keeps at each length the counts clearly faster than fewer, and takes as the pass
# length of split runs the shortest (from CACHE_BLOCK up) at which the most threads come close
# to their best. A count only as fast as fewer is not taken: on a 2-core virtual machine, two
# threads on 32768-element passes timed now as fast as one, now twice as slow, from run to run,
# and `random.split` of 10**5 keys on two threads had a median 10% above one thread's.
_PROBE_LENGTHS = (_PARALLEL_MIN, 1 << 17, 1 << 19)
_PROBE_ELEMENTS = 1 << 24  # per timing: a few milliseconds of passes on one thread
_CLEARLY = 1.1  # a time more than this many times another is clearly longer


def _measure_threads() -> ThreadPolicy:
    counts = [t for t in (1, 2, 4) if t <= _THREADS]
    if len(counts) == 1:
        return _ONE_THREAD
    for _ in range(counts[-1]):  # start the pool's threads before timing them
        submit(int).result()
    times = dict.fromkeys(((length, t) for length in _PROBE_LENGTHS for t in counts),
                          float("inf"))
    for length in _PROBE_LENGTHS:
        blocks = [np.ones((3, length), np.uint32) for _ in range(counts[-1])]
        for _ in range(3):  # interleaved, so that a drift in speed hits every count alike
            for t in counts:
                times[length, t] = min(times[length, t], _time_passes(blocks[:t]))
    steps, most = [], 1
    for length in _PROBE_LENGTHS:
        usable = 1
        for t in counts[1:]:  # each count must be clearly faster than any fewer
            if _CLEARLY * times[length, t] > min(times[length, c] for c in counts if c < t):
                break
            usable = t
        if usable > most:
            steps.append((length, usable))
            most = usable
    if not steps:
        return _ONE_THREAD
    long = [length for length in _PROBE_LENGTHS if length >= CACHE_BLOCK]
    best = min(times[length, most] for length in long)
    block = next(length for length in long if times[length, most] <= _CLEARLY * best)
    return ThreadPolicy(tuple(steps), block)


def _time_passes(blocks) -> float:
    """Seconds for additions over _PROBE_ELEMENTS elements in all, split evenly between the
    blocks, one block of three rows per thread. Each pass adds two rows into the third, the
    working set of threefry's passes (two words and a temporary): on a 2-core virtual machine,
    in-place passes over one row of 2**19 elements ran as fast as over 2**17, while threefry in
    blocks of 2**19 ran twice as long (its three rows no longer fit in the L2 cache)."""
    def passes(block):
        for _ in range(_PROBE_ELEMENTS // (len(blocks) * block.shape[-1])):
            np.add(block[0], block[1], out=block[2])

    t0 = time.perf_counter()
    futures = [submit(passes, b) for b in blocks[1:]]
    passes(blocks[0])
    for fut in futures:
        fut.result()
    return time.perf_counter() - t0


_thread_buffers = threading.local()


def thread_buffer(name: str, size: int, dtype) -> np.ndarray:
    """This thread's buffer called `name`: `size` elements of `dtype` from a cache-line
    boundary, reused from call to call (kernels that work block by block on the pool's threads
    keep their scratch here)."""
    buf = getattr(_thread_buffers, name, None)
    if buf is None or buf.shape[0] < size or buf.dtype != dtype:
        buf = aligned_empty(size, dtype)
        setattr(_thread_buffers, name, buf)
    return buf[:size]


def run_in_cache_blocks(block_fn, n: int, make_scratch=lambda size: None) -> None:
    """Call `block_fn(lo, hi, scratch)` over blocks covering [0, n) on the host threads
    (`run_in_passes`); `make_scratch(size)` gives each thread its scratch state once.
    `block_fn` must only write its block."""
    def chunk(lo, hi, rows):
        scratch = make_scratch(min(rows, hi - lo))
        for s in range(lo, hi, rows):
            block_fn(s, min(hi, s + rows), scratch)

    run_in_passes(chunk, n)


# Elementwise ufuncs whose output has at least this many elements split its leading axis.
SPLIT_UFUNC_SIZE = 1 << 18


def split_ufunc(ufunc, shape, dtype) -> Callable:
    """`ufunc(*operands[, out])` for an output of `shape`/`dtype` (at least two rows), computed
    over row ranges of the leading axis by `run_in_blocks` (two halves where there are threads
    to spare). Operands broadcast against the output; only those spanning its leading axis are
    split, and an `out` that aliases an operand stays safe because each range reads and writes
    the same rows."""
    rows, nin = shape[0], ufunc.nin
    row_size = math.prod(shape[1:])

    def split(a, lo, hi):
        return a[lo:hi] if np.ndim(a) == len(shape) and np.shape(a)[0] == rows else a

    def call(*args):
        out = args[nin] if len(args) > nin else np.empty(shape, dtype)
        ins = args[:nin]

        def chunk(lo, hi):
            ufunc(*(split(a, lo, hi) for a in ins), out=out[lo:hi])

        run_in_blocks(chunk, rows, max(1, rows // 2), row_size)
        return out
    call.__name__ = f"split_{ufunc.__name__}"
    return call


# ---------------------------------------------------------------- BLAS threads

def _openblas_threads():
    """(set_num_threads, thread count) of the OpenBLAS bundled with NumPy, or None."""
    try:
        import ctypes
        import glob
        libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                      "libscipy_openblas*"))
        lib = ctypes.CDLL(libs[0]) if len(libs) == 1 else None
        setter = getattr(lib, "scipy_openblas_set_num_threads64_", None)
        getter = getattr(lib, "scipy_openblas_get_num_threads64_", None)
        if setter is None or getter is None:
            return None
        return setter, int(getter())
    except (ImportError, OSError, ValueError):
        return None


_blas = _openblas_threads()


def _dot_one_thread(a, b):
    set_threads, n = _blas
    set_threads(1)
    try:
        return np.dot(a, b)
    finally:
        set_threads(n)


# Products of at most this many multiply-adds run on one BLAS thread. Threads do not pay for
# themselves there, and OpenBLAS workers keep spinning for a while after a threaded call,
# taking a core from every small product that follows (a loop of matrix-vector steps after
# one threaded product runs many times slower on a busy two-core machine).
_ONE_THREAD_MACS = 1 << 22
# Below this OpenBLAS never starts its threads (its own thresholds), so no switch is needed.
_BLAS_THREADED_MACS = 1 << 13



def _open_proc_stat():
    try:
        return os.open("/proc/stat", os.O_RDONLY), os.sysconf("SC_CLK_TCK")
    except (OSError, AttributeError, ValueError):
        return None


_proc_stat = _open_proc_stat()


def _system_busy_seconds() -> float:
    """CPU seconds all cores have spent busy since boot (Linux's /proc/stat, idle and iowait
    excluded)."""
    fd, ticks = _proc_stat
    fields = os.pread(fd, 256, 0).split(b"\n", 1)[0].split()[1:9]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields)
    return (user + nice + system + irq + softirq + steal) / ticks


# Other processes' load, sampled at most every _SAMPLE_SECONDS: [time, busy s, own s, verdict].
_SAMPLE_SECONDS = 0.2
_sample: list = []


def _machine_is_busy() -> bool:
    """Whether other processes kept more than half a core busy over the last sampling window:
    the machine's busy CPU time minus this process's own (its BLAS workers included, whose
    spinning must not count against it). Where /proc/stat is missing, the load average."""
    try:
        if _proc_stat is None:
            return os.getloadavg()[0] > _CPUS - 0.5
        now = time.monotonic()
        if not _sample:
            _sample[:] = [now, _system_busy_seconds(), time.process_time(), False]
        elif now - _sample[0] >= _SAMPLE_SECONDS:
            busy, own = _system_busy_seconds(), time.process_time()
            others = ((busy - _sample[1]) - (own - _sample[2])) / (now - _sample[0])
            _sample[:] = [now, busy, own, others > 0.5]
        return _sample[3]
    except (OSError, ValueError, IndexError, AttributeError):
        return False


def _dot_threads_if_idle(a, b):
    # OpenBLAS splits a product evenly between its threads and waits for the slowest: on a
    # machine whose cores are taken by other processes a descheduled worker stalls the whole
    # product (tens of times slower than one thread). Threads are used only with idle cores.
    if _machine_is_busy():
        return _dot_one_thread(a, b)
    return np.dot(a, b)


def blas_dot(macs: int) -> Callable:
    """The NumPy product to call for a matrix product of `macs` multiply-adds: `np.dot`
    on BLAS's own threads only for large products on a machine with idle cores."""
    if _blas is None or _blas[1] == 1 or macs < _BLAS_THREADED_MACS:
        return np.dot
    return _dot_one_thread if macs <= _ONE_THREAD_MACS else _dot_threads_if_idle
