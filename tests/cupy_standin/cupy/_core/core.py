"""`cupy.ndarray` (copies cupy/_core/core.pyx): an array of device memory with shape, strides
and a byte offset into its allocation. Basic indexing, transposes, reshapes that need no copy
and dtype views share memory; everything that computes is queued through `_device_op.apply`.
There is no implicit conversion to NumPy (`__array__` raises); `.get()` copies to the host.
"""
from __future__ import annotations

import operator

import numpy as np

from cupy import _standin
from cupy._core import _device_op
from cupy.cuda import _queue, memory
from cupy.cuda import stream as stream_mod
from cupy.cuda.device import Device


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(operator.index(s)) for s in shape)


def _contiguous_strides(shape, itemsize, order="C") -> tuple:
    strides, acc = [], itemsize
    dims = reversed(shape) if order == "C" else shape
    for n in dims:
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides)) if order == "C" else tuple(strides)


class _Flags:
    """ndarray.flags (core.pyx: flags.c_contiguous, f_contiguous, owndata)."""

    def __init__(self, c, f, own):
        self.c_contiguous, self.f_contiguous, self.owndata = c, f, own

    def __getitem__(self, name):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]

    def __repr__(self):
        return (f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}\n"
                f"  OWNDATA : {self.owndata}")


def _is_basic_index(key) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer))
               and not isinstance(p, (bool, np.bool_)) for p in parts)


