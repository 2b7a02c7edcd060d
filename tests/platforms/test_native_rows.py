"""Row reductions on the native platform: several partial results per row
(kernels/reduction_lanes.cu) for every order-free reducer, and row reductions sharing their rows
run row by row in one launch (gpuarr/compiler/row_groups.py: softmax, layer norm). Results are
compared with the NumPy backend and with NumPy in float64."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.platforms import get_platform


@pytest.fixture
def plat(native_platform):
    return native_platform


@pytest.fixture
def x64():
    """64-bit types on for one test (float64 rows keep 32 lanes, float32 rows 64)."""
    old = bool(gpuarr.config.jax_enable_x64)
    gpuarr.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        gpuarr.config.update("jax_enable_x64", old)


def compile_both(plat, f, *args):
    closed = gpuarr.make_jaxpr(f)(*args)
    return plat.compile(closed), get_platform("cpu").compile_numpy(closed)


def launches(run):
    return [s for s in run.launch_plan.steps if s.kind == "launch"]


CASES = [("sum", np.float32, (6, 1000)), ("sum", np.float32, (3, 64)), ("sum", np.float32, (5, 77)),
         ("sum", np.float64, (4, 333)), ("sum", np.int32, (4, 500)), ("max", np.float32, (6, 300)),
         ("min", np.float64, (3, 129)), ("prod", np.float32, (4, 200)), ("max", np.int64, (5, 90)),
         ("any", np.bool_, (4, 300)), ("all", np.bool_, (4, 300))]


@pytest.mark.parametrize("op,dtype,shape", CASES, ids=[f"{o}-{np.dtype(d).name}-{s}"
                                                       for o, d, s in CASES])
def test_a_row_reduction_keeps_lanes_and_matches(plat, x64, op, dtype, shape):
    rng = np.random.default_rng(sum(shape))
    if dtype == np.bool_:
        x = rng.random(shape) < (0.995 if op == "all" else 0.005)
    elif op == "prod":
        x = (1 + rng.standard_normal(shape) * 0.01).astype(dtype)
    else:
        x = (rng.standard_normal(shape) * 100).astype(dtype)
    x.flat[7] = np.nan if np.dtype(dtype).kind == "f" and op != "prod" else x.flat[7]
    run, ref = compile_both(plat, lambda x: getattr(jnp, op)(x, axis=1), x)
    assert any("(lanes)" in s.source for s in launches(run))
    (got,), (want,) = run(x), ref(x)
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape == shape[:1] and got.dtype == want.dtype
    exact = getattr(np, op)(x.astype(np.float64) if np.dtype(dtype).kind == "f" else x, axis=1)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-3, equal_nan=True)
        np.testing.assert_allclose(got, exact, rtol=2e-6, atol=1e-3, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, exact)


def softmax(np_, x):
    m = np_.max(x, axis=1, keepdims=True)
    e = np_.exp(x - m)
    return e / np_.sum(e, axis=1, keepdims=True)


def layer_norm(np_, x):
    mean = np_.mean(x, axis=1, keepdims=True)
    var = np_.mean((x - mean) ** 2, axis=1, keepdims=True)
    return (x - mean) / np_.sqrt(var + 1e-5)


@pytest.mark.parametrize("f", [softmax, layer_norm])
def test_row_reductions_sharing_rows_run_as_one_launch(plat, f):
    x = np.random.default_rng(3).standard_normal((67, 500)).astype(np.float32) * 3 + 1
    x[2, 9] = np.inf
    x[5, 3] = np.nan
    run, ref = compile_both(plat, lambda x: f(jnp, x), x)
    (launch,) = launches(run)
    assert launch.name.endswith("_rows") and "_rows_run(" in launch.source
    (got,), (want,) = run(x), ref(x)
    assert got.shape == want.shape == x.shape and got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        exact = f(np, x.astype(np.float64))
    np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_a_reduction_reading_other_rows_of_the_first_stays_a_launch_of_its_own(plat):
    x = np.random.default_rng(4).standard_normal((40, 300)).astype(np.float32)

    def f(x):   # the sum of row o reads the max of row 39 - o
        m = jnp.max(x, axis=1)[::-1]
        return jnp.sum(jnp.exp(x - m[:, None]), axis=1)
    run, ref = compile_both(plat, f, x)
    assert len(launches(run)) == 2
    (got,), (want,) = run(x), ref(x)
    np.testing.assert_allclose(got, want, rtol=2e-6)
    xd = x.astype(np.float64)
    np.testing.assert_allclose(got, np.exp(xd - xd.max(1)[::-1, None]).sum(1), rtol=1e-5)


def test_a_row_group_splits_over_threads(plat, monkeypatch):
    from gpuarr.backends import native
    monkeypatch.setattr(native, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("GPUARR_NATIVE_THREADS", "3")
    x = np.random.default_rng(5).standard_normal((1000, 256)).astype(np.float32)
    run, ref = compile_both(plat, lambda x: softmax(jnp, x), x)
    (got,), (want,) = run(x), ref(x)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
