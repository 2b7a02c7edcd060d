"""conv_general_dilated and reduce_window against loop-based NumPy references (float64) and JAX,
with gradients by finite differences and vmap against a Python loop."""
import itertools

import numpy as np
import pytest
from helpers import allclose, check_grads_x64, rand

import gpuarr as jax
from gpuarr import lax


def loop_vmap(f, *args):
    return np.stack([np.asarray(f(*[a[i] for a in args])) for i in range(len(args[0]))])


def _dilate_pad(x, padding, dilation):
    """Zero-interleave the spatial dims of x (N, C, ...) by `dilation`, then pad/crop."""
    for k, d in enumerate(dilation):
        ax = 2 + k
        n = x.shape[ax]
        shape = list(x.shape)
        shape[ax] = (n - 1) * d + 1 if n else 0
        y = np.zeros(shape, x.dtype)
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(None, None, d)
        y[tuple(idx)] = x
        x = y
    for k, (lo, hi) in enumerate(padding):
        ax = 2 + k
        pads = [(0, 0)] * x.ndim
        pads[ax] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, pads)
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(max(-lo, 0), x.shape[ax] - max(-hi, 0))
        x = x[tuple(idx)]
    return x


def ref_conv(x, w, strides, padding, lhs_dil, rhs_dil, groups=1):
    """Direct loops in NCHW / OIHW layout, float64."""
    x = _dilate_pad(x.astype(np.float64), padding, lhs_dil)
    w = _dilate_pad(w.astype(np.float64), [(0, 0)] * len(rhs_dil), rhs_dil)
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    k = w.shape[2:]
    out_sp = [(s - kk) // st + 1 for s, kk, st in zip(x.shape[2:], k, strides)]
    out = np.zeros([n, o] + out_sp)
    per = o // groups
    for pos in itertools.product(*[range(s) for s in out_sp]):
        sl = tuple(slice(p * st, p * st + kk) for p, st, kk in zip(pos, strides, k))
        patch = x[(slice(None), slice(None)) + sl]
        for oc in range(o):
            g = oc // per
            out[(slice(None), oc) + pos] = np.sum(patch[:, g * i:(g + 1) * i] * w[oc], axis=tuple(
                range(1, patch.ndim)))
    return out


CONV_CASES = [
    dict(window_strides=(1, 1), padding="VALID"),
    dict(window_strides=(2, 1), padding="SAME"),
    dict(window_strides=(1, 2), padding=((1, 2), (0, 1)), lhs_dilation=(2, 1), rhs_dilation=(1, 2)),
    dict(window_strides=(1, 1), padding=((-1, 1), (2, 0))),
    dict(window_strides=(1, 1), padding="SAME", feature_group_count=2),
    dict(window_strides=(3, 2), padding="SAME_LOWER", rhs_dilation=(2, 1)),
]


def _conv_args(case):
    x = rand((2, 4, 7, 6))
    w = rand((6, 4 // case.get("feature_group_count", 1), 3, 2), seed=1)
    return x, w


def _explicit_pads(case, x, w):
    pad = case["padding"]
    if not isinstance(pad, str):
        return pad
    eff = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], case.get("rhs_dilation", (1, 1)))]
    return lax.padtype_to_pads(x.shape[2:], eff, case["window_strides"], pad)


@pytest.mark.parametrize("case", CONV_CASES, ids=range(len(CONV_CASES)))
def test_conv_values_against_loops(case):
    x, w = _conv_args(case)
    got = lax.conv_general_dilated(x, w, **case)
    want = ref_conv(x, w, case["window_strides"], _explicit_pads(case, x, w),
                    case.get("lhs_dilation", (1, 1)), case.get("rhs_dilation", (1, 1)),
                    case.get("feature_group_count", 1))
    allclose(got, want, 1e-4)
    assert np.asarray(got).dtype == np.float32


@pytest.mark.parametrize("case", CONV_CASES, ids=range(len(CONV_CASES)))
def test_conv_grads_and_vmap(case):
    x, w = _conv_args(case)
    x, w = x[:1, :, :5, :4], w
    check_grads_x64(lambda x, w: lax.conv_general_dilated(x, w, **case), (x, w), order=1,
                modes=("rev",), atol=1e-3, rtol=1e-3)
    xs, ws = np.stack([x, 2 * x]), np.stack([w, -w])
    f = lambda x, w: lax.conv_general_dilated(x, w, **case)  # noqa: E731
    allclose(jax.vmap(f)(xs, ws), loop_vmap(f, xs, ws), 1e-4)
    allclose(jax.vmap(f, (0, None))(xs, w), loop_vmap(lambda x: f(x, w), xs), 1e-4)
    allclose(jax.vmap(f, (None, 0))(x, ws), loop_vmap(lambda w: f(x, w), ws), 1e-4)


