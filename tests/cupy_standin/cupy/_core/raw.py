"""RawModule and RawKernel (copies cupy/_core/raw.pyx and the option handling of
cupy/_core/core.pyx compile_with_cache and cupy/cuda/compiler.py _compile_with_cache_cuda).

Compilation is lazy (at the first get_function or call), per device. CuPy's options are the
caller's plus `--std=c++17` when no standard is given, then `-ftz=true` (appended after the
caller's, so it wins over an earlier `--ftz=false`), then `-arch=sm_XX` for the device.
"""
from __future__ import annotations

from cupy.cuda import compiler, function, runtime


def _std_given(options) -> bool:
    return any(o.startswith(("-std", "--std")) for o in options)


def _options(options: tuple, arch: str) -> tuple:
    options = tuple(options)
    if not _std_given(options):
        options += ("--std=c++17",)
    return options + ("-ftz=true", f"-arch=sm_{arch}")


def _flushes_denormals(options: tuple) -> bool:
    ftz = [o.split("=", 1)[1] for o in options if o.lstrip("-").startswith("ftz=")]
    return bool(ftz) and ftz[-1] == "true"


class RawModule:
    """raw.pyx: RawModule(*, code=None, path=None, options=(), backend='nvrtc', ...)."""

    def __init__(self, *, code=None, path=None, options=(), backend="nvrtc",
                 translate_cucomplex=False, enable_cooperative_groups=False,
                 name_expressions=None, jitify=None):
        if not isinstance(options, tuple):
            raise TypeError(f"Argument 'options' has incorrect type (expected tuple, got "
                            f"{type(options).__name__})")
        if (code is None) == (path is None):
            raise TypeError("Exactly one of `code` and `path` keyword arguments must be given.")
        if path is not None:
            raise NotImplementedError("the CuPy stand-in compiles CUDA source only (code=...)")
        if backend != "nvrtc":
            raise NotImplementedError("the CuPy stand-in compiles with NVRTC only")
        self.code, self.options, self.backend = code, options, backend
        self._modules: dict = {}  # device -> compiled module

    def _compiled(self):
        from cupy.cuda.device import Device
        dev = runtime.getDevice()
        hit = self._modules.get(dev)
        if hit is None:
            opts = _options(self.options, Device(dev).compute_capability)
            hit = self._modules[dev] = (compiler._compile(self.code, opts), opts)
        return hit

    def compile(self, log_stream=None):
        self._compiled()

    def get_function(self, name):
        compiled, opts = self._compiled()
        return function.Function(self.code, name, compiled, _flushes_denormals(opts))


class RawKernel:
    """raw.pyx: RawKernel(code, name, options=(), backend='nvrtc', ...)."""

    def __init__(self, code, name, options=(), backend="nvrtc", *, translate_cucomplex=False,
                 enable_cooperative_groups=False, jitify=None):
        self.code, self.name, self.options, self.backend = code, name, options, backend
        self._module = RawModule(code=code, options=options, backend=backend)
        self._functions: dict = {}

    @property
    def kernel(self):
        dev = runtime.getDevice()
        fn = self._functions.get(dev)
        if fn is None:
            fn = self._functions[dev] = self._module.get_function(self.name)
        return fn

    def compile(self, log_stream=None):
        return self.kernel

    def __call__(self, grid, block, args, **kwargs):
        self.kernel(grid, block, args, **kwargs)

    @property
    def attributes(self) -> dict:
        k = self.kernel
        return {"num_regs": k.registers, "shared_size_bytes": k.static_smem,
                "max_threads_per_block": 1024}
