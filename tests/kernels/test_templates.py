"""Hand-built kernel plans: render -> NVRTC (sm_90) -> PoCL, compared with NumPy."""
import numpy as np
import pytest

from gpuarr.compiler import lowering, render
from gpuarr.compiler.plan import (
    Acc,
    Arg,
    Const,
    ElementwiseKernel,
    Gather,
    IndexMap,
    Iota,
    Load,
    Op,
    ReductionKernel,
    ScatterKernel,
    Store,
)

pytestmark = pytest.mark.kernels
rng = np.random.default_rng(0)


def unary_kernel(op, dtype, out_dtype=None, n=37, attrs=()):
    out_dtype = out_dtype or dtype
    return ElementwiseKernel(
        f"k_{op}", (n,), (Arg("x", dtype, n), Arg("out", out_dtype, n, True)),
        (Load("x", IndexMap.contiguous((n,)), dtype), Op(op, (0,), out_dtype, attrs, f"y = {op} x")),
        (Store("out", 1),), (f"y = {op} x",))


def binary_kernel(op, dtype, out_dtype=None, n=37):
    out_dtype = out_dtype or dtype
    m = IndexMap.contiguous((n,))
    return ElementwiseKernel(
        f"k_{op}", (n,), (Arg("x", dtype, n), Arg("y", dtype, n), Arg("out", out_dtype, n, True)),
        (Load("x", m, dtype), Load("y", m, dtype), Op(op, (0, 1), out_dtype)), (Store("out", 2),))


FLOAT_UNARY = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh, "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "neg": np.negative,
    "log1p": np.log1p, "expm1": np.expm1, "sign": np.sign, "round_even": np.rint,
    "atan": np.arctan, "logistic": lambda x: 1 / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
def test_float_unary(run_kernel, op, dtype):
    x = (rng.random(37) * 3 + 0.1).astype(dtype)
    got = run_kernel(unary_kernel(op, dtype), {"x": x}, {"out": np.zeros(37, dtype)})["out"]
    np.testing.assert_allclose(got, FLOAT_UNARY[op](x), rtol=2e-6 if dtype == "float32" else 1e-13)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
          "min": np.minimum}


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "int64"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(run_kernel, op, dtype):
    x = rng.integers(0, 100, 37).astype(dtype)
    y = rng.integers(0, 100, 37).astype(dtype)
    got = run_kernel(binary_kernel(op, dtype), {"x": x, "y": y}, {"out": np.zeros(37, dtype)})["out"]
    np.testing.assert_array_equal(got, BINARY[op](x, y))


def test_nan_propagating_max(run_kernel):
    x = np.array([np.nan, 1, 2, np.nan], np.float32)
    y = np.array([1, np.nan, 3, np.nan], np.float32)
    got = run_kernel(binary_kernel("max", "float32", n=4), {"x": x, "y": y},
                     {"out": np.zeros(4, np.float32)})["out"]
    np.testing.assert_array_equal(got, np.maximum(x, y))


@pytest.mark.parametrize("op,ref", [("lt", np.less), ("eq", np.equal), ("ge", np.greater_equal)])
def test_compare(run_kernel, op, ref):
    x = rng.integers(0, 5, 37).astype(np.float32)
    y = rng.integers(0, 5, 37).astype(np.float32)
    got = run_kernel(binary_kernel(op, "float32", "bool"), {"x": x, "y": y},
                     {"out": np.zeros(37, bool)})["out"]
    np.testing.assert_array_equal(got, ref(x, y))


def test_integer_division_follows_xla(run_kernel):
    x = np.array([7, -7, 7, -2**31, 5], np.int32)
    y = np.array([2, 2, 0, -1, -3], np.int32)
    got = run_kernel(binary_kernel("div", "int32", n=5), {"x": x, "y": y},
                     {"out": np.zeros(5, np.int32)})["out"]
    np.testing.assert_array_equal(got, [3, -3, -1, -2**31, -1])
    got = run_kernel(binary_kernel("rem", "int32", n=5), {"x": x, "y": y},
                     {"out": np.zeros(5, np.int32)})["out"]
    np.testing.assert_array_equal(got, [1, -1, 7, 0, 2])