def test_conv_dimension_numbers_strings_and_helpers():
    x = rand((2, 7, 6, 4))   # NHWC
    w = rand((3, 2, 4, 5))   # HWIO
    got = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    want = ref_conv(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), (1, 1),
                    lax.padtype_to_pads((7, 6), (3, 2), (1, 1), "SAME"), (1, 1), (1, 1))
    allclose(got, want.transpose(0, 2, 3, 1), 1e-4)
    xn, wn = x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)
    explicit = lax.conv_general_dilated(xn, wn, (1, 1), "VALID",
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))
    allclose(lax.conv(xn, wn, (1, 1), "VALID"), explicit, 1e-4)
    allclose(lax.conv_with_general_padding(xn, wn, (1, 1), ((1, 1), (0, 0)), (1, 1), (2, 1)),
             ref_conv(xn, wn, (1, 1), ((1, 1), (0, 0)), (1, 1), (2, 1)), 1e-4)
    dn = lax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    check_grads_x64(lambda w: lax.conv_general_dilated(x[:1, :4, :4].astype(np.float64), w, (2, 1), "SAME",
                                                   dimension_numbers=("NHWC", "HWIO", "NHWC")),
                (w,), order=1, modes=("rev",), atol=1e-3, rtol=1e-3)


def test_conv_errors():
    x, w = rand((1, 4, 5, 5)), rand((2, 3, 3, 3))
    with pytest.raises(ValueError, match="feature dimension"):
        lax.conv(x, w, (1, 1), "SAME")
    with pytest.raises(TypeError, match="same dtype"):
        lax.conv(x, w.astype(np.float16)[:, :1].repeat(4, 1), (1, 1), "SAME")
    with pytest.raises(TypeError, match="dimension_numbers"):
        lax.conv_general_dilated(x, rand((2, 4, 3, 3)), (1, 1), "SAME",
                                 dimension_numbers=("NCHW", "OIHW"))
    with pytest.raises(TypeError, match="exactly once"):
        lax.conv_general_dilated(x, rand((2, 4, 3, 3)), (1, 1), "SAME",
                                 dimension_numbers=("NCHW", "OOHW", "NCHW"))
    with pytest.raises(RuntimeError, match="padding type"):
        lax.conv(x, rand((2, 4, 3, 3)), (1, 1), "FULL")


def test_conv_matches_jax_with_groups_and_batch_groups():
    jjax = pytest.importorskip("jax")
    x, w = rand((4, 4, 6, 5)), rand((6, 2, 3, 2), seed=1)
    kw = dict(window_strides=(1, 2), padding="SAME", feature_group_count=2)
    allclose(lax.conv_general_dilated(x, w, **kw), jjax.lax.conv_general_dilated(x, w, **kw), 1e-4)
    f = lambda w: (lax.conv_general_dilated(x, w, **kw) ** 2).sum()  # noqa: E731
    jf = lambda w: (jjax.lax.conv_general_dilated(x, w, **kw) ** 2).sum()  # noqa: E731
    allclose(jax.grad(f)(w), jjax.grad(jf)(w), 1e-3)
    wb = rand((6, 4, 3, 2), seed=2)
    kb = dict(window_strides=(1, 1), padding="VALID", batch_group_count=2)
    allclose(lax.conv_general_dilated(x, wb, **kb), jjax.lax.conv_general_dilated(x, wb, **kb), 1e-4)


# ---------------------------------------------------------------- reduce_window


