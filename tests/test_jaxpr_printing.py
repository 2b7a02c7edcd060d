"""How `make_jaxpr` prints programs: the whole program on one line when it fits in 80 columns,
else one equation a line; equation parameters sorted by name, on the equation's line when
they fit, otherwise one `name=value` a line with `]` back at the equation's indentation, as
JAX prints them. The comparisons with JAX use programs both libraries trace
to the same primitives with the same parameters."""
import math

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr import core
from gpuarr import lax as glax

F44 = np.ones((4, 4), np.float32)


def _jaxprs(build, *args):
    """(gpuarr's printed program, JAX's) for `build(api, jnp, lax)`, the function to trace."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    from jax import lax as jlax
    want = jax.make_jaxpr(build(jax, jjnp, jlax))(*args).pretty_print(use_color=False)
    got = str(gpuarr.make_jaxpr(build(gpuarr, gnp, glax))(*args))
    return got, want


def _dot_tanh(api, jnp, lax):
    return lambda x, w: jnp.tanh(lax.dot_general(x, w, (((1,), (0,)), ((), ())),
                                                 preferred_element_type=np.float32))


def _dot_highest(api, jnp, lax):
    return lambda x, w: lax.dot_general(x, w, (((1,), (0,)), ((), ())),
                                        precision=lax.Precision.HIGHEST,
                                        preferred_element_type=np.float32)


def _custom_jvp(api, jnp, lax):
    @api.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), jnp.cos(primals[0]) * tangents[0]
    return f


def _custom_jvp_closing_over_an_array(api, jnp, lax):
    w = np.arange(4, dtype=np.float32)

    @api.custom_jvp
    def f(x):
        return x * w + jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), tangents[0] * (w + jnp.cos(primals[0]))
    return f


def _gather(api, jnp, lax):
    dnums = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                       start_index_map=(0,))
    return lambda x, i: lax.gather(x, i, dnums, (1, 4), mode=lax.GatherScatterMode.CLIP)


def _while_many(api, jnp, lax):
    return lambda a, b, c, d: lax.while_loop(
        lambda s: s[0] < 10., lambda s: (s[0] + 1., s[1] * s[0], s[2] - s[1], s[3] + s[2]),
        (a, b, c, d))


def _sines(jnp, y, n=11):
    for _ in range(n):
        y = jnp.sin(y)
    return y


def _jit_twice(api, jnp, lax):
    f = api.jit(lambda y: jnp.sin(y) * 2.)
    return lambda x: f(f(x)) + f(x)


def _jit_in_branches(api, jnp, lax):
    f = api.jit(lambda y: jnp.sin(y) * 2.)
    return lambda x: lax.cond(x > 0, lambda x: f(x), lambda x: f(x) + 1., x)


def _two_jits_of_one_function(api, jnp, lax):
    def many(y):
        return _sines(jnp, y)
    f = api.jit(lambda y: jnp.sin(y) * 2.)
    return lambda x: api.jit(many)(x) + api.jit(many)(x) + f(f(x))


def _sine_jit(api, jnp):
    return api.jit(lambda y: jnp.sin(y) * 2.)


SAME_AS_JAX = {
    "dot_general_tanh": (_dot_tanh, (F44, F44)),
    "dot_general_precision": (_dot_highest, (F44, F44)),
    "reduce_window": (lambda api, jnp, lax: lambda y: lax.reduce_window(
        y, 0., lax.add, (2, 2), (1, 1), "VALID"), (F44,)),
    "slice": (lambda api, jnp, lax: lambda x: lax.slice(x, (1, 0), (3, 4), (1, 2)), (F44,)),
    "pad": (lambda api, jnp, lax: lambda x: lax.pad(x, 0., ((1, 2, 0), (0, 0, 1))), (F44,)),
    "integer_pow": (lambda api, jnp, lax: lambda x: lax.integer_pow(x, 2), (F44,)),
    "convert_element_type": (lambda api, jnp, lax: lambda x: lax.convert_element_type(
        x, np.int32), (F44,)),
    "broadcast_in_dim": (lambda api, jnp, lax: lambda x: lax.broadcast_in_dim(
        x, (3, 4, 4), (1, 2)), (F44,)),
    "argmax": (lambda api, jnp, lax: lambda x: jnp.argmax(x, axis=1), (F44,)),
    "top_k": (lambda api, jnp, lax: lambda x: lax.top_k(x, 2), (F44,)),
    # A program that fits in 80 columns takes one line, its equations separated by "; ".
    "two_equations_one_line": (lambda api, jnp, lax: lambda x: jnp.cos(jnp.sin(x)), (1.,)),
    "three_equations_one_line": (lambda api, jnp, lax: lambda x: lax.neg(
        lax.exp(lax.sin(x))), (1.,)),
    "no_equations": (lambda api, jnp, lax: lambda x: x, (1.,)),
    # grad: the seed cotangent is a literal, and results nothing reads print as `_`.
    "grad_scalar": (lambda api, jnp, lax: api.grad(lambda x: jnp.sin(x) * x), (1.,)),
    "grad_scalar_strong": (lambda api, jnp, lax: api.grad(lambda x: jnp.sin(x) * x),
                           (np.float32(1),)),
    "grad_square_sum": (lambda api, jnp, lax: api.grad(lambda x: jnp.sum(x.reshape(16) ** 2)),
                        (F44,)),
    "value_and_grad_mean": (lambda api, jnp, lax: api.value_and_grad(
        lambda x: jnp.mean(jnp.tanh(x))), (F44,)),
    # JAX's sharding parameters print as None; an equation with no operands keeps its space.
    "iota": (lambda api, jnp, lax: lambda x: lax.iota(np.int32, 3), (1.,)),
    "two_equations_too_wide": (lambda api, jnp, lax: lambda x: x * 2. + 1., (F44,)),
    "gather": (_gather, (F44, np.zeros((2, 1), np.int32))),
    "scan": (lambda api, jnp, lax: lambda xs: lax.scan(
        lambda c, x: (c + x, c * x), 0., xs), (np.ones(5, np.float32),)),
    "while": (lambda api, jnp, lax: lambda x: lax.while_loop(
        lambda c: c < 10., lambda c: c * 2., x), (1.,)),
    "while_four_carries": (_while_many, (1., 2., 3., 4.)),
    "cond": (lambda api, jnp, lax: lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x), (True, 1.)),
    "switch": (lambda api, jnp, lax: lambda i, x: lax.switch(
        i, [jnp.sin, jnp.cos, jnp.tanh], x), (1, 1.)),
    "jit": (lambda api, jnp, lax: lambda x: api.jit(lambda y: jnp.sin(y) * 2.)(x), (1.,)),
    "jit_one_equation": (lambda api, jnp, lax: api.jit(jnp.sin), (1.,)),
    "custom_jvp_call": (_custom_jvp, (1.,)),
    "many_inputs": (lambda api, jnp, lax: lambda *xs: jnp.concatenate(xs),
                    tuple(np.ones(3, np.float32) for _ in range(30))),
    # A Python float prints as written (0.1, not float32's 0.10000000149011612); a NumPy
    # float32 and a narrower type print their own value.
    "python_float_literals": (lambda api, jnp, lax: lambda x: x * 0.1 + math.pi - 1e-7, (1.,)),
    "lax_python_float": (lambda api, jnp, lax: lambda x: lax.mul(0.1, x), (1.,)),
    "numpy_float32_literal": (lambda api, jnp, lax: lambda x: x * np.float32(0.1), (1.,)),
    "float16_python_float": (lambda api, jnp, lax: lambda x: x * 0.1, (np.float16(1),)),
    # Scalars made by `full` and zeros_like are literals, with no equation.
    "full_scalar": (lambda api, jnp, lax: lambda x: lax.full((), 2., np.float32) + x, (1.,)),
    "zeros_like_weak": (lambda api, jnp, lax: lambda x: jnp.ones_like(x) + x, (1.,)),
    # logaddexp is a custom_jvp function with JAX's rule.
    "logaddexp": (lambda api, jnp, lax: jnp.logaddexp, (1., 2.)),
    "grad_logaddexp": (lambda api, jnp, lax: api.grad(jnp.logaddexp), (1., 2.)),
    "jvp_max": (lambda api, jnp, lax: lambda x, y, tx, ty: api.jvp(lax.max, (x, y), (tx, ty)),
                (1., 2., 1., 1.)),
    # Integer indices slice, reverse and squeeze; None inserts an axis by broadcast_in_dim.
    "index_int": (lambda api, jnp, lax: lambda x: x[1], (F44,)),
    "index_int_reversed_new_axis": (lambda api, jnp, lax: lambda x: x[::-2, None, 3], (F44,)),
    "index_scalar": (lambda api, jnp, lax: lambda x: x[1, 2], (F44,)),
    "squeeze_expand_dims": (lambda api, jnp, lax: lambda x: jnp.expand_dims(
        jnp.squeeze(x[:1], 0), (0, 2)), (F44,)),
    "grad_index": (lambda api, jnp, lax: api.grad(lambda x: x[2, 1:] @ x[0, :3]), (F44,)),
    "grad_expand_dims": (lambda api, jnp, lax: api.grad(lambda x: jnp.sum(
        jnp.expand_dims(x[:1], 0) * 2.)), (F44,)),
    "vmap_index": (lambda api, jnp, lax: api.vmap(lambda x: x[1]), (F44,)),
    # Called Programs reached twice, or longer than ten equations, print first as
    # `let name = { ... } in`, named after their jit, else `jaxpr`.
    "shared_jit": (_jit_twice, (1.,)),
    "shared_jit_in_branches": (_jit_in_branches, (1.,)),
    "shared_names_count_up": (_two_jits_of_one_function, (1.,)),
    "long_custom_jvp_call": (lambda api, jnp, lax: jnp.logaddexp2, (1., 2.)),
    "long_scan_body": (lambda api, jnp, lax: lambda x: lax.scan(
        lambda c, _: (_sines(jnp, c), None), x, None, length=3)[0], (1.,)),
    "long_jit_once": (lambda api, jnp, lax: api.jit(lambda y: _sines(jnp, y)), (1.,)),
    "short_jit_once": (lambda api, jnp, lax: api.jit(lambda y: _sines(jnp, y, 10)), (1.,)),
    # jnp gives lower-rank operands leading unit axes and lax broadcasts those, as in JAX.
    "rank_promotion": (lambda api, jnp, lax: lambda x, b: x * b + 1., (F44, np.ones(4, np.float32))),
    "unit_axes": (lambda api, jnp, lax: lambda x, c: x - c, (F44, np.ones((4, 1), np.float32))),
    "grad_rank_promotion": (lambda api, jnp, lax: api.grad(
        lambda b, x: jnp.sum(jnp.tanh(x + b))), (np.ones(4, np.float32), F44)),
    # Three-term where is a jit named _where that broadcasts every operand; square is a primitive.
    "where_scalar": (lambda api, jnp, lax: lambda x: jnp.where(x > 0, 0., x), (F44,)),
    "where_broadcast": (lambda api, jnp, lax: lambda c, x: jnp.where(c, x, 1), (
        np.array([True, False, True, True]), F44)),
    "grad_where_square": (lambda api, jnp, lax: api.grad(lambda x: jnp.sum(jnp.where(
        x > 1., jnp.square(x), x))), (F44,)),
    "clip": (lambda api, jnp, lax: lambda x: jnp.clip(x, 0, 2.5), (F44,)),
    "round": (lambda api, jnp, lax: lambda x: (jnp.round(x, 2), jnp.round(x)), (F44,)),
    "one_hot": (lambda api, jnp, lax: lambda i: api.nn.one_hot(i, 5), (np.arange(3, dtype=np.int32),)),
    # Integer-array indexing and .at[] updates: JAX's index normalization (scalar literals), one
    # index expanded by broadcast_in_dim, and scatters printed with JAX's names and update
    # programs.
    "index_int_array": (lambda api, jnp, lax: lambda x, i: (x[i], x[:, i], x[i, i]),
                        (F44, np.array([2, -1], np.int32))),
    "grad_index_int_array": (lambda api, jnp, lax: api.grad(lambda x, i: x[i].sum()),
                             (F44, np.array([2, 0], np.int32))),
    "at_updates": (lambda api, jnp, lax: lambda x, i: (
        x.at[i].set(1.), x.at[i].add(1.), x.at[i].multiply(2.), x.at[i].min(0.),
        x.at[i].max(0.)), (F44, np.array([3, 0], np.int32))),
    "index_traced_scalar": (lambda api, jnp, lax: lambda x, i: (x[i], x[i, 1:3], x[None, i, :2]),
                            (F44, np.int32(-1))),
    # jnp.array and jnp.copy of an array copy it with JAX's `copy` primitive.
    "array_copy": (lambda api, jnp, lax: lambda x: (
        jnp.array(x), jnp.array(x, dtype=np.int32), jnp.array(x, copy=False), jnp.copy(x),
        x.copy(), jnp.array(x, ndmin=3)), (F44,)),
    "grad_copy": (lambda api, jnp, lax: api.grad(lambda x: jnp.array(x).sum()), (F44,)),
    # Transformation rules written as JAX's: zero tangents of a jit's integer results are no
    # outputs; batching keeps a shared batch axis and broadcasts unbatched operands with
    # NumPy-integer dimensions; select_n batches its cases at full size; sort's JVP gathers
    # with unsigned indices and batch dimensions.
    "grad_jit_with_bool_result": (lambda api, jnp, lax: api.grad(
        lambda x: jnp.where(jnp.signbit(x), 0., x).sum()), (F44,)),
    "vmap_reductions": (lambda api, jnp, lax: api.vmap(
        lambda r: (jnp.argmax(r), jnp.sum(r * np.arange(4, dtype=np.float32)))), (F44,)),
    "vmap_grad": (lambda api, jnp, lax: api.vmap(api.grad(lambda r: jnp.sum(jnp.tanh(r) ** 2))),
                  (F44,)),
    "vmap_where": (lambda api, jnp, lax: api.vmap(lambda r: jnp.where(r > 0.5, r, 0.)), (F44,)),
    "grad_sort": (lambda api, jnp, lax: api.grad(lambda x: jnp.sort(x, axis=1)[:, 0].sum()),
                  (F44,)),
    "grad_norm": (lambda api, jnp, lax: api.grad(lambda x: jnp.linalg.norm(x)), (F44,)),
    # A custom_jvp function's constants are leading operands, counted by num_consts.
    "custom_jvp_consts": (_custom_jvp_closing_over_an_array, (np.ones(4, np.float32),)),
    "grad_custom_jvp_consts": (lambda api, jnp, lax: api.grad(
        lambda x: _custom_jvp_closing_over_an_array(api, jnp, lax)(x).sum()),
        (np.ones(4, np.float32),)),
    # matmul as JAX's: batch axes of one operand only are free axes of one dot_general (an
    # unbatched matrix is not broadcast), then a transpose where the order needs one.
    "matmul_batched_by_unbatched": (lambda api, jnp, lax: lambda a, w, v: (
        a @ w, a @ v, v @ a.transpose(0, 2, 1), jnp.matmul(a[:, None], w[None])),
        (np.ones((2, 4, 3), np.float32), np.ones((3, 5), np.float32), np.ones(3, np.float32))),
    "round_complex": (lambda api, jnp, lax: lambda x: jnp.around(x.astype(np.complex64), 2),
                      (F44,)),
    # Iterating a traced array indexes each row with lax.index_in_dim, as JAX's does.
    "iterate": (lambda api, jnp, lax: lambda x: list(x), (F44,)),
    "slice_in_dim": (lambda api, jnp, lax: lambda x: lax.slice_in_dim(x, -3, None, 2, 1),
                     (F44,)),
    # A jit's inputs and results take the caller's names, each caller name lent once: an
    # operand passed twice names one input, and a result that is an input gets a new name.
    "jit_operand_twice": (lambda api, jnp, lax: lambda a: api.jit(
        lambda x, y: (x * y, x, y))(a, a), (F44,)),
    "jit_returns_its_input": (lambda api, jnp, lax: lambda a: api.jit(
        lambda x: (x, x * 2, x))(a), (F44,)),
    # Transformed jits stay jits: jvp keeps the name; grad splits a jit into a forward one
    # (outputs and residuals) and a transposed one.
    "jvp_jit": (lambda api, jnp, lax: lambda x, t: api.jvp(_sine_jit(api, jnp), (x,), (t,)),
                (1., 1.)),
    "linearize_jit": (lambda api, jnp, lax: lambda x: api.linearize(
        _sine_jit(api, jnp), x)[1](x), (1.,)),
    "grad_jit": (lambda api, jnp, lax: api.grad(_sine_jit(api, jnp)), (1.,)),
    "grad_jit_product": (lambda api, jnp, lax: api.grad(
        lambda x: _sine_jit(api, jnp)(x) * x), (1.,)),
    "grad_jit_twice": (lambda api, jnp, lax: (lambda f: api.grad(lambda x: f(f(x))))(
        _sine_jit(api, jnp)), (1.,)),
}


@pytest.mark.parametrize("name", sorted(SAME_AS_JAX))
def test_printed_program_matches_jax(name):
    build, args = SAME_AS_JAX[name]
    got, want = _jaxprs(build, *args)
    assert got == want


# ---- layouts that need no JAX

def test_long_parameters_take_a_line_each():
    text = str(gpuarr.make_jaxpr(
        lambda y: glax.reduce_window(y, 0., glax.add, (2, 2), (1, 1), "VALID"))(F44))
    assert text == """\
{ lambda ; a:f32[4,4]. let
    b:f32[3,3] = reduce_window_sum[
      base_dilation=(1, 1)
      padding=((0, 0), (0, 0))
      window_dilation=(1, 1)
      window_dimensions=(2, 2)
      window_strides=(1, 1)
    ] a
  in (b,) }"""


def test_conv_parameters_are_sorted_one_a_line():
    x, k = np.ones((1, 2, 8, 8), np.float32), np.ones((3, 2, 3, 3), np.float32)
    text = str(gpuarr.make_jaxpr(
        lambda x, k: glax.conv_general_dilated(x, k, (1, 1), "SAME"))(x, k))
    assert text == """\
{ lambda ; a:f32[1,2,8,8] b:f32[3,2,3,3]. let
    c:f32[1,3,8,8] = conv_general_dilated[
      batch_group_count=1
      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), \
out_spec=(0, 1, 2, 3))
      feature_group_count=1
      lhs_dilation=(1, 1)
      padding=((1, 1), (1, 1))
      precision=None
      preferred_element_type=None
      rhs_dilation=(1, 1)
      window_strides=(1, 1)
    ] a b
  in (c,) }"""


def test_short_parameters_stay_on_the_line():
    text = str(gpuarr.make_jaxpr(lambda x: gnp.sum(x ** 2))(F44))
    assert text == """\
{ lambda ; a:f32[4,4]. let
    b:f32[4,4] = integer_pow[y=2] a
    c:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] b
  in (c,) }"""


def test_parameters_fit_up_to_column_80_and_the_arguments_do_not_count():
    # `[...]` ends at column 80 exactly: it stays on the line, and ` a` runs past it.
    x = np.ones((16, 4), np.float32)
    text = str(gpuarr.make_jaxpr(lambda x: glax.slice(x, (1, 0), (3, 4), (1, 2)))(x))
    line = "    b:f32[2,2] = slice[limit_indices=(3, 4) start_indices=(1, 0) strides=(1, 2)] a"
    assert len(line) == 82 and line in text.splitlines()
    # One column more (a wider output type) and the parameters break.
    text = str(gpuarr.make_jaxpr(lambda x: glax.slice(x, (1, 0), (13, 4), (1, 2)))(x))
    assert "    b:f32[12,2] = slice[\n      limit_indices=(13, 4)\n      start_indices=(1, 0)\n" \
           "      strides=(1, 2)\n    ] a\n" in text


def test_dot_general_printing_rules():
    prog = gpuarr.make_jaxpr(lambda x, w: glax.dot(x, w))(F44, F44)
    eqn = prog.eqns[0]
    assert eqn.params["precision"] is None and eqn.params["preferred_element_type"] is None
    # None precision and preferred type are left out; the dimension numbers print as lists.
    assert "c:f32[4,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b" in str(prog)
    # jnp's products name their result type, as JAX's do, and the equation breaks.
    prog = gpuarr.make_jaxpr(lambda x, w: x @ w)(F44, F44)
    assert prog.eqns[0].params["preferred_element_type"] == np.float32
    assert str(prog) == (
        "{ lambda ; a:f32[4,4] b:f32[4,4]. let\n"
        "    c:f32[4,4] = dot_general[\n"
        "      dimension_numbers=(([1], [0]), ([], []))\n"
        "      preferred_element_type=float32\n"
        "    ] a b\n"
        "  in (c,) }")


def test_broadcast_in_dim_leaves_out_what_the_output_type_says():
    text = str(gpuarr.make_jaxpr(lambda x: glax.broadcast_in_dim(x, (3, 4), ()))(1.0))
    assert text == "{ lambda ; a:f32[]. let b:f32[3,4] = broadcast_in_dim a in (b,) }"
    text = str(gpuarr.make_jaxpr(lambda x: glax.broadcast_in_dim(x, (3, 4, 4), (1, 2)))(F44))
    assert "b:f32[3,4,4] = broadcast_in_dim[broadcast_dimensions=(1, 2)] a\n" in text


def test_jit_prints_its_name_first():
    text = str(gpuarr.make_jaxpr(lambda x: gpuarr.jit(lambda y: gnp.sin(y) * 2.)(x))(1.0))
    assert text == """\
{ lambda ; a:f32[]. let
    b:f32[] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[]. let
          c:f32[] = sin a
          b:f32[] = mul c 2.0:f32[]
        in (b,) }
    ] a
  in (b,) }"""


def test_a_short_nested_program_stays_on_its_parameter_line():
    text = str(gpuarr.make_jaxpr(gpuarr.jit(gnp.sin))(1.0))
    assert "      jaxpr={ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }\n" in text


def test_long_argument_and_binder_lists_wrap_two_columns_in():
    xs = [np.ones(3, np.float32)] * 30
    text = str(gpuarr.make_jaxpr(lambda *xs: gnp.concatenate(xs))(*xs))
    assert text.splitlines()[-3:] == [
        "    be:f32[90] = concatenate[dimension=0] a b c d e f g h i j k l m n o p q r s t",
        "      u v w x y z ba bb bc bd",
        "  in (be,) }"]
    assert text.splitlines()[1] == (
        "    i:f32[3] j:f32[3] k:f32[3] l:f32[3] m:f32[3] n:f32[3] o:f32[3] p:f32[3] q:f32[3]")


def test_the_rule_table_is_data():
    rule = core.param_printing["dot_general"]
    assert rule.hidden_if_none == ("precision", "preferred_element_type")
    assert rule.as_lists == ("dimension_numbers",)
    assert core.param_printing["jit"].first == ("name",)


def test_source_locations_end_the_equation_first_line():
    closed = gpuarr.make_jaxpr(
        lambda y: glax.reduce_window(y, 0., glax.add, (2, 2), (1, 1), "VALID"))(F44)
    lines = closed.pretty(source_info=True).splitlines()
    assert lines[1].startswith("    b:f32[3,3] = reduce_window_sum[  # ")
    assert "test_jaxpr_printing.py" in lines[1]
    assert lines[2] == "      base_dilation=(1, 1)"


def test_a_lone_equation_prints_on_one_line():
    # Kernel comments quote equations through pp_eqn, which sets no width by default.
    closed = gpuarr.make_jaxpr(
        lambda y: glax.reduce_window(y, 0., glax.add, (2, 2), (1, 1), "VALID"))(F44)
    namer = core._Namer()
    namer.binder(closed.program.invars[0])
    assert core.pp_eqn(closed.eqns[0], namer) == (
        "b:f32[3,3] = reduce_window_sum[base_dilation=(1, 1) padding=((0, 0), (0, 0)) "
        "window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(1, 1)] a")
    namer = core._Namer()
    namer.binder(closed.program.invars[0])
    assert core.pp_eqn(closed.eqns[0], namer, indent=4, width=80).splitlines()[1:] == [
        "      base_dilation=(1, 1)", "      padding=((0, 0), (0, 0))",
        "      window_dilation=(1, 1)", "      window_dimensions=(2, 2)",
        "      window_strides=(1, 1)", "    ] a"]


def test_a_jit_traced_under_a_transformation_is_staged_once():
    traces = []

    def f(y):
        traces.append(1)
        return gnp.sin(y)
    g = gpuarr.jit(f)
    printed = str(gpuarr.make_jaxpr(lambda x: g(g(x)) + gpuarr.jit(f)(x))(1.))
    assert len(traces) == 1
    assert printed.startswith("let f = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in")
    g.clear_cache()
    gpuarr.make_jaxpr(g)(1.)
    assert len(traces) == 2
    gpuarr.make_jaxpr(lambda x: g(x) + g(2. * x))(np.ones(3, np.float32))
    assert len(traces) == 3  # a new signature traces again


def test_grad_of_a_jit_keeps_the_weak_type():
    f = gpuarr.jit(lambda y: gnp.sin(y) * 2.)
    g = gpuarr.grad(f)(1.)
    assert g.weak_type and g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * np.cos(1.), rtol=1e-6)


# jax.nn's activations are jits (relu a custom_jvp of one), printed as JAX prints them.
NN_SAME_AS_JAX = ["relu", "relu6", "sigmoid", "softplus", "silu", "swish", "gelu", "log_sigmoid",
                  "mish", "hard_sigmoid", "hard_silu", "soft_sign", "elu", "selu", "celu",
                  "leaky_relu",
                  "hard_tanh", "sparse_plus", "squareplus", "log1mexp", "softmax",
                  "log_softmax", "logsumexp", "standardize"]


@pytest.mark.parametrize("name", NN_SAME_AS_JAX)
def test_nn_activations_print_as_jax(name):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    got, want = _jaxprs(lambda api, jnp, lax: getattr(api.nn, name), x)
    assert got == want
    got, want = _jaxprs(lambda api, jnp, lax: api.grad(lambda x: api.nn.__dict__[name](x).sum()), x)
    assert got == want


def test_softmax_custom_jvp_option_gives_the_same_gradient():
    x = np.array([[0.5, -1.0, 2.0, np.inf], [1.0, 2.0, 3.0, 4.0]], np.float32)
    f = lambda x: gpuarr.nn.softmax(x)[:, 1:].sum()  # noqa: E731
    plain = gpuarr.grad(f)(x)
    with gpuarr.softmax_custom_jvp(True):
        custom = gpuarr.grad(f)(x)
        assert "custom_jvp_call" in str(gpuarr.make_jaxpr(f)(x))
    np.testing.assert_allclose(custom[1], plain[1], rtol=1e-5)
    assert np.isnan(np.asarray(gpuarr.nn.softmax(x)[0])).all()  # +inf in a row: NaN, as JAX


def _mlp_loss(api):
    jnp = api.numpy

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = api.nn.relu(h @ w + b)
        w, b = params[-1]
        return -jnp.mean(jnp.sum(api.nn.log_softmax(h @ w + b) * y, axis=-1))
    return loss


def test_an_mlp_loss_and_its_gradient_print_as_jax():
    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(4, 8)).astype(np.float32), np.zeros(8, np.float32)),
              (rng.normal(size=(8, 3)).astype(np.float32), np.zeros(3, np.float32))]
    x = rng.normal(size=(5, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1]]
    for transform in (lambda api, f: f, lambda api, f: api.grad(f)):
        got, want = _jaxprs(lambda api, jnp, lax: transform(api, _mlp_loss(api)), params, x, y)
        assert got == want


# jnp functions that are jits in JAX, under JAX's names and static arguments.
JNP_JITS_SAME_AS_JAX = {
    "rint": lambda jnp, x: jnp.rint(x), "isinf": lambda jnp, x: jnp.isinf(x),
    "fmod": lambda jnp, x: jnp.fmod(x, 0.3), "angle": lambda jnp, x: jnp.angle(x, deg=True),
    "diff": lambda jnp, x: jnp.diff(x, 2, axis=0, prepend=0.0),
    "count_nonzero": lambda jnp, x: jnp.count_nonzero(x > 0.5, axis=1, keepdims=True),
    "sort": lambda jnp, x: jnp.sort(x, axis=0, descending=True),
    "argsort": lambda jnp, x: jnp.argsort(x, stable=False),
    "atleast": lambda jnp, x: (jnp.atleast_1d(x[0, 0]), jnp.atleast_2d(x[0], x[1, 1])),
}


@pytest.mark.parametrize("name", sorted(JNP_JITS_SAME_AS_JAX))
def test_jnp_jits_print_as_jax(name):
    got, want = _jaxprs(lambda api, jnp, lax: lambda x: JNP_JITS_SAME_AS_JAX[name](jnp, x), F44)
    assert got == want


# Derivative rules written as JAX writes them (the same operations in the same order), so
# jvp and grad of each primitive print JAX's programs.
UNARY_DERIVATIVES = ["exp", "exp2", "log", "log1p", "expm1", "tanh", "tan", "sin", "cos",
                     "logistic", "sqrt", "rsqrt", "cbrt", "asin", "acos", "atan", "sinh",
                     "cosh", "asinh", "atanh", "lgamma", "digamma", "erf", "erfc", "erf_inv",
                     "bessel_i0e", "bessel_i1e", "square"]
X23 = np.linspace(0.1, 0.9, 6, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize("mode", ["jvp", "grad"])
@pytest.mark.parametrize("name", UNARY_DERIVATIVES + ["igamma", "igammac"])
def test_derivatives_print_as_jax(name, mode):
    def build(api, jnp, lax):
        f = getattr(lax, name)
        args = (X23,) if name in UNARY_DERIVATIVES else (X23 + 1, X23)
        if mode == "jvp":
            return lambda *xs: api.jvp(f, xs, xs)
        return api.grad(lambda *xs: f(*xs).sum(), tuple(range(len(args))))

    args = (X23,) if name in UNARY_DERIVATIVES else (X23 + 1, X23)
    got, want = _jaxprs(build, *args)
    assert got == want