def test_saturating_float_to_int(run_kernel):
    x = np.arange(254.0, 258.0, dtype=np.float32)
    got = run_kernel(unary_kernel("convert", "float32", "uint8", n=4), {"x": x},
                     {"out": np.zeros(4, np.uint8)})["out"]
    np.testing.assert_array_equal(got, [254, 255, 255, 255])
    x = np.array([np.nan, -np.inf, np.inf, 3e9, -3e9, -1.5, 2.7], np.float32)
    got = run_kernel(unary_kernel("convert", "float32", "int32", n=7), {"x": x},
                     {"out": np.zeros(7, np.int32)})["out"]
    np.testing.assert_array_equal(got, [0, -2**31, 2**31 - 1, 2**31 - 1, -2**31, -1, 2])


def test_denormals_are_preserved(run_kernel):
    x = np.array([1e-40, -3e-42, 1e-45], np.float32)
    got = run_kernel(unary_kernel("neg", "float32", n=3), {"x": x}, {"out": np.zeros(3, np.float32)})
    np.testing.assert_array_equal(got["out"], -x)


def test_integer_pow(run_kernel):
    x = (rng.random(37) + 0.5).astype(np.float32)
    for y in (0, 1, 2, 3, 7, -2):
        got = run_kernel(unary_kernel("integer_pow", "float32", attrs=(y,)), {"x": x},
                         {"out": np.zeros(37, np.float32)})["out"]
        np.testing.assert_allclose(got, x.astype(np.float64) ** y, rtol=1e-6)


def test_broadcast_transpose_reshape_index_maps(run_kernel):
    """out[i, j, k] = x.T.reshape(...)[...] + y broadcast along two dims, without copies."""
    x = rng.random((2, 3, 4)).astype(np.float32)
    y = rng.random((3,)).astype(np.float32)
    xm = IndexMap.contiguous((2, 3, 4)).transpose((0, 2, 1)).reshape((4, 2, 3))  # two views
    ym = IndexMap.contiguous((3,)).broadcast((4, 2, 3), (2,))
    assert len(xm.views) == 2
    k = ElementwiseKernel(
        "k_maps", (4, 2, 3), (Arg("x", "float32", 24), Arg("y", "float32", 3),
                              Arg("out", "float32", 24, True)),
        (Load("x", xm, "float32"), Load("y", ym, "float32"), Op("mul", (0, 1), "float32")),
        (Store("out", 2),))
    got = run_kernel(k, {"x": x, "y": y}, {"out": np.zeros((4, 2, 3), np.float32)})["out"]
    np.testing.assert_allclose(got, x.transpose(0, 2, 1).reshape(4, 2, 3) * y, rtol=1e-6)


def test_reshape_of_transpose_merges_when_it_can():
    m = IndexMap.contiguous((2, 3, 4)).transpose((2, 0, 1)).reshape((4, 6))
    assert len(m.views) == 1 and m.views[0].strides == (1, 4)


def test_slice_rev_iota(run_kernel):
    x = rng.random((5, 8)).astype(np.float32)
    xm = IndexMap.contiguous((5, 8)).slice((1, 0), (5, 8), (2, 3)).rev((1,))
    shape = xm.shape
    k = ElementwiseKernel(
        "k_slice", shape, (Arg("x", "float32", 40), Arg("out", "float32", 6, True)),
        (Load("x", xm, "float32"), Iota(shape, 1, IndexMap.contiguous(shape), "float32"),
         Op("add", (0, 1), "float32")), (Store("out", 2),))
    got = run_kernel(k, {"x": x}, {"out": np.zeros(shape, np.float32)})["out"]
    np.testing.assert_allclose(got, x[1:5:2, 0:8:3][:, ::-1] + np.arange(shape[1]), rtol=1e-6)


