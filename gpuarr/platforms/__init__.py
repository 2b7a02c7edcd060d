"""Platforms: where Programs run. Each platform compiles ClosedPrograms into callables over its
own buffers and runs single primitives eagerly. `Platform.compile` is the one compilation
pipeline: the compiler's optional passes (`optimize`), then the platform's `codegen`.

A platform module defines `make() -> Platform`. `GPUARR_PLATFORMS` / `JAX_PLATFORMS` (or
`config.update("jax_platforms", "cuda,cpu")`) lists platforms in priority order; the first
one that initialises is the default. Without a setting: cuda when usable, else cpu.
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable

from gpuarr import memory_limits
from gpuarr.config import config

_MODULES = {
    "cpu": "gpuarr.platforms.cpu",
    "opencl": "gpuarr.platforms.opencl",
    "cuda": "gpuarr.platforms.cuda",
    "native": "gpuarr.platforms.native",
}
_ALIASES = {"gpu": "cuda", "numpy": "cpu", "pocl": "opencl"}
_loaded: dict[str, object] = {}
_failures: dict[str, str] = {}


class Device:
    """One device of a platform, printed like JAX's (`CpuDevice(id=0)`), and the index of the
    process it belongs to."""

    __slots__ = ("platform", "id", "process_index")
    kind_name = "Device"

    def __init__(self, platform: str, id: int = 0, process_index: int = 0):
        self.platform = platform
        self.id = id
        self.process_index = process_index

    def __repr__(self):
        return f"{self.kind_name}(id={self.id})"

    def __str__(self):
        return f"{self.platform}:{self.id}"

    def __eq__(self, other):
        return isinstance(other, Device) and (self.platform, self.id) == (other.platform, other.id)

    def __hash__(self):
        return hash((self.platform, self.id))

    @property
    def device_kind(self):
        return self.platform


class Platform:
    """What a platform provides; the cpu platform (NumPy backend) is the reference."""

    name = "?"

    @property
    def platform(self) -> str:
        """The platform's name, as a JAX backend's `.platform` (`jax._src.compiler` hooks read it)."""
        return self.name

    def devices(self) -> list[Device]:
        raise NotImplementedError

    def local_devices(self) -> list[Device]:
        """The devices of this process (all of them unless several processes were joined)."""
        return self.devices()

    def compile(self, closed) -> Callable:
        """A callable taking input buffers, returning a tuple of output buffers: `closed`
        through `optimize`, then `codegen`."""
        self.check_memory(closed)
        return self.codegen(self.optimize(closed))

    def memory_bytes(self) -> int:
        """The memory of one device, which no single output buffer may exceed."""
        return memory_limits.host_memory_bytes()

    def check_memory(self, closed) -> None:
        """JAX's RESOURCE_EXHAUSTED error for an output of `closed` larger than the device's
        memory (XLA allocates every output; intermediates it may fuse away)."""
        sizes = [math.prod(a.shape) * a.dtype.itemsize for a in closed.out_avals
                 if hasattr(a, "shape")]
        if sizes:
            memory_limits.check_allocation(max(sizes), self.memory_bytes())

    def optimize(self, closed):
        """`closed` after the compiler's passes (none when `config.enable_passes` is off): the
        program `codegen` is given, which `jit(f).lower(x).as_text()` prints. The platforms
        run `compiler.passes.optimize` (the compiler sits above this module)."""
        raise NotImplementedError

    def codegen(self, closed) -> Callable:
        """The callable of an already optimized ClosedProgram (see `compile`)."""
        raise NotImplementedError

    def apply_primitive(self, prim, buffers, params):
        raise NotImplementedError

    def from_host(self, value, device: Device):
        raise NotImplementedError

    def to_host(self, buffer):
        raise NotImplementedError

    def block_until_ready(self, buffer) -> None:
        return None

    def device_of(self, buffer) -> Device:
        """The device holding `buffer` (platforms with several devices look at the buffer)."""
        return self.local_devices()[0]

    def clear_caches(self) -> None:
        """Drop the programs the platform compiled and keeps itself (eager operations')."""


def clear_caches() -> None:
    """Drop the compiled programs every loaded platform keeps (see `Platform.clear_caches`)."""
    for plat in list(_loaded.values()):
        plat.clear_caches()


def get_platform(name: str) -> Platform:
    """The Platform named `name` (loading it on first use); RuntimeError when unusable."""
    name = _ALIASES.get(name, name)
    plat = _loaded.get(name)
    if plat is not None:
        return plat
    if name not in _MODULES:
        # JAX's wording ("Unknown backend", "failed to initialize"), which libraries match.
        raise RuntimeError(f"Unknown backend {name}: gpuarr's platforms are {', '.join(_MODULES)}")
    if name in _failures:
        raise RuntimeError(_failures[name])
    try:
        plat = importlib.import_module(_MODULES[name]).make()
    except Exception as e:  # noqa: BLE001 - any failure means the platform is unusable
        _failures[name] = f"Backend {name!r} failed to initialize: {e}"
        raise RuntimeError(_failures[name]) from e
    _loaded[name] = plat
    return plat


def platform_order() -> list[str]:
    raw = (config.platforms or "").strip()
    if raw:
        return [_ALIASES.get(p.strip(), p.strip()) for p in raw.split(",") if p.strip()]
    return ["cuda", "cpu"]


_default: list = []


def default_platform() -> Platform:
    """The first platform of `platform_order()` that initialises."""
    if _default:
        return _default[0]
    errors = []
    explicit = bool((config.platforms or "").strip())
    for name in platform_order():
        try:
            plat = get_platform(name)
        except RuntimeError as e:
            errors.append(str(e))
            continue
        _default.append(plat)
        return plat
    if explicit:
        raise RuntimeError("No requested platform could be initialised:\n" + "\n".join(errors))
    plat = get_platform("cpu")
    _default.append(plat)
    return plat


def _reset_default(name, value):
    if name == "platforms":
        _default.clear()


config.add_listener(_reset_default)
