"""HLO text of lowered functions (`compiler_ir(dialect="hlo").as_hlo_text()`,
`as_text(dialect="hlo")`), compared with the text JAX 0.10.2 prints for the same programs."""
import re

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr import jit_api

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def both(make):
    """(gpuarr's HLO text, JAX's) of `make(jit, numpy_module)` lowered at its arguments."""
    f, args = make(gnp)
    jf, jargs = make(jnp)
    return (gpuarr.jit(f).lower(*args).as_text(dialect="hlo"),
            jax.jit(jf).lower(*jargs).as_text(dialect="hlo"))


f32 = np.float32


def lax_of(np_):
    return gpuarr.lax if np_ is gnp else jax.lax

# Programs whose text equals JAX's character for character.
SAME_TEXT = {
    "mul": lambda np_: (lambda x: x * x, (f32(3.0),)),
    "square": lambda np_: (np_.square, (np.ones(2, f32),)),
    "pow2": lambda np_: (lambda x: x ** 2, (np.ones(2, f32),)),
    "int_mul": lambda np_: (lambda x: x * x, (3,)),
    "unary_chain": lambda np_: (lambda x: np_.exp(np_.tanh(x)) / np_.sqrt(x), (np.ones(3, f32),)),
    "scalar_broadcast": lambda np_: (lambda x: np_.sin(x) + 1.0, (np.ones(2, f32),)),
    "dot": lambda np_: (lambda a, b: a @ b, (np.ones((2, 3), f32), np.ones((3, 4), f32))),
    "relayout": lambda np_: (lambda x: x.astype(np_.int32).T.reshape(6), (np.ones((2, 3), f32),)),
    "strided_slice": lambda np_: (lambda x: x[1:3, ::2], (np.ones((4, 5), f32),)),
    "returns_an_argument": lambda np_: (lambda x, y: x, (1.0, 2)),
    "pytree_argument": lambda np_: (lambda d: (d["w"] + 1.5, d["w"]), ({"w": np.ones(2, f32)},)),
}

# Programs with the same instructions (opcode, shape, operands, attributes) as JAX's, where
# JAX's lowering numbers its instructions differently.
SAME_STRUCTURE = {
    "cube": lambda np_: (lambda x: x ** 3, (np.ones(3, f32),)),
    "pow5": lambda np_: (lambda x: x ** 5, (np.ones(3, f32),)),
    "sum_and_tuple": lambda np_: (lambda x, y: (x * 2.0 + y, np_.sum(x)),
                                  (np.ones(3, f32), np.ones(3, f32))),
    "max_over_axis": lambda np_: (lambda x: np_.max(x, axis=1), (np.ones((2, 3), f32),)),
    "int_reduce_compare": lambda np_: (lambda x: np_.sum(x, axis=0).astype(np_.int8) < 3,
                                       (np.ones((2, 3), np.int32),)),
    "abs_sq_complex": lambda np_: (lambda x: (x.conj() * x).real, (np.array([1 + 1j], np.complex64),)),
    "select": lambda np_: (lambda x: lax_of(np_).select(x > 0, x, x * 2.0), (np.ones(3, f32),)),
    "concatenate": lambda np_: (lambda x: np_.concatenate([x, -x], axis=1), (np.ones((2, 3), f32),)),
}


def normalized(text: str) -> str:
    """The text with every instruction and computation name replaced by its first position."""
    names = {}
    for name in re.findall(r"([A-Za-z_][\w.-]*\.\d+)\b", text):
        names.setdefault(name, f"v{len(names)}")
    return re.sub(r"([A-Za-z_][\w.-]*\.\d+)\b", lambda m: names[m.group(1)], text)


@pytest.mark.parametrize("name", sorted(SAME_TEXT))
def test_the_hlo_text_is_jax_s(name):
    ours, theirs = both(SAME_TEXT[name])
    assert ours == theirs


@pytest.mark.parametrize("name", sorted(SAME_STRUCTURE))
def test_the_hlo_instructions_are_jax_s(name):
    ours, theirs = both(SAME_STRUCTURE[name])
    assert normalized(ours) == normalized(theirs)