class ndarray:  # noqa: N801 - CuPy's name
    """A CuPy array (core.pyx: ndarray(shape, dtype=float, memptr=None, strides=None,
    order='C'))."""

    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        self._shape = _shape_tuple(shape)
        self.dtype = np.dtype(dtype)
        size = 1
        for n in self._shape:
            size *= n
        if memptr is None:
            memptr = memory.alloc(size * self.dtype.itemsize)
        self.data = memptr
        self._strides = (tuple(strides) if strides is not None
                         else _contiguous_strides(self._shape, self.dtype.itemsize, order))
        self.base = None

    @classmethod
    def _view_of(cls, base, memptr, shape, strides, dtype):
        v = cls.__new__(cls)
        v._shape, v._strides, v.dtype, v.data = tuple(shape), tuple(strides), np.dtype(dtype), memptr
        v.base = base if base.base is None else base.base
        return v

    # ---- attributes
    shape = property(lambda self: self._shape)
    strides = property(lambda self: self._strides)
    ndim = property(lambda self: len(self._shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    size = property(lambda self: int(np.prod(self._shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    device = property(lambda self: Device(self.data.device_id))
    T = property(lambda self: self.transpose())

    @shape.setter
    def shape(self, value):
        self._set_geometry(self.reshape(value))

    def _set_geometry(self, other):
        self._shape, self._strides, self.data = other._shape, other._strides, other.data

    @property
    def flags(self) -> _Flags:
        # core.pyx (_update_contiguity) reads shape, strides and itemsize only: probed with a
        # void type of the same size, which NumPy's array interface takes for any dtype
        # (ml_dtypes' float8 types have none it can parse)
        probe = np.lib.stride_tricks.as_strided(np.empty(1, np.dtype((np.void, self.itemsize))),
                                                self._shape, self._strides)
        return _Flags(bool(probe.flags.c_contiguous), bool(probe.flags.f_contiguous),
                      self.base is None)

    @property
    def real(self) -> ndarray:
        # core.pyx (_real_getter): a strided view of a complex array, the array itself otherwise
        return self._derive(lambda h: h.real) if self.dtype.kind == "c" else self

    @property
    def imag(self) -> ndarray:
        # core.pyx (_imag_getter): a strided view of a complex array; for any other, a new
        # array of zeros of its shape and dtype
        if self.dtype.kind == "c":
            return self._derive(lambda h: h.imag)
        from cupy._creation import zeros
        return zeros(self._shape, self.dtype)

    def _geometry(self) -> _device_op.Geometry:
        return _device_op.Geometry(self.data.ptr, self._shape, self._strides, self.dtype)

    def _derive(self, fn) -> ndarray:
        """A view given by applying NumPy view function `fn` to this array's geometry."""
        if self.size == 0:
            probe = np.empty(self._shape, self.dtype)
            r = fn(probe)
            return ndarray._view_of(self, self.data, r.shape, r.strides, r.dtype)
        hv = self._geometry().view()
        r = fn(hv)
        if not isinstance(r, np.ndarray) or r.base is None:
            raise AssertionError("not a view")  # callers only pass view functions
        offset = r.__array_interface__["data"][0] - self.data.ptr
        return ndarray._view_of(self, self.data + offset, r.shape, r.strides, r.dtype)

    def __repr__(self):
        return f"<cupy stand-in ndarray shape={self._shape} dtype={self.dtype}>"

    # ---- no implicit host conversion
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of unsized object")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._shape[0]))

    # core.pyx: __int__ = int(self.get()), likewise float, complex, bool, index (synchronising)
    def __int__(self):
        return int(self.get())

    def __float__(self):
        return float(self.get())

    def __complex__(self):
        return complex(self.get())

    def __bool__(self):
        return bool(self.get())

    def __index__(self):
        return operator.index(self.get())

    # ---- host transfers
    def get(self, stream=None, order="C", out=None, blocking=True):
        """Copy to the host on `stream` (default: current); core.pyx: ndarray.get."""
        s = stream_mod.get_current_stream() if stream is None else stream
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError("Only numpy.ndarray can be obtained from cupy.ndarray")
            if out.shape != self._shape or out.dtype != self.dtype:
                raise ValueError("Shape mismatch or dtype mismatch")
            host = out
        else:
            host = np.empty(self._shape, self.dtype, order="F" if order == "F" else "C")
        geom = self._geometry()
        _standin.counters.transfer("d2h", self.nbytes)
        from cupy.cuda import runtime
        runtime.check_sticky(self.data.device_id)
        if self.size:
            _queue.submit(lambda: np.copyto(host, geom.view()), s._queue())
        if blocking:
            s.synchronize()
        return host

    def set(self, arr, stream=None):
        """Copy host `arr` in (core.pyx: ndarray.set); the host data is read now, as
        cudaMemcpyAsync from pageable memory stages it before returning."""
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray: {type(arr)}")
        if arr.shape != self._shape:
            raise ValueError(f"Shape mismatch. Old shape: {self._shape}, new shape: {arr.shape}")
        if arr.dtype != self.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        s = stream_mod.get_current_stream() if stream is None else stream
        staged = np.array(arr, copy=True)
        geom = self._geometry()
        from cupy.cuda import runtime
        runtime.check_sticky(self.data.device_id)
        _standin.counters.transfer("h2d", arr.nbytes)
        if self.size:
            _queue.submit(lambda: np.copyto(geom.view(), staged), s._queue())

    # ---- views and copies
    def view(self, dtype=None):
        if dtype is None:
            return self._derive(lambda a: a.view())
        return self._derive(lambda a: a.view(np.dtype(dtype)))

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        return self._derive(lambda a: a.transpose(*axes) if axes else a.transpose())

    def swapaxes(self, a1, a2):
        return self._derive(lambda a: a.swapaxes(a1, a2))

    def reshape(self, *shape, order="C"):
        """A view when the strides allow one (NumPy's rule), else a copy (core.pyx)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        try:
            return self._derive(lambda a: np.reshape(a, shape, order=order, copy=False))
        except ValueError as e:
            if "copy" not in str(e):
                raise
        return self.copy(order=order)._derive(lambda a: np.reshape(a, shape, order=order, copy=False))

    def ravel(self, order="C"):
        return self.reshape(-1, order=order)

    def flatten(self, order="C"):
        return self.copy(order=order).reshape(-1, order=order)

    def squeeze(self, axis=None):
        return self._derive(lambda a: a.squeeze(axis))

    def copy(self, order="C"):
        order = "F" if order == "F" or (order in ("A", "K") and self.flags.f_contiguous
                                         and not self.flags.c_contiguous) else "C"
        out = ndarray(self._shape, self.dtype, order=order)
        _device_op.apply(np.copy, (self,), out=out)
        return out

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        out = ndarray(self._shape, dtype)
        _device_op.apply(np.copy, (self,), out=out)
        return out

    def fill(self, value):
        # core.pyx: fill refuses non-scalar host arrays
        if isinstance(value, np.ndarray):
            if value.shape != ():
                raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
            value = value.item()
        if isinstance(value, ndarray):
            raise TypeError("fill value must be a scalar")
        geom = self._geometry()
        if self.size:
            _queue.submit(lambda: geom.view().fill(value))

    # ---- indexing
    def __getitem__(self, key):
        if _is_basic_index(key):
            parts = key if isinstance(key, tuple) else (key,)
            if Ellipsis not in parts:
                parts += (Ellipsis,)  # integers alone would give NumPy a scalar, not a 0-d view
            return self._derive(lambda a: a[parts])
        arrays = [k for k in (key if isinstance(key, tuple) else (key,)) if isinstance(k, ndarray)]
        if any(k.dtype == np.bool_ for k in arrays):
            raise NotImplementedError("boolean mask indexing (data-dependent shape) is not "
                                      "simulated by the stand-in")
        return _device_op.apply(lambda a, k: a[k], (self, _host_key(key)))

    def __setitem__(self, key, value):
        # _routines_indexing.pyx: _scatter_op(..., 'update')
        if _is_basic_index(key):
            target = self[key]
            if isinstance(value, ndarray):
                _device_op.apply(lambda t, v: np.copyto(t, v, casting="unsafe"), (target, value),
                                 avals=[])
            else:
                target.fill(value)
            return
        if isinstance(value, np.ndarray):
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")

        def put(a, k, v):
            a[k] = v
        _device_op.apply(put, (self, _host_key(key), value), avals=[])

    # ---- reductions (0-d results stay on the device)
    def _reduce(self, fn, axis=None, dtype=None, out=None, keepdims=False):
        kw = {"axis": axis, "keepdims": keepdims}
        if dtype is not None:
            kw["dtype"] = dtype
        return _device_op.apply(fn, (self,), kw, out=out)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return self._reduce(np.sum, axis, dtype, out, keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return self._reduce(np.prod, axis, dtype, out, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return self._reduce(np.mean, axis, dtype, out, keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return self._reduce(np.max, axis, None, out, keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return self._reduce(np.min, axis, None, out, keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        return self._reduce(np.any, axis, None, out, keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        return self._reduce(np.all, axis, None, out, keepdims)

    def argmax(self, axis=None):
        return _device_op.apply(np.argmax, (self,), {"axis": axis})

    def argmin(self, axis=None):
        return _device_op.apply(np.argmin, (self,), {"axis": axis})

    def item(self):
        return self.get().item()

    def tolist(self):
        return self.get().tolist()

    # ---- interop
    @property
    def __cuda_array_interface__(self) -> dict:
        # core.pyx: version 3; the current stream, never 0 (the legacy stream is 1)
        ptr = stream_mod.get_current_stream_ptr() or stream_mod.get_default_stream_ptr()
        return {"shape": self._shape, "typestr": self.dtype.str, "descr": self.dtype.descr,
                "version": 3, "stream": ptr,
                "strides": None if self.flags.c_contiguous else self._strides,
                "data": (self.data.ptr if self.size else 0, False)}

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from cupy._core import dlpack
        return dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return (2, self.data.device_id)  # kDLCUDA

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from cupy._core import _ufuncs
        return _ufuncs.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from cupy._core import _ufuncs
        return _ufuncs.array_function(func, types, args, kwargs)


def _host_key(key):
    """An index whose device arrays are read at execution time; host index arrays become
    lists (CuPy converts them to device arrays)."""
    parts = key if isinstance(key, tuple) else (key,)
    parts = tuple(p.tolist() if isinstance(p, np.ndarray) else p for p in parts)
    return parts if isinstance(key, tuple) else parts[0]


def _binary(ufunc, reflected=False):
    def op(self, other):
        if not isinstance(other, (ndarray, int, float, complex, bool, np.generic)):
            if isinstance(other, np.ndarray):
                raise TypeError(f"Unsupported type {type(other)}")
            return NotImplemented
        return ufunc(other, self) if reflected else ufunc(self, other)
    return op


def _inplace(ufunc):
    def op(self, other):
        return ufunc(self, other, out=self)
    return op


for _name, _uf in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("truediv", np.true_divide), ("floordiv", np.floor_divide), ("mod", np.remainder),
                   ("pow", np.power), ("and", np.bitwise_and), ("or", np.bitwise_or),
                   ("xor", np.bitwise_xor), ("lshift", np.left_shift), ("rshift", np.right_shift),
                   ("matmul", np.matmul)]:
    setattr(ndarray, f"__{_name}__", _binary(_uf))
    setattr(ndarray, f"__r{_name}__", _binary(_uf, reflected=True))
    setattr(ndarray, f"__i{_name}__", _inplace(_uf))
for _name, _uf in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                   ("gt", np.greater), ("ge", np.greater_equal)]:
    setattr(ndarray, f"__{_name}__", _binary(_uf))
ndarray.__hash__ = None
ndarray.__neg__ = lambda self: np.negative(self)
ndarray.__pos__ = lambda self: np.positive(self)
ndarray.__abs__ = lambda self: np.absolute(self)
ndarray.__invert__ = lambda self: np.invert(self)
