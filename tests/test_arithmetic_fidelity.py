"""XLA's arithmetic on the cpu platform, compared with JAX eagerly and under jit: subnormals
flushed by arithmetic on floats (SPEC S17, docs/arithmetic.md), division by a broadcast
divisor as a multiplication by its reciprocal, and the cases the differential fuzzer
(tests/differential_fuzz.py) found: scalar-type constructors on traced arrays, pad widths as
arrays, dot of bool with integers, integer remainder and floor division by zero, float to
unsigned conversions, NaN through min/max, int32 overflow, weak types, scatters of booleans."""
import warnings

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from differential_fuzz import Program, compare

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.backends import float_env

F32 = np.float32

# name -> (f(np_module), arguments): f builds the function from a jax.numpy-like module.
CASES = {
    "bool_ctor": (lambda L: L.bool_, [np.arange(3, dtype=F32)]),
    "int32_ctor": (lambda L: L.int32, [np.array([1.5, -2.5], F32)]),
    "uint32_ctor": (lambda L: L.uint32, [np.array([1.5, -2.5, 5e9], F32)]),
    "float32_ctor_of_bool": (lambda L: L.float32, [np.array([True, False])]),
    "dot_bool_int32": (lambda L: L.dot, [np.array([True, False, True]), np.array([1, 2, 3], np.int32)]),
    "dot_bool_uint32": (lambda L: L.dot, [np.array([True, False, True]), np.array([1, 2, 3], np.uint32)]),
    "dot_bool_bool": (lambda L: L.dot, [np.array([True, False, True]), np.array([True, True, True])]),
    "int_remainder_by_zero": (lambda L: lambda x, y: x % y,
                              [np.array([5, -5, 7], np.int32), np.array([0, 0, 2], np.int32)]),
    "int_remainder_by_weak_zero": (lambda L: lambda x: x % 0, [np.array([5, -5, 7], np.int32)]),
    "uint_floor_divide_by_zero": (lambda L: lambda x, y: x // y,
                                  [np.array([5, 0, 7], np.uint32), np.array([0, 0, 2], np.uint32)]),
    "int_floor_divide_by_zero": (lambda L: lambda x, y: x // y,
                                 [np.array([5, -5, 0], np.int32), np.zeros(3, np.int32)]),
    "int_floor_divide_by_false": (lambda L: lambda x: x // False, [np.array([5, -5, 0], np.int32)]),
    "float_floor_divide_by_zero": (lambda L: lambda x, y: x // y,
                                   [np.array([5, -5, 0, 3], F32), np.array([0, -0.0, 0, np.inf], F32)]),
    "float_remainder": (lambda L: L.remainder,
                        [np.array([5, -5, 0, 3], F32), np.array([0.0, -0.0, 2, -np.inf], F32)]),
    "float_to_uint32": (lambda L: lambda x: x.astype(L.uint32),
                        [np.array([-1, -1e10, 5e9, np.nan, np.inf, -np.inf, 3.7, 4.2e9], F32)]),
    "float_to_uint8": (lambda L: lambda x: x.astype(L.uint8),
                       [np.array([-1, -1e10, 5e9, np.nan, np.inf, 300, 3.7], F32)]),
    "float_to_int32": (lambda L: lambda x: x.astype(L.int32),
                       [np.array([-1, -1e10, 5e9, np.nan, np.inf, -np.inf, 3.7], F32)]),
    "int32_square_overflows": (lambda L: lambda x: x * x, [np.array([46341, 100000, 2**31 - 1], np.int32)]),
    "int32_weak_product_overflows": (lambda L: lambda x: x * 100000,
                                     [np.array([46341, 100000, 2**31 - 1], np.int32)]),
    "min_max_nan": (lambda L: lambda x, y: L.maximum(L.minimum(x, y), 0.0),
                    [np.array([np.nan, 1, -np.inf, 1e-39], F32),
                     np.array([0, np.nan, -1.4e38, -1e-39], F32)]),
    # float(pred) * a is select(pred, a, 0) in XLA: False times inf or NaN is 0.
    "bool_array_times_inf": (lambda L: L.multiply, [np.array([True, False, False, True]),
                                                    np.array([np.inf, np.inf, np.nan, -2], F32)]),
    "bool_array_operator_product": (lambda L: lambda b, y: L.asarray(b) * y,
                                    [np.array([True, False]), np.array([np.inf, np.nan], F32)]),
    # XLA turns a dot of vectors, or of one-element operands, into a product, where float(pred)
    # * a is then select(pred, a, 0) (the fuzzer, seed 143).
    "dot_of_vector_and_float_bool": (lambda L: lambda a, b: L.dot(a, L.float32(b)),
                                     [np.array([np.inf, 1], F32), np.array([False, True])]),
    "dot_of_one_element_float_bool": (lambda L: lambda a, b: L.dot(
        L.reshape(a, (-1, 1))[:1], L.reshape(L.float32(b), (1, -1))[:, :1]), [F32(np.inf), np.array(False)]),
    "dot_of_one_element_vectors": (lambda L: lambda a, b: L.dot(
        L.reshape(L.float32(b), (-1,))[:1], L.reshape(a, (-1,))[:1]), [F32(np.inf), np.array(False)]),
    "outer_of_float_bool": (lambda L: lambda a, b: L.outer(a, L.float32(b)),
                            [np.array([np.inf, 1], F32), np.array([False, True])]),
    "bool_array_divided_by_false": (lambda L: lambda b: L.true_divide(b, False),
                                    [np.array([True, False, False])]),
    "bool_array_divided_by_zero": (lambda L: lambda b: b / L.float32(0), [np.array([True, False])]),
    "float_times_bool_scalar": (lambda L: lambda y: L.multiply(y, np.bool_(False)),
                                [np.array([np.inf, np.nan, -2], F32)]),
    "float_times_0d_bool": (lambda L: lambda y, b: L.multiply(y, b),
                            [np.array([np.inf, np.nan, -2], F32), np.array(False)]),
    "false_divided_by_array": (lambda L: lambda y: L.true_divide(np.array(False), y),
                               [np.array([np.inf, 0.0, -2], F32)]),
    "weak_where": (lambda L: lambda x: L.where(x > 0, x, 0), [np.array([1, -1], np.int32)]),
    "weak_scalar_argument": (lambda L: lambda x: x * 2, [3.0]),
    "weak_sum": (lambda L: L.sum, [3.0]),
    "pad_numpy_widths": (lambda L: lambda x: L.pad(x, np.array([1, 2])), [np.arange(3.0, dtype=F32)]),
    "gather_fill_uint32": (lambda L: lambda x: x.at[np.array([5, -9, 1])].get(mode="fill"),
                           [np.arange(3, dtype=np.uint32)]),
    "scatter_add_weak_float_into_int": (lambda L: lambda x: x.at[np.array([0, 1])].add(2),
                                        [np.array([3, 4, 5], np.int32)]),
    # Subnormals: flushed by arithmetic, kept by negation and abs (bit operations).
    "subnormal_plus_zero": (lambda L: lambda x: x + L.float32(0), [np.array([1e-39, 1.0], F32)]),
    "subnormal_compared": (lambda L: lambda x: x > 0, [np.array([1e-39, -1e-39, 1.0], F32)]),
    "subnormal_product": (lambda L: lambda x: x * 1.0001, [np.array([1e-39, 1.0], F32)]),
    "subnormal_max": (lambda L: lambda x: L.maximum(x, -1e-39), [np.array([-2e-39, 1, -5], F32)]),
    "subnormal_quotient": (lambda L: lambda x: x / 3e38, [np.array([1e-2, 1, -1.4e38], F32)]),
    "subnormal_dividend": (lambda L: lambda x: 1e-39 / x, [np.array([0.0, 1.0, -0.0], F32)]),
    "subnormal_sqrt": (lambda L: L.sqrt, [np.array([-0.0, -1e-39, 1e-39], F32)]),
    "subnormal_floor": (lambda L: L.floor, [np.array([-1e-39, 1e-39], F32)]),
    "subnormal_exp_result": (lambda L: L.exp, [np.array([88.8, -104, -88, -87.5], F32)]),
    "subnormal_logical_not": (lambda L: L.logical_not, [np.array([1e-39, 0.0, 1.0], F32)]),
    "subnormal_float64": (lambda L: lambda x: x * 0.5, [np.array([1e-39, 2e-38], F32)]),
    "subnormal_min_of_itself": (lambda L: lambda x: L.minimum(x, x), [np.array([1e-39, -1e-39, 1], F32)]),
    "subnormal_max_of_itself": (lambda L: lambda x: L.maximum(x, x), [np.array([1e-39, -1e-39, 1], F32)]),
    # float(i) against a subnormal constant compares exactly (LLVM folds it to an integer
    # comparison); a float operand reads the constant as zero.
    "subnormal_against_uint32": (lambda L: lambda x: (x < 1e-39, x >= 1e-39, x == 1e-39, -1e-39 < x),
                                 [np.array([0, 1, 2**32 - 1], np.uint32)]),
    "subnormal_against_int32": (lambda L: lambda x: (x > -1e-39, x <= -1e-39, x != 1e-39, x <= 1e-39),
                                [np.array([0, 1, -1], np.int32)]),
    "subnormal_against_bool": (lambda L: lambda x: x < 1e-39, [np.array([True, False])]),
    "subnormal_against_float32": (lambda L: lambda x: x < 1e-39, [np.array([0.0, 1e-39, -1e-39], F32)]),
    "subnormal_negated": (lambda L: lambda x: -x, [np.array([1e-39, -1e-39], F32)]),
    "subnormal_abs": (lambda L: L.abs, [np.array([1e-39, -1e-39], F32)]),
    # Under jit, a one-element select reads a subnormal constant as zero (XLA folds it into a
    # literal of the result's shape, which its one-element fusion emits flushed); two elements,
    # or a select fused into a larger result, keep it, and eagerly it is an argument.
    "subnormal_selected_0d": (lambda L: lambda x: L.where(x > 0, x, 1e-39), [F32(-1)]),
    "subnormal_selected_one_element": (lambda L: lambda x: (L.where(x > 0, x, 1e-39),
                                                            L.where(x < 0, -1e-39, x)),
                                       [np.array([-1.0], F32)]),
    "subnormal_selected_1x1": (lambda L: lambda x: L.where(x > 0, x, F32(1e-39)), [np.array([[-1.0]], F32)]),
    "subnormal_selected_closed_over": (lambda L: lambda x: L.where(x > 0, x, np.full((1,), 1e-39, F32)),
                                       [np.array([-1.0], F32)]),
    "subnormal_selected_two_elements": (lambda L: lambda x: L.where(x > 0, x, 1e-39),
                                        [np.array([-1, 2], F32)]),
    "subnormal_selected_then_broadcast": (lambda L: lambda x: L.broadcast_to(L.where(x > 0, x, 1e-39), (3,)),
                                          [np.array([-1.0], F32)]),
    "subnormal_selected_then_concatenated": (lambda L: lambda x: L.concatenate([L.where(x > 0, x, 1e-39), x]),
                                             [np.array([-1.0], F32)]),
    # Loop and branch bodies compile when first run, inside the flushed program: their constant
    # folding must keep a subnormal constant, as XLA's does (native and opencl flushed it).
    "subnormal_constant_in_branch": (lambda L: lambda x: _lax(L).cond(x[0] > 0, lambda: x,
                                                                      lambda: L.full_like(x, 1e-39)),
                                     [np.array([-1, 2, 3], F32)]),
    "subnormal_constant_in_loop": (lambda L: lambda x: _lax(L).fori_loop(
        0, 2, lambda i, c: L.where(c > 5, c, 1e-39), x), [np.array([-1, 2, 3], F32)]),
    # A Python scalar reaches XLA as an argument of JAX's jitted jnp.pad: bool(1e-39) is False
    # there (the fuzzer, seed 223); a concrete array's conversion JAX folds in NumPy: True.
    "subnormal_pad_value_of_bool": (lambda L: lambda b: L.pad(b, ((0, 1),), constant_values=1e-39),
                                    [np.array([True, False, True])]),
    "subnormal_array_to_bool": (lambda L: lambda b: L.float32(1e-39).astype(bool) & b,
                                [np.array([True, False])]),
    # Constants computed with constants under jit fold exactly (StableHLO's folder, before
    # XLA's flushed arithmetic); eagerly, and through a nested jit's argument, they are XLA's
    # arithmetic, subnormals read as zero.
    "subnormal_weak_array_to_bool": (lambda L: lambda b: L.asarray(1e-39).astype(bool) & b,
                                     [np.array([True, False])]),
    "subnormal_constant_compared": (lambda L: lambda b: ((L.asarray(1e-39) != 0) & b,
                                                         (L.asarray(F32(1e-39)) > 0) | b),
                                    [np.array([True, False])]),
    "subnormal_constant_arithmetic": (lambda L: lambda b: L.where(
        b, L.asarray(F32(1e-39)) * 2, L.sqrt(L.asarray(F32(1e-39)))), [np.array([True, False])]),
    "subnormal_constant_selected": (lambda L: lambda b: L.where(
        b, _lax(L).select(L.asarray(F32(1e-39)) > 0, L.asarray(F32(1e-39)), F32(2)), 3.0),
        [np.array([True, False])]),
    "subnormal_constant_through_nested_jit": (lambda L: lambda b: _jit(L)(lambda c: c != 0)(1e-39) & b,
                                              [np.array([True, False])]),
    # 16 elements: the native platform's vectorised loop calls glibc's vector logf, which does
    # not read a subnormal as zero under DAZ by itself (log2 was -150, the fuzzer, seed 121).
    "subnormal_log_vectorised": (lambda L: lambda x: (L.log(x), L.log2(x), L.log10(x)),
                                 [np.resize(np.array([1e-39, -1e-39, 5e-45, -5e-45, 0, -0.0, 1], F32), 16)]),
    # Transcendental functions of subnormals as XLA's expansions give them, at every size:
    # some return x, others a zero of its sign (lax/subnormal_operands.py).
    **{f"subnormal_{kind}_{n}": (make, [np.resize(np.array([1e-39, -1e-39, 5e-45, -1.1e-38, 0, -0.0, 2e-30],
                                                           F32), n)])
       for n in (1, 3, 16)
       for kind, make in [
           ("kept", lambda L: lambda x: (L.sin(x), L.tan(x), L.arctan(x), L.tanh(x), L.expm1(x))),
           ("zeroed", lambda L: lambda x: (L.arcsin(x), L.sinh(x), L.arcsinh(x), L.arctanh(x),
                                           L.log1p(x), L.sqrt(x), L.sign(x))),
           ("cbrt_arccos", lambda L: lambda x: (L.cbrt(x), L.arccos(x)))]},
    "subnormal_erf_inv": (lambda L: _lax(L).erf_inv, [np.array([1e-39, -1e-39, 5e-45, 0, -0.0], F32)]),
    # atan2 is XLA's own atan2f (fdlibm's) under the flushed environment.
    "subnormal_arctan2": (lambda L: L.arctan2, [
        np.array([1e-39] * 12 + [-1e-39] * 6 + [0, -0.0, 1e-30, 1, -1, 3e38, np.inf, np.nan, -1e-30], F32),
        np.array([1e-39, -1e-39, 0, -0.0, 1e-30, -1e-30, 1, -1, 3e38, -3e38, np.inf, -np.inf,
                  1e-39, -1e-39, 0, -1e-30, 1, -np.inf, 1e-39, -1e-39, -1e-39, -1e-39, 1e-39, -1e-39,
                  -1e-39, 1e-39, -1e-39], F32)]),
    # Division by a broadcast divisor multiplies by its reciprocal; by a same-shape one divides.
    "divide_by_scalar": (lambda L: lambda x: x / 20000, [np.full(3, 62764.0, F32)]),
    "divide_by_float32_scalar": (lambda L: lambda x, y: x / y, [np.full(3, 62764.0, F32), F32(20000)]),
    "divide_by_row": (lambda L: lambda x, y: x / y, [np.full((2, 3), 62764.0, F32),
                                                     np.full(3, 20000.0, F32)]),
    "divide_same_shape": (lambda L: lambda x, y: x / y, [np.full(3, 62764.0, F32), np.full(3, 20000.0, F32)]),
    "divide_scalars": (lambda L: lambda i: 4.0 * i / 20000, [np.int32(15691)]),
    "divide_scalar_by_array": (lambda L: lambda x: 62764.0 / x, [np.full(3, 20000.0, F32)]),
    # XLA's float32 tanh is exactly +-1 past its clamp, so gelu's 1 + tanh(-large) is 0.
    "tanh_past_clamp": (lambda L: L.tanh, [np.array([-9, -8.5, -7.9989, 7.9989, 8.5, 30], F32)]),
    "gelu_large_negative": (lambda L: lambda x: x * (0.5 * (1 + L.tanh(0.7978846 * (x + 0.044715 * x ** 3)))),
                            [np.array([-100, -10, -5, 9], F32)]),
    "divide_float16_by_scalar": (lambda L: lambda x: x / L.float16(3), [np.full(3, 20000.0, np.float16)]),
}


def _lax(L):
    return jax.lax if L is jjnp else gpuarr.lax


def _jit(L):
    return jax.jit if L is jjnp else gpuarr.jit


def _outcome(fn, args):
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001 - compared by class below
        return "raise", type(e).__name__
    return np.asarray(out), np.asarray(out).dtype, bool(getattr(out, "weak_type", False))


def _check(got, want):
    if isinstance(want[0], str):
        assert isinstance(got[0], str), f"JAX raised {want[1]}; gpuarr computed {got}"
        return
    assert not isinstance(got[0], str), f"gpuarr raised {got[1]}; JAX computed {want}"
    assert got[1] == want[1] and got[2] == want[2], (got[1:], want[1:])
    assert got[0].shape == want[0].shape
    np.testing.assert_array_equal(got[0], want[0])
    if want[1].kind == "f":
        # JAX here runs on x86, whose invalid operations give a negative NaN; a GPU's NaN is
        # the device's (NVIDIA's canonical NaN is positive), so elsewhere only numbers' signs.
        kept = np.ones(want[0].shape, bool) if gpuarr.default_backend() == "cpu" else \
            ~np.isnan(want[0])
        np.testing.assert_array_equal(np.signbit(got[0])[kept], np.signbit(want[0])[kept])


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name, jit):
    if name.startswith("subnormal") and not float_env.available():
        pytest.skip("subnormals survive on this host (docs/arithmetic.md)")
    make, args = CASES[name]
    if name == "subnormal_float64":  # float64 under x64: the same flush
        gpuarr.config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_x64", True)
        args = [a.astype(np.float64) * 1e-270 for a in args]
    try:
        theirs, ours = make(jjnp), make(jnp)
        if jit:
            theirs, ours = jax.jit(theirs), gpuarr.jit(ours)
        _check(_outcome(ours, args), _outcome(theirs, args))
    finally:
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("n", [2, 16])
def test_float64_transcendentals_of_subnormals(n, jit):
    if not float_env.available():
        pytest.skip("subnormals survive on this host (docs/arithmetic.md)")
    x = np.resize(np.array([1e-310, -1e-310, 5e-324, -2e-308, 0, -0.0]), n)

    def make(L):
        return lambda x: (L.sin(x), L.tan(x), L.arctan(x), L.expm1(x), L.tanh(x), L.arcsin(x),
                          L.sinh(x), L.arcsinh(x), L.arctanh(x), L.log1p(x), L.cbrt(x), L.arccos(x))
    gpuarr.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        theirs, ours = make(jjnp), make(jnp)
        if jit:
            theirs, ours = jax.jit(theirs), gpuarr.jit(ours)
        for got, want in zip(ours(x), theirs(x)):
            _check(_outcome(lambda: got, []), _outcome(lambda: want, []))
    finally:
        jax.config.update("jax_enable_x64", False)
        gpuarr.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_gelu_of_large_negative_inputs_is_zero_as_in_jax(jit):
    x = np.array([-100, -10, -5.5, -5, 0, 10], F32)  # where tanh is +-1 or 0: no rounding
    ours = (gpuarr.jit if jit else lambda f: f)(lambda x: gpuarr.nn.gelu(x, approximate=True))
    theirs = (jax.jit if jit else lambda f: f)(lambda x: jax.nn.gelu(x, approximate=True))
    _check(_outcome(ours, [x]), _outcome(theirs, [x]))