def threefry_reference(k0, k1, x0, x1):
    rot = [13, 15, 26, 6, 17, 29, 16, 24]
    ks = [k0, k1, k0 ^ k1 ^ 0x1BD11BDA]
    m = 0xFFFFFFFF
    x0, x1 = (x0 + ks[0]) & m, (x1 + ks[1]) & m
    for block in range(5):
        for r in range(4):
            x0 = (x0 + x1) & m
            s = rot[(block % 2) * 4 + r]
            x1 = ((x1 << s) | (x1 >> (32 - s))) & m
            x1 ^= x0
        x0 = (x0 + ks[(block + 1) % 3]) & m
        x1 = (x1 + ks[(block + 2) % 3] + block + 1) & m
    return x0, x1


def test_threefry(run_kernel):
    n = 8
    m = IndexMap.contiguous((n,))
    nodes = (Const(0, "uint32"), Const(42, "uint32"), Iota((n,), 0, m, "uint32"),
             Const(0, "uint32"), Op("threefry2x32", (0, 1, 3, 2), "uint32"),
             Op("proj", (4,), "uint32", (0,)), Op("proj", (4,), "uint32", (1,)))
    k = ElementwiseKernel("k_threefry", (n,), (Arg("a", "uint32", n, True), Arg("b", "uint32", n, True)),
                          nodes, (Store("a", 5), Store("b", 6)))
    got = run_kernel(k, {}, {"a": np.zeros(n, np.uint32), "b": np.zeros(n, np.uint32)})
    ref = [threefry_reference(0, 42, 0, i) for i in range(n)]
    np.testing.assert_array_equal(got["a"], [r[0] for r in ref])
    np.testing.assert_array_equal(got["b"], [r[1] for r in ref])
    # JAX's known answer: threefry_2x32((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3)).
    assert threefry_reference(0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3) == (0xC4923A9C, 0x483DF7A0)


def reduction(op, shape, axes, dtype="float32", strategy=None, name="k_red"):
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    perm = kept + tuple(axes)
    out_shape = tuple(shape[d] for d in kept)
    red_shape = tuple(shape[d] for d in axes)
    size = int(np.prod(shape))
    xm = IndexMap.contiguous(shape).transpose(perm)
    if strategy is None:
        strategy = "row" if perm == tuple(range(len(shape))) else "column"
    return ReductionKernel(
        name, out_shape, red_shape,
        (Arg("x", dtype, size), Arg("out", dtype, max(1, int(np.prod(out_shape))), True)),
        op, dtype, lowering.reduce_identity(op, dtype), (Load("x", xm, dtype),), 0,
        (Acc(dtype),), (Store("out", 0),), strategy=strategy)


REDUCERS = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


@pytest.mark.parametrize("strategy", ["row", "column"])
@pytest.mark.parametrize("shape,axes", [((7, 300), (1,)), ((300, 7), (0,)), ((4, 5, 6), (0, 2)),
                                        ((1000,), (0,)), ((3, 1, 4), (1,))])
@pytest.mark.parametrize("op", sorted(REDUCERS))
def test_reductions(run_kernel, op, shape, axes, strategy):
    x = (rng.random(shape) + 0.5).astype(np.float32)
    k = reduction(op, shape, axes, strategy=strategy)
    out_shape = k.shape
    got = run_kernel(k, {"x": x}, {"out": np.zeros(out_shape, np.float32)})["out"]
    np.testing.assert_allclose(got, REDUCERS[op](x, axis=axes), rtol=1e-4)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "int64", "float64"])
def test_integer_reductions(run_kernel, dtype):
    x = rng.integers(0, 3, (9, 70)).astype(dtype)
    for op, ref in [("max", np.max), ("min", np.min)] + ([("sum", np.sum)] if dtype != "bool" else
                                                        [("and", np.all), ("or", np.any)]):
        k = reduction(op, (9, 70), (1,), dtype)
        got = run_kernel(k, {"x": x}, {"out": np.zeros(9, dtype)})["out"]
        np.testing.assert_array_equal(got, ref(x, axis=1).astype(dtype))