def ref_reduce_window(x, kind, dims, strides, padding, base_dil, win_dil):
    ident = {"sum": 0.0, "max": -np.inf, "min": np.inf}[kind]
    x = x.astype(np.float64)[None, None]
    # Interleave with the identity (not zero) for base dilation, then pad with the identity.
    y = x
    for k, d in enumerate(base_dil):
        ax = 2 + k
        n = y.shape[ax]
        shape = list(y.shape)
        shape[ax] = (n - 1) * d + 1
        z = np.full(shape, ident)
        idx = [slice(None)] * y.ndim
        idx[ax] = slice(None, None, d)
        z[tuple(idx)] = y
        y = z
    xp = np.pad(y, [(0, 0), (0, 0)] + [tuple(p) for p in padding], constant_values=ident)[0, 0]
    eff = [(w - 1) * d + 1 for w, d in zip(dims, win_dil)]
    out_shape = [(s - e) // st + 1 for s, e, st in zip(xp.shape, eff, strides)]
    out = np.zeros(out_shape)
    red = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    for pos in itertools.product(*[range(s) for s in out_shape]):
        sl = tuple(slice(p * st, p * st + e, d) for p, st, e, d in zip(pos, strides, eff, win_dil))
        out[pos] = red(xp[sl])
    return out


RW_CASES = [
    dict(window_dimensions=(2, 3), window_strides=(1, 2), padding="SAME"),
    dict(window_dimensions=(3, 1), window_strides=(2, 1), padding="VALID"),
    dict(window_dimensions=(2, 2), window_strides=(1, 1), padding=((1, 0), (2, 1)),
         base_dilation=(2, 1), window_dilation=(1, 2)),
]
COMPUTATIONS = {"sum": (lax.add, 0.0), "max": (lax.max, -np.inf), "min": (lax.min, np.inf)}


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("case", RW_CASES, ids=range(len(RW_CASES)))
def test_reduce_window(kind, case):
    comp, init = COMPUTATIONS[kind]
    x = rand((5, 6))
    got = lax.reduce_window(x, init, comp, **case)
    pads = case["padding"]
    if isinstance(pads, str):
        pads = lax.padtype_to_pads(x.shape, case["window_dimensions"], case["window_strides"], pads)
    want = ref_reduce_window(x, kind, case["window_dimensions"], case["window_strides"], pads,
                             case.get("base_dilation", (1, 1)), case.get("window_dilation", (1, 1)))
    allclose(got, want, 1e-4)
    assert np.asarray(got).dtype == np.float32
    xd = np.random.RandomState(3).permutation(30).reshape(5, 6).astype(np.float64) * 0.37
    check_grads_x64(lambda x: lax.reduce_window(x, init, comp, **case), (xd,), order=1,
                atol=1e-3, rtol=1e-3)
    xs = np.stack([x, -x, 2 * x])
    f = lambda x: lax.reduce_window(x, init, comp, **case)  # noqa: E731
    allclose(jax.vmap(f)(xs), loop_vmap(f, xs), 1e-4)


def test_reduce_window_ints_init_and_errors():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = lax.reduce_window(x, np.iinfo(np.int32).min, lax.max, (2, 2), (1, 1), "VALID")
    allclose(got, np.array([[5, 6, 7], [9, 10, 11]]), 1e-4)
    assert np.asarray(got).dtype == np.int32
    got = lax.reduce_window(x, 100, lax.add, (1, 2), (1, 2), "VALID")
    allclose(got, np.array([[101, 105], [109, 113], [117, 121]]), 1e-4)
    assert np.asarray(got).dtype == np.int32
    got = lax.reduce_window(x, 2, lax.mul, (1, 2), (1, 2), "VALID")
    allclose(got, 2 * x[:, ::2] * x[:, 1::2], 1e-4)
    assert np.asarray(got).dtype == np.int32
    with pytest.raises(TypeError, match="window_strides"):
        lax.reduce_window(x, 0, lax.add, (1, 1), (1,), "VALID")


GENERIC_WINDOWS = {
    "product": lambda lax, x: lax.reduce_window(x, 1.0, lambda a, b: a * b, (2, 2), (1, 1),
                                                "VALID"),
    "product SAME, strided, dilated": lambda lax, x: lax.reduce_window(
        x, 1.0, lambda a, b: a * b, (2, 2), (2, 1), "SAME", (1, 2), (1, 2)),
    "pytree of operands": lambda lax, x: lax.reduce_window(
        (x, (x * 10).astype(np.int32)), (1.0, 0), lambda a, b: (a[0] * b[0], a[1] + b[1]),
        (2, 2), (1, 1), ((1, 0), (0, 1))),
    "traced init value": lambda lax, x: lax.reduce_window(
        x, x[0, 0], lambda a, b: lax.max(a, b) - 0.5, (3, 1), None, "VALID"),
    "init tree differs": lambda lax, x: lax.reduce_window((x, x), (1.0,), lambda a, b: a,
                                                          (2, 2), (1, 1), "VALID"),
    "init not scalar": lambda lax, x: lax.reduce_window(x, np.ones(2, np.float32),
                                                        lambda a, b: a * b, (2, 2)),
    "output tree differs": lambda lax, x: lax.reduce_window(x, 1.0, lambda a, b: (a * b, a),
                                                            (2, 2), (1, 1), "VALID"),
}


@pytest.mark.parametrize("case", list(GENERIC_WINDOWS.values()), ids=list(GENERIC_WINDOWS))
def test_reduce_window_of_any_computation_matches_jax(case):
    jjax = pytest.importorskip("jax")

    def run(lax_module):
        x = np.linspace(0.5, 2.0, 12, dtype=np.float32).reshape(3, 4)
        try:
            return "ok", jax.tree_util.tree_leaves(case(lax_module, x))
        except (TypeError, ValueError) as e:  # the error itself is compared
            return "err", type(e).__name__, str(e)

    got, want = run(lax), run(jjax.lax)
    assert got[0] == want[0], (got, want)
    if got[0] == "err":
        assert got[1:] == want[1:]
        return
    for g, w in zip(got[1], want[1], strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        allclose(g, np.asarray(w), 1e-6)


def test_reduce_window_of_any_computation_differentiates_and_batches():
    def f(x):
        return lax.reduce_window(x, 1.0, lambda a, b: a * b, (2, 2), (1, 1), "SAME")

    x = rand((3, 4), seed=3) + 1.5
    check_grads_x64(f, (x,), order=1)
    xs = rand((2, 3, 4), seed=4)
    allclose(jax.vmap(f)(xs), loop_vmap(f, xs), 1e-5)
