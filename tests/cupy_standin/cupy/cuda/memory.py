"""Device memory: cudaMalloc simulated with host pages, and CuPy's pooled allocator.

`Memory` is one cudaMalloc: anonymous pages mapped with MAP_NORESERVE, so untouched memory
costs nothing, at a page-aligned (hence 256-byte aligned, as cudaMalloc) host address that is
the "device pointer". Releasing one synchronises the device first, as cudaFree does.
The pool copies cupy/cuda/memory.pyx: sizes rounded up to 512 bytes, one arena of free chunks
per stream, best fit (smallest free chunk that is large enough) with the rest split off,
adjacent free chunks merged on free, the limit checked before cudaMalloc with a free-all-and-
retry, and `OutOfMemoryError` with CuPy's message.
"""
from __future__ import annotations

import bisect
import ctypes
import gc
import mmap
import threading
import weakref

from cupy import _standin
from cupy.cuda import _queue, runtime

ALLOCATION_UNIT_SIZE = 512  # memory.pyx

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_NORESERVE = 0x4000
_MAP_FAILED = ctypes.c_void_p(-1).value

_lock = threading.RLock()
_allocated: dict = {}  # device -> bytes cudaMalloc'd
_live: dict = {}  # device -> sorted [(ptr, size)] of live Memory blocks


class OutOfMemoryError(MemoryError):
    # memory.pyx: OutOfMemoryError(size, total, limit) and its message
    def __init__(self, size, total, limit=0):
        self._size, self._total, self._limit = size, total, limit
        if limit == 0:
            msg = f"Out of memory allocating {size:,} bytes"
            if total != -1:
                msg += f" (allocated so far: {total:,} bytes)."
        else:
            msg = (f"Out of memory allocating {size:,} bytes "
                   f"(allocated so far: {total:,} bytes, limit set to: {limit:,} bytes).")
        super().__init__(msg)

    def __reduce__(self):
        return (type(self), (self._size, self._total, self._limit))


def allocated_on(device: int) -> int:
    return _allocated.get(device, 0)


def owner_of(ptr: int, device: int | None = None):
    """(device, base, size) of the live cudaMalloc block holding `ptr`, or None."""
    for dev, blocks in list(_live.items()):
        if device is not None and dev != device:
            continue
        i = bisect.bisect_right(blocks, (ptr, float("inf"))) - 1
        if i >= 0 and blocks[i][0] <= ptr < blocks[i][0] + max(blocks[i][1], 1):
            return dev, blocks[i][0], blocks[i][1]
    return None