def test_softmax_as_two_kernels(run_kernel):
    """Kernel 1: row max. Kernel 2: sum of exp(x - m), then an epilogue writing exp(x - m) / s."""
    x = rng.standard_normal((6, 50)).astype(np.float32)
    mx = run_kernel(reduction("max", (6, 50), (1,)), {"x": x}, {"out": np.zeros(6, np.float32)})["out"]
    it = IndexMap.contiguous((6, 50))
    mm = IndexMap.contiguous((6,)).broadcast((6, 50), (0,))
    pre = (Load("x", it, "float32"), Load("m", mm, "float32"), Op("sub", (0, 1), "float32"),
           Op("exp", (2,), "float32"))
    epi = pre + (Acc("float32"), Op("div", (3, 4), "float32"))
    k = ReductionKernel("k_softmax", (6,), (50,), (Arg("x", "float32", 300), Arg("m", "float32", 6),
                                                   Arg("out", "float32", 300, True)),
                        "sum", "float32", 0.0, pre, 3, epilogue_nodes=epi,
                        epilogue_stores=(Store("out", 5),))
    got = run_kernel(k, {"x": x, "m": mx}, {"out": np.zeros((6, 50), np.float32)})["out"]
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_fused_load(run_kernel, mode):
    """out[b, w] = operand[idx[b] + w, :][col]: a (2-wide) row window gathered per batch index."""
    operand = rng.random((10, 3)).astype(np.float32)
    idx = np.array([0, 3, 9, -2, 8], np.int32)
    shape = (5, 2, 3)
    it = IndexMap.contiguous(shape)
    nodes = (Load("idx", IndexMap.contiguous((5,)).broadcast(shape, (0,)), "int32"),
             Iota(shape, 1, it, "int32"), Iota(shape, 2, it, "int32"),
             Gather("operand", (10, 3), (2, 3), (0, None), (1, 2), mode, np.nan, "float32"),
             Op("mul", (3, 3), "float32"))
    k = ElementwiseKernel("k_gather", shape, (Arg("operand", "float32", 30), Arg("idx", "int32", 5),
                                              Arg("out", "float32", 30, True)), nodes, (Store("out", 4),))
    got = run_kernel(k, {"operand": operand, "idx": idx}, {"out": np.zeros(shape, np.float32)})["out"]
    want = np.empty(shape, np.float32)
    for b, s in enumerate(idx):
        if mode == "clip":
            s = min(max(s, 0), 8)
        elif not 0 <= s <= 8:
            want[b] = np.nan
            continue
        want[b] = operand[s:s + 2] ** 2
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("deterministic", [False, True])
@pytest.mark.parametrize("combiner", ["add", "set", "max", "mul"])
@pytest.mark.parametrize("mode", ["drop", "clip"])
def test_scatter(run_kernel, combiner, mode, deterministic):
    """operand[idx[b], :] (combine)= updates[b, :], with repeated and out-of-bounds indices."""
    operand = rng.random((6, 4)).astype(np.float32)
    idx = np.array([[1], [3], [1], [7], [-1], [5]], np.int32)
    updates = rng.random((6, 4)).astype(np.float32)
    k = ScatterKernel("k_scatter", "float32", "int32", (6, 4), (6, 4), (6, 1), (1,), (0,), (0,),
                      combiner, mode, deterministic)
    got = run_kernel(k, {"updates": updates, "indices": idx}, {"out": operand.copy()})["out"]
    want = operand.copy()
    for b, (i,) in enumerate(idx):
        if mode == "clip":
            i = min(max(i, 0), 5)
        elif not 0 <= i < 6:
            continue
        a, u = want[i], updates[b]
        want[i] = {"add": a + u, "set": u, "max": np.maximum(a, u), "mul": a * u}[combiner]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scatter_int_atomic_add(run_kernel):
    operand = np.zeros(5, np.int32)
    idx = rng.integers(0, 5, (100, 1)).astype(np.int32)
    k = ScatterKernel("k_scatter_i", "int32", "int32", (5,), (100,), (100, 1), (), (0,), (0,),
                      "add", "drop", False)
    got = run_kernel(k, {"updates": np.ones(100, np.int32), "indices": idx}, {"out": operand})["out"]
    np.testing.assert_array_equal(got, np.bincount(idx[:, 0], minlength=5))