def test_scatters_of_booleans_raise_as_in_jax():
    x = jnp.array([True, False])
    for op in ("add", "multiply", "divide", "power"):
        with pytest.raises(TypeError, match="does not accept dtype bool"):
            getattr(x.at[0], op)(False)
        with pytest.raises(TypeError, match="does not accept dtype bool"):
            gpuarr.jit(lambda x, op=op: getattr(x.at[0], op)(False))(x)
    np.testing.assert_array_equal(np.asarray(x.at[0].max(False)), [True, False])
    np.testing.assert_array_equal(np.asarray(x.at[0].set(False)), [False, False])


def test_flushing_leaves_python_floats_alone():
    if not float_env.available():
        pytest.skip("no float environment to set on this host")
    assert 1e-310 * 1.0 == 1e-310
    with float_env.flushing():
        assert np.float32(1e-39) * np.float32(1) == 0  # inside: XLA's environment
    assert 1e-310 * 1.0 == 1e-310  # restored after
    assert float(np.asarray(jnp.array([1e-39], np.float32) + 0)[0]) == 0.0
    assert 1e-310 * 1.0 == 1e-310


def test_fuzzer_programs_found_before():
    """Programs the differential fuzzer reported, kept as they were drawn."""
    programs = [
        Program([np.array([[[-1.27, 3.0], [4.2e9, 1e-39]], [[0.0, 1.41], [0.38, -3.69]]], F32)],
                [("unary", {"a": 0, "op": "logical_not"}), ("gather", {"a": 1, "idx": [-1]})],
                [False, False, False], 2),
        Program([np.array([[2147483648], [0], [2]], np.uint32)],
                [("reshape", {"a": 0, "shape": (-1,)}), ("sort", {"a": 1, "axis": -1}),
                 ("binary", {"a": 2, "op": "true_divide", "weak": 1e-39, "swap": True})],
                [False, False, False, False], 1),
        Program([np.array([[[True, True], [True, True]], [[False, True], [True, False]]])],
                [("at", {"a": 0, "op": "multiply", "mode": "drop", "idx": [1], "weak": False})],
                [False, False], 1),
        Program([np.array([1.0, 255.5, 2.7], F32)],
                [("pad", {"a": 0, "width": ((1, 2),), "as": "numpy", "mode": "edge", "value": 0})],
                [False, False], 1),
        # min(x, x) is x under jit (XLA's simplifier): a subnormal comes back unflushed.
        Program([np.array([[[0.5, 1.9], [-5.7, 3.4e38]], [[-4.6, 1e-39], [4.2, 0.5]]], F32)],
                [("cumsum", {"a": 0, "axis": 2}),
                 ("binary", {"a": 0, "op": "minimum", "b": 0, "swap": True})],
                [False, True, False], 2),
        # b / False for a bool array: XLA multiplies by 1 / 0 and turns float(b) * inf into
        # select(b, inf, 0).
        Program([-1, np.array([[True], [True], [False]]), np.array([[46341], [100], [7]], np.uint32)],
                [("binary", {"a": 1, "op": "true_divide", "weak": False, "swap": False}),
                 ("cond", {"a": 2, "c": 0}), ("concatenate", {"a": 0, "b": 3}),
                 ("binary", {"a": 4, "op": "multiply", "weak": -2.0, "swap": True}),
                 ("concatenate", {"a": 5, "b": 4})],
                [False, False, False, True, False, False, False, False], 1),
        # uint32 < 1e-39 under jit: an integer comparison, the constant not flushed.
        Program([np.array([[[7, 100], [5, 8]], [[0, 16], [65536, 10]]], np.uint32)],
                [("binary", {"a": 0, "op": "less", "weak": 1e-39, "swap": False}),
                 ("binary", {"a": 0, "op": "less", "b": 1, "swap": False}),
                 ("binary", {"a": 1, "op": "logical_and", "b": 1, "swap": True}),
                 ("scan", {"a": 3}), ("reduce", {"a": 3, "op": "any", "axis": -2})],
                [False, False, False, False, False, False], 1),
        # log2 of a subnormal in a vectorised native kernel (seed 121): -inf, as XLA reads it.
        Program([np.array([[[np.inf, -11.12], [0.72, -3e9]], [[2.36, -0.028], [1e-39, -0.0]]], F32),
                 np.array(7, np.uint32)],
                [("reshape", {"a": 0, "shape": (2, -1)}), ("unary", {"a": 2, "op": "neg"}),
                 ("unary", {"a": 0, "op": "log2"})],
                [False, False, False, False, True], 2),
        # bool(1e-39) as a pad value, converted by XLA: False (seed 223, opencl and every platform).
        Program([np.array([[False, True, False, True]]), np.array([[-6], [46341], [0]], np.int32),
                 np.array([True, False, True])],
                [("pad", {"a": 2, "width": ((0, 1),), "as": "array", "mode": "constant", "value": 1e-39}),
                 ("cumsum", {"a": 3, "axis": -1}), ("cumsum", {"a": 3, "axis": -1}),
                 ("binary", {"a": 3, "op": "bitwise_and", "b": 1, "swap": True})],
                [False] * 7, 2),
        # dot of inf with float(False), one element each: 0 in XLA (seed 143, cpu).
        Program([np.array(np.inf, F32), np.array(False)],
                [("ctor", {"a": 1, "dtype": "float32"}), ("dot", {"a": 0, "b": 2, "k": 1, "outer": True}),
                 ("reduce", {"a": 0, "op": "max", "axis": None}), ("unary", {"a": 3, "op": "isnan"})],
                [False, False, False, True, False, False], 3),
    ]
    for prog in programs:
        assert compare(prog) is None, prog.describe()


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_floating_point_exceptions_raise_no_warnings_as_in_jax(jit):
    # XLA computes 0/0, log(0) and overflow silently; a program whose warnings are errors
    # (pytest's filterwarnings = error, as flax's and equinox's suites set) must not see
    # NumPy's RuntimeWarnings, whatever filters gpuarr installed at import.
    def f(L):
        def g(x, n):
            return [x / x, L.log(x), L.exp(x + 1000.0), x / n.astype(x.dtype), L.sqrt(x - 1.0)]
        return g

    args = [np.zeros((), F32), np.zeros((), np.int32)]
    ours, theirs = f(jnp), f(jjnp)
    if jit:
        ours, theirs = gpuarr.jit(ours), jax.jit(theirs)
    want = [np.asarray(w) for w in theirs(*map(jjnp.asarray, args))]
    ours_args = list(map(jnp.asarray, args))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [np.asarray(g) for g in ours(*ours_args)]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert np.geterr()["invalid"] == "warn"  # the caller's NumPy settings are untouched