class Memory:
    """One cudaMalloc of `size` bytes on the current device (memory.pyx: Memory)."""

    def __init__(self, size: int):
        self.size = int(size)
        self.device_id = runtime.getDevice()
        self.ptr = 0
        if self.size <= 0:
            return
        runtime.check_sticky(self.device_id)
        with _lock:
            if allocated_on(self.device_id) + self.size > _standin.device_memory():
                raise runtime.CUDARuntimeError(runtime.errorMemoryAllocation)
            length = -(-self.size // mmap.PAGESIZE) * mmap.PAGESIZE
            addr = _libc.mmap(None, length, mmap.PROT_READ | mmap.PROT_WRITE,
                              mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
            if addr in (None, _MAP_FAILED):
                raise runtime.CUDARuntimeError(runtime.errorMemoryAllocation)
            self.ptr, self._length = addr, length
            _allocated[self.device_id] = allocated_on(self.device_id) + self.size
            bisect.insort(_live.setdefault(self.device_id, []), (addr, self.size))

    def free(self) -> None:
        if not self.ptr:
            return
        _queue.flush_device(self.device_id)  # cudaFree synchronises the device
        with _lock:
            _live[self.device_id].remove((self.ptr, self.size))
            _allocated[self.device_id] -= self.size
            _libc.munmap(self.ptr, self._length)
            self.ptr = 0

    def __del__(self):
        try:
            self.free()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class UnownedMemory:
    """Memory someone else owns (memory.pyx: UnownedMemory); `owner` keeps it alive."""

    def __init__(self, ptr: int, size: int, owner, device_id: int = -1):
        self.ptr, self.size, self._owner = int(ptr), int(size), owner
        self.device_id = runtime.getDevice() if device_id < 0 else device_id


class MemoryPointer:
    """A pointer into `mem` at byte `offset` (memory.pyx: MemoryPointer)."""

    __slots__ = ("mem", "ptr", "device_id", "_offset")

    def __init__(self, mem, offset: int):
        self.mem, self._offset = mem, int(offset)
        self.ptr = mem.ptr + self._offset if mem.ptr else 0
        self.device_id = mem.device_id

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self._offset + int(offset))

    def __int__(self):
        return self.ptr

    def __repr__(self):
        return f"<MemoryPointer 0x{self.ptr:x} device={self.device_id}>"


# ---- the pool ---------------------------------------------------------------------------------

class _Chunk:
    """Part of a cudaMalloc block (memory.pyx: _Chunk)."""

    __slots__ = ("mem", "offset", "size", "arena", "prev", "next")

    def __init__(self, mem, offset, size, arena):
        self.mem, self.offset, self.size, self.arena = mem, offset, size, arena
        self.prev = self.next = None

    @property
    def ptr(self):
        return self.mem.ptr + self.offset

    def split(self, size):
        if self.size <= size:
            return None
        rest = _Chunk(self.mem, self.offset + size, self.size - size, self.arena)
        self.size = size
        rest.next, self.next = self.next, rest
        if rest.next is not None:
            rest.next.prev = rest
        rest.prev = self
        return rest

    def merge_next(self):
        nxt = self.next
        self.size += nxt.size
        self.next = nxt.next
        if self.next is not None:
            self.next.prev = self


class _Arena:
    """Free chunks of one stream, ordered by (size, address) (memory.pyx: _Arena)."""

    def __init__(self):
        self.index: list = []  # sorted (size, ptr, id) keys
        self.chunks: dict = {}  # key -> chunk

    @staticmethod
    def _key(chunk):
        return (chunk.size, chunk.ptr, id(chunk))

    def insert(self, chunk, merge=True):
        if merge:
            while chunk.next is not None and self.remove(chunk.next):
                chunk.merge_next()
            while chunk.prev is not None and self.remove(chunk.prev):
                chunk = chunk.prev
                chunk.merge_next()
        key = self._key(chunk)
        bisect.insort(self.index, key)
        self.chunks[key] = chunk

    def remove(self, chunk) -> bool:
        key = self._key(chunk)
        if key not in self.chunks:
            return False
        self.index.remove(key)
        del self.chunks[key]
        return True

    def get(self, size):
        i = bisect.bisect_left(self.index, (size, -1, -1))
        if i == len(self.index):
            return None
        key = self.index.pop(i)
        chunk = self.chunks.pop(key)
        rest = chunk.split(size)
        if rest is not None:
            self.insert(rest, merge=False)
        return chunk

    def free_all(self) -> int:
        freed = 0
        for key in list(self.index):
            chunk = self.chunks[key]
            if chunk.next is None and chunk.prev is None:
                self.remove(chunk)
                chunk.mem.free()
                freed += chunk.size
        return freed


class PooledMemory:
    """A chunk handed out by the pool; it goes back to its arena when this dies."""

    def __init__(self, chunk, pool):
        self.chunk, self._pool = chunk, weakref.ref(pool)
        self.ptr, self.size, self.device_id = chunk.ptr, chunk.size, chunk.mem.device_id

    def free(self):
        pool = self._pool()
        if pool is not None and self.chunk is not None:
            pool._free(self.chunk)
        self.chunk = None

    def __del__(self):
        try:
            self.free()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _round_size(size: int) -> int:
    # memory.pyx: _round_size rounds up to ALLOCATION_UNIT_SIZE
    return -(-int(size) // ALLOCATION_UNIT_SIZE) * ALLOCATION_UNIT_SIZE


def _stream_ident() -> int:
    from cupy.cuda import stream
    return stream.get_current_stream().ptr


class SingleDeviceMemoryPool:
    """The pool of one device (memory.pyx: SingleDeviceMemoryPool)."""

    def __init__(self, device_id: int):
        self._device_id = device_id
        self._arenas: dict = {}  # stream ptr -> _Arena
        self._total = 0
        self._in_use = 0
        self._limit = 0
        self._lock = threading.RLock()

    def malloc(self, size: int) -> MemoryPointer:
        size = _round_size(size)
        if size == 0:
            return MemoryPointer(Memory(0), 0)
        runtime.check_sticky(self._device_id)
        with self._lock:
            arena = self._arenas.setdefault(_stream_ident(), _Arena())
            chunk = arena.get(size)
            if chunk is None:
                chunk = _Chunk(self._try_malloc(size), 0, size, arena)
            self._in_use += chunk.size
        return MemoryPointer(PooledMemory(chunk, self), 0)

    def _free(self, chunk):
        with self._lock:
            self._in_use -= chunk.size
            chunk.arena.insert(chunk)

    def _try_block(self, size) -> bool:
        limit = self._limit or 2**64 - 1
        if size > limit:
            raise OutOfMemoryError(size, self._total, limit)
        if self._total <= limit - size:
            self._total += size
            return True
        return False

    def _try_malloc(self, size):
        # memory.pyx: _try_malloc - limit check, free_all_blocks, gc, retry; then cudaMalloc
        # with the same retries when the device itself is out of memory.
        ok = self._try_block(size)
        if not ok:
            self.free_all_blocks()
            ok = self._try_block(size)
        if not ok:
            gc.collect()
            self.free_all_blocks()
            ok = self._try_block(size)
        if not ok:
            raise OutOfMemoryError(size, self._total, self._limit)
        for attempt in range(3):
            try:
                return Memory(size)
            except runtime.CUDARuntimeError as e:
                if e.status != runtime.errorMemoryAllocation:
                    self._total -= size
                    raise
                if attempt == 1:
                    gc.collect()
                self.free_all_blocks()
        self._total -= size
        raise OutOfMemoryError(size, self._total, self._limit)

    def free_all_blocks(self, stream=None):
        with self._lock:
            arenas = (self._arenas.values() if stream is None
                      else [a for k, a in self._arenas.items() if k == stream.ptr])
            freed = sum(a.free_all() for a in list(arenas))
            self._total -= freed

    def n_free_blocks(self) -> int:
        return sum(len(a.index) for a in self._arenas.values())

    def used_bytes(self) -> int:
        return self._in_use

    def free_bytes(self) -> int:
        return self._total - self._in_use

    def total_bytes(self) -> int:
        return self._total

    def set_limit(self, size=None, fraction=None):
        # memory.pyx: set_limit
        if size is None:
            if fraction is None:
                size = 0
            else:
                if not 0 <= fraction <= 1:
                    raise ValueError(f"memory limit fraction out of range: {fraction}")
                _, total = runtime.memGetInfo()
                size = fraction * total
            return self.set_limit(size=size)
        if fraction is not None:
            raise ValueError("size and fraction cannot be specified at one time")
        if size < 0:
            raise ValueError(f"memory limit size out of range: {size}")
        self._limit = int(size)

    def get_limit(self) -> int:
        return self._limit


class MemoryPool:
    """Pools for all devices; each call acts on the current device's (memory.pyx)."""

    def __init__(self, allocator=None):
        self._pools: dict = {}

    def _pool(self) -> SingleDeviceMemoryPool:
        dev = runtime.getDevice()
        pool = self._pools.get(dev)
        if pool is None:
            pool = self._pools.setdefault(dev, SingleDeviceMemoryPool(dev))
        return pool

    def malloc(self, size):
        return self._pool().malloc(size)

    def free_all_blocks(self, stream=None):
        return self._pool().free_all_blocks(stream)

    def n_free_blocks(self):
        return self._pool().n_free_blocks()

    def used_bytes(self):
        return self._pool().used_bytes()

    def free_bytes(self):
        return self._pool().free_bytes()

    def total_bytes(self):
        return self._pool().total_bytes()

    def set_limit(self, size=None, fraction=None):
        return self._pool().set_limit(size, fraction)

    def get_limit(self):
        return self._pool().get_limit()


_default_pool = MemoryPool()


def get_default_memory_pool() -> MemoryPool:
    return _default_pool


_allocator = _default_pool.malloc  # memory.pyx: _current_allocator, the default pool's malloc
_thread_local = threading.local()


def get_allocator():
    """memory.pyx: get_allocator - this thread's allocator (using_allocator), else the global one."""
    return getattr(_thread_local, "allocator", None) or _allocator


def set_allocator(allocator=None):
    """memory.pyx: set_allocator - None disables pooling (every allocation a cudaMalloc)."""
    global _allocator
    _allocator = allocator if allocator is not None else _malloc


class using_allocator:  # noqa: N801 - CuPy's name (memory.pyx: a context manager)
    """Use `allocator` in this thread inside the block (None: no pool), then restore."""

    def __init__(self, allocator=None):
        self._allocator = allocator if allocator is not None else _malloc

    def __enter__(self):
        self._saved = getattr(_thread_local, "allocator", None)
        _thread_local.allocator = self._allocator

    def __exit__(self, *exc):
        _thread_local.allocator = self._saved


def _malloc(size: int) -> MemoryPointer:
    """memory.pyx: _malloc - one cudaMalloc of `size` bytes, no pool."""
    mem = Memory(size)
    return MemoryPointer(mem, 0)


def alloc(size: int) -> MemoryPointer:
    """memory.pyx: alloc - through the current allocator (the default pool unless changed)."""
    return get_allocator()(size)
