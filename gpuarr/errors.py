"""Exception classes with JAX's names and base classes; messages say what to do."""
from __future__ import annotations

_DOCS = "https://docs.jax.dev/en/latest/errors.html"


class JAXTypeError(TypeError):
    """Base class of the TypeErrors raised for misuse of traced values (JAX's name)."""


class JAXIndexError(IndexError):
    """Base class of the IndexErrors raised for indexing with traced values (JAX's name)."""


class JaxRuntimeError(RuntimeError):
    """An error raised while running a compiled or eager computation (JAX's name)."""


class JaxprTypeError(TypeError):
    """A staged program failed its type check: an equation's inputs or outputs do not have
    the types its primitive requires (JAX's name)."""


class GpuarrTypeError(JAXTypeError):
    pass


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""

    def __init__(self, tracer=None, context: str = ""):
        self.tracer = tracer
        super().__init__(_headline(self, tracer) + context + _advice(self))


class TracerBoolConversionError(ConcretizationTypeError):
    """`bool()` (an `if`, `while`, `and`/`or`) was called on a traced value."""


class TracerIntegerConversionError(ConcretizationTypeError, JAXTypeError):
    """`int()`/`__index__` was called on a traced value."""


class TracerArrayConversionError(JAXTypeError):
    """`numpy.asarray` (or `__array__`) was called on a traced value."""

    def __init__(self, tracer=None):
        self.tracer = tracer
        super().__init__(
            f"The numpy.ndarray conversion method __array__() was called on {_traced(tracer)}\n"
            "This happens when a traced value is passed to a NumPy function under jit, grad or vmap. "
            "Use the gpuarr.numpy function of the same name instead of the numpy one, or move the "
            "NumPy call outside the transformed function (use gpuarr.pure_callback for host code)."
            f"\nSee {_DOCS}#jax.errors.TracerArrayConversionError"
        )


class NonConcreteBooleanIndexError(JAXIndexError):
    """Boolean-mask indexing needs a concrete mask: its result shape depends on the values."""

    def __init__(self, tracer=None):
        self.tracer = tracer
        super().__init__(
            f"Array boolean indices must be concrete; got {_type(tracer)}\n"
            "The size of the result of boolean indexing depends on the values of the mask, which are "
            "not known under jit. Use jnp.where(mask, x, fill) to keep the shape static, or pass "
            "size= to jnp.nonzero/jnp.where."
            f"\nSee {_DOCS}#jax.errors.NonConcreteBooleanIndexError"
        )


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the transformation that created it and was used later."""

    def __init__(self, msg: str):
        super().__init__(msg + f"\nSee {_DOCS}#jax.errors.UnexpectedTracerError")


class KeyReuseError(JAXTypeError):
    """A random key was used twice where key-reuse checking is on (JAX's name)."""


def _type(tracer) -> str:
    """A traced value's type as JAX's messages write it: float32[2,3]."""
    aval = getattr(tracer, "aval", None)
    if aval is None:
        return repr(tracer)
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def _traced(tracer) -> str:
    return f"traced array with shape {_type(tracer)}"


def _headline(err, tracer) -> str:
    aval = getattr(tracer, "aval", None)
    if aval is None:
        return "Abstract tracer value encountered where concrete value is expected.\n"
    if isinstance(err, TracerBoolConversionError):
        return f"Attempted boolean conversion of {_traced(tracer)}.\n"
    if isinstance(err, TracerIntegerConversionError):
        return f"The __index__() method was called on {_traced(tracer)}\n"
    return f"Abstract tracer value encountered where concrete value is expected: {_traced(tracer)}\n"


def _advice(err: ConcretizationTypeError) -> str:
    if isinstance(err, TracerBoolConversionError):
        what = ("The problem arose with the `bool` function. Python control flow (`if`, `while`, "
                "`and`, `or`) on a traced value needs its concrete value. Use lax.cond or "
                "lax.while_loop (or jnp.where) for control flow on traced values, or mark the "
                "argument static with static_argnums/static_argnames.")
    elif isinstance(err, TracerIntegerConversionError):
        what = ("The problem arose with the `__index__` function. Mark the argument static "
                "with static_argnums/static_argnames, or use lax.dynamic_slice for traced indices.")
    else:
        what = ("Mark the argument static with static_argnums/static_argnames if its value is "
                "needed at trace time.")
    return f"\n{what}\nSee {_DOCS}#jax.errors.{type(err).__name__}"


class InconclusiveDimensionOperation(Exception):
    """A comparison or arithmetic on symbolic dimensions whose result depends on their values
    (raised by shape-polymorphic tracing, which gpuarr's jit does not do: every dimension it
    sees is a concrete int)."""