def hlo_repr(jit, f, x):
    """What optax's NumericsTest compares: the entry computation, its name and root's left out."""
    text = jit(f).lower(x).compiler_ir(dialect="hlo").as_hlo_text()
    text = re.search(r"ENTRY.*", text, re.DOTALL).group()
    text = re.sub("ENTRY.*?{", "ENTRY XXXX", text)
    return re.sub("ROOT.*?=", "ROOT result.2 =", text)


@pytest.mark.parametrize("x", [3, 3.0, np.array([4, 5.2]), 1j, 3.0 + 1j, np.array([4 + 1j, 5.2 + 1j])])
def test_square_mul_and_pow_lower_to_abs_sq_s_multiply_as_in_xla(x):
    # optax.abs_sq is (x.conj() * x).real: for real x the same `multiply` as x * x, square(x)
    # and x ** 2; for complex x a different program.
    for jit, np_ in ((gpuarr.jit, gnp), (jax.jit, jnp)):
        abs_sq = hlo_repr(jit, lambda x: (x.conj() * x).real, x)
        for sq in (lambda x: x ** 2, lambda x: x * x, np_.square):
            if np.iscomplexobj(x):
                assert hlo_repr(jit, sq, x) != abs_sq
            else:
                assert hlo_repr(jit, sq, x) == abs_sq
                assert "multiply(x.1, x.1)" in abs_sq


def test_a_primitive_without_a_lowering_is_a_custom_call_named_after_it():
    x = np.arange(6, dtype=f32).reshape(2, 3)
    text = gpuarr.jit(lambda x: (gnp.cumsum(x, axis=1), gnp.sort(x))).lower(x).as_text("hlo")
    assert re.search(r"cumsum\.\d+ = f32\[2,3\]\{1,0\} custom-call\([\w.]+\), "
                     r'custom_call_target="cumsum"', text)
    # several results: a tuple, then its elements
    assert re.search(r'sort\.1 = \(f32\[2,3\]\{1,0\}\) custom-call\(x\.1\), custom_call_target="sort"',
                     text)
    assert "get-tuple-element.1 = f32[2,3]{1,0} get-tuple-element(sort.1), index=0" in text


def test_a_nested_jit_is_a_call_of_its_computation():
    def make(jit, np_):
        def f(x):
            return jit(lambda y: np_.sin(y) * 2.0)(x) + 1.0
        return jit(f)

    x = np.ones(3, f32)
    with jit_api.config_disable_passes():  # the passes would inline the call
        ours = make(gpuarr.jit, gnp).lower(x).as_text(dialect="hlo")
    theirs = make(jax.jit, jnp).lower(x).as_text(dialect="hlo")
    assert normalized(ours) == normalized(theirs)


def test_the_module_object_and_an_unknown_dialect_as_in_jax():
    x = np.ones(2, f32)
    module = gpuarr.jit(gnp.sin).lower(x).compiler_ir(dialect="hlo")
    assert module.as_hlo_text() == str(module)
    assert module.as_hlo_text().startswith("HloModule jit_sin, entry_computation_layout=")
    # The default dialect stays gpuarr's optimized Program.
    assert "sin" in gpuarr.jit(gnp.sin).lower(x).as_text()
    with pytest.raises(ValueError, match="unknown dialect: mlir"):
        gpuarr.jit(gnp.sin).lower(x).compiler_ir(dialect="mlir")
    with pytest.raises(ValueError, match="unknown dialect: mlir"):
        jax.jit(jnp.sin).lower(x).compiler_ir(dialect="mlir")


@pytest.mark.parametrize("value,dtype,text", [
    (0.1, np.float32, "0.1"), (1e-5, np.float32, "1e-05"), (2.0, np.float64, "2"),
    (-np.inf, np.float32, "-inf"), (1 + 2j, np.complex64, "(1, 2)"), (True, np.bool_, "true"),
    (-7, np.int8, "-7")])
def test_constants_are_printed_as_xla_prints_them(value, dtype, text):
    from gpuarr.compiler.hlo_text import _scalar_text
    assert _scalar_text(value, dtype) == text