def test_64_bit_indices_only_when_needed(have_nvrtc):
    from gpuarr.backends import nvrtc
    from gpuarr.compiler.render import render
    for n, t in [(1001, "i32"), (2**31 + 5, "i64")]:
        k = unary_kernel("exp", "float32", n=n)
        rk = render(k)
        assert f"GRID_STRIDE_LOOP({t}, i, {n})" in rk.source
        nvrtc.compile(rk.source, rk.name)


def test_same_text_for_both_dialects():
    from gpuarr.compiler.render import render
    text = render(unary_kernel("tanh", "float64")).source
    assert "#if defined(__OPENCL_VERSION__)" in text and "__global__" in text and "__kernel" in text
    body = text[text.index("// k_tanh"):]
    assert "y = tanh x" in body and "threadIdx" not in body and "get_global_id" not in body


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32"])
def test_contiguous_32_bit_operands_move_as_vectors(run_kernel, dtype):
    x = (rng.random(1000) * 50).astype(dtype)
    y = (rng.random(1000) * 50).astype(dtype)
    k = binary_kernel("add", dtype, n=1000)
    src = render.render(k).source
    assert "LOAD4" in src[src.index("KERNEL void"):] and "STORE4(" in src
    got = run_kernel(k, {"x": x, "y": y}, {"out": np.zeros(1000, dtype)})["out"]
    np.testing.assert_array_equal(got, x + y)


def test_vectors_only_where_legal(run_kernel):
    # Sizes that are not a multiple of 4 and 64-bit types keep the scalar loop.
    for k in (binary_kernel("add", "float32", n=1001), binary_kernel("add", "float64", n=1000)):
        body = render.render(k).source
        assert "LOAD4(" not in body[body.index("KERNEL void"):]
    # A broadcast operand is read per element while the contiguous one is a vector.
    x = rng.random((250, 4)).astype(np.float32)
    y = rng.random((4,)).astype(np.float32)
    k = ElementwiseKernel(
        "k_bcast", (250, 4), (Arg("x", "float32", 1000), Arg("y", "float32", 4),
                              Arg("out", "float32", 1000, True)),
        (Load("x", IndexMap.contiguous((250, 4)), "float32"),
         Load("y", IndexMap.contiguous((4,)).broadcast((250, 4), (1,)), "float32"),
         Op("mul", (0, 1), "float32")), (Store("out", 2),))
    src = render.render(k).source
    assert "LOAD4(f32x4, x, q)" in src and "LOAD4(f32x4, y" not in src
    got = run_kernel(k, {"x": x, "y": y}, {"out": np.zeros((250, 4), np.float32)})["out"]
    np.testing.assert_allclose(got, x * y, rtol=1e-6)


def test_complex64_parts(run_kernel):
    """real, imag, conj and complex on the dialects' c64 (a float2), in both directions."""
    n = 9
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    m = IndexMap.contiguous((n,))
    nodes = (Load("x", m, "complex64"), Op("real", (0,), "float32"), Op("imag", (0,), "float32"),
             Op("conj", (0,), "complex64"), Const(2.0, "float32"), Op("mul", (2, 4), "float32"),
             Op("complex", (1, 5), "complex64"), Op("mul", (3, 6), "complex64"))
    k = ElementwiseKernel("k_complex", (n,), (Arg("x", "complex64", n), Arg("re", "float32", n, True),
                                              Arg("z", "complex64", n, True)),
                          nodes, (Store("re", 1), Store("z", 7)))
    got = run_kernel(k, {"x": x}, {"re": np.zeros(n, np.float32), "z": np.zeros(n, np.complex64)})
    np.testing.assert_array_equal(got["re"], x.real)
    np.testing.assert_allclose(got["z"], np.conj(x) * (x.real + 2j * x.imag), rtol=1e-6)
