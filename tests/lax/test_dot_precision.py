"""The `precision=` argument of matrix products: canonical forms, dot algorithms and their
values on the NumPy backend, against JAX's CPU backend where JAX is installed and against
NumPy emulations of each algorithm otherwise."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr import lax
from gpuarr.lax import dot_precision
from gpuarr.lax.dot_precision import DotAlgorithm, DotAlgorithmPreset, Precision

RNG = np.random.default_rng(7)
A = RNG.normal(size=(5, 40)).astype(np.float32)
B = RNG.normal(size=(40, 3)).astype(np.float32)
CPU_PRESETS = ["DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32",
               "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"]
OTHER_PRESETS = [p.name for p in DotAlgorithmPreset if p.name not in CPU_PRESETS]


def _exact(x):
    return np.asarray(x, np.float64)


def test_canonical_forms():
    assert lax.Precision is Precision and lax.DotAlgorithmPreset is DotAlgorithmPreset
    canon = dot_precision.canonicalize_precision
    assert canon(None) is None
    assert canon("highest") == (Precision.HIGHEST, Precision.HIGHEST)
    assert canon("tensorfloat32") == (Precision.HIGH, Precision.HIGH)
    assert canon(Precision.DEFAULT) == (Precision.DEFAULT, Precision.DEFAULT)
    assert canon(("high", "fastest")) == (Precision.HIGH, Precision.DEFAULT)
    assert canon("F16_F16_F16") is DotAlgorithmPreset.F16_F16_F16
    alg = DotAlgorithm(np.float16, np.float16, np.float32)
    assert canon(alg) is alg
    assert repr(DotAlgorithmPreset.F64_F64_F64) == "DotAlgorithmPreset.F64_F64_F64"
    assert str(DotAlgorithmPreset.F64_F64_F64) == "F64_F64_F64"
    text = str(gpuarr.make_jaxpr(lambda a, b: lax.dot(a, b, precision="highest"))(A, B))
    assert "(Precision.HIGHEST, Precision.HIGHEST)" in text
    text = str(gpuarr.make_jaxpr(lambda a, b: gnp.matmul(a, b, precision="F16_F16_F16"))(A, B))
    assert "precision=F16_F16_F16" in text


@pytest.mark.parametrize("bad", ["bogus", 3, ("highest",), (Precision.HIGH, "high")])
def test_bad_precision_raises_value_error(bad):
    with pytest.raises(ValueError, match="Precision argument must be one of") as info:
        lax.dot(A, B, precision=bad)
    assert f"but got {bad}." in str(info.value)


def test_preset_properties():
    f16, f32, f64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
    assert DotAlgorithmPreset.F16_F16_F16.accumulation_type == f16
    assert DotAlgorithmPreset.F64_F64_F64.supported_lhs_types == (f64,)
    assert DotAlgorithmPreset.TF32_TF32_F32_X3.supported_rhs_types == (f32,)
    assert DotAlgorithmPreset.DEFAULT.accumulation_type is None
    assert DotAlgorithmPreset.F16_F16_F32.supported_output_types(f16, f16) == (f32, f16)
    assert DotAlgorithmPreset.F16_F16_F32.supported_output_types(f32, f32) == (f32,)
    assert dot_precision.algorithm_dtypes(DotAlgorithmPreset.F32_F32_F32, f16, f16, f16) == (
        f32, f32, f32)


def test_algorithms_against_numpy_emulation():
    # F16_F16_F16: operands rounded to float16, accumulated in float32, rounded once to float16.
    a16, b16 = A.astype(np.float16), B.astype(np.float16)
    want = (a16.astype(np.float32) @ b16.astype(np.float32)).astype(np.float16)
    got = np.asarray(lax.dot(A, B, precision="F16_F16_F16"))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want.astype(np.float32))
    # F64_F64_F64 on float32 operands: the product computed in float64, rounded once.
    got = np.asarray(gpuarr.jit(lambda a, b: lax.dot(a, b, precision="F64_F64_F64"))(A, B))
    np.testing.assert_array_equal(got, (_exact(A) @ _exact(B)).astype(np.float32))
    # The presets that compute float32 products give the default product.
    default = np.asarray(lax.dot(A, B))
    for name in ("F32_F32_F32", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6",
                 "DEFAULT"):
        np.testing.assert_allclose(np.asarray(lax.dot(A, B, precision=name)), default,
                                   rtol=1e-6, atol=1e-6)
    # Float16 operands under F32_F32_F32 accumulate in float32 and keep float16 results.
    got = lax.dot(a16, b16, precision="F32_F32_F32")
    assert got.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(got), (a16.astype(np.float32) @ b16.astype(
        np.float32)).astype(np.float16))


@pytest.mark.parametrize("name", OTHER_PRESETS)
def test_presets_the_cpu_does_not_run_raise(name):
    with pytest.raises(ValueError, match=f"The precision '{name}' is not supported by "
                                         "dot_general on CPU"):
        lax.dot(A, B, precision=name)
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        gpuarr.jit(lambda a, b: lax.dot(a, b, precision=name))(A, B)
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        lax.dot(A, B, precision=DotAlgorithm(np.float32, np.float32, np.float32))


def test_gpu_set_and_tf32_rounding():
    for preset in DotAlgorithmPreset:
        if preset.name.startswith("ANY_F8"):
            with pytest.raises(ValueError, match="on GPU"):
                dot_precision.check_supported(preset, "gpu")
        else:
            dot_precision.check_supported(preset, "gpu")
    dot_precision.check_supported(DotAlgorithm(np.float16, np.float16, np.float32), "gpu")
    with pytest.raises(ValueError, match="on GPU"):
        dot_precision.check_supported(DotAlgorithm(np.float32, np.float32, np.float32, 3, 3, 3),
                                      "gpu")
    # tensorfloat32 keeps 10 mantissa bits, rounding to nearest even: XLA's ReducePrecision.
    x = np.concatenate([RNG.normal(size=1000).astype(np.float32) * 1e3,
                        np.float32([1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -11 + 2 ** -20,
                                    3.4e38, -np.inf, np.inf, np.nan, 0.0, -0.0, 1e-40])])
    got = dot_precision.round_to_tf32(x)
    want = np.asarray(lax.reduce_precision(x, exponent_bits=8, mantissa_bits=10))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_grad_vmap_and_config_keep_the_algorithm():
    def loss(a):
        return lax.dot(a, B, precision="F16_F16_F16").sum()
    text = str(gpuarr.make_jaxpr(gpuarr.grad(loss))(A))
    assert text.count("precision=F16_F16_F16") == 2  # the transpose computes alike
    g = np.asarray(gpuarr.grad(loss)(A))
    want = np.broadcast_to(B.astype(np.float16).astype(np.float32).sum(1).astype(np.float16),
                           A.shape).astype(np.float32)
    np.testing.assert_array_equal(g, want)
    xs = RNG.normal(size=(4, 5, 40)).astype(np.float32)
    f = gpuarr.vmap(lambda a: lax.dot(a, B, precision="F16_F16_F16"))
    np.testing.assert_array_equal(np.asarray(f(xs)), np.stack(
        [np.asarray(lax.dot(x, B, precision="F16_F16_F16")) for x in xs]))
    f = gpuarr.jit(lambda a, b: a @ b)
    plain = np.asarray(f(A, B))
    with gpuarr.default_matmul_precision("F16_F16_F16"):
        rounded = np.asarray(f(A, B))  # traced again: the default is part of the cache key
    np.testing.assert_array_equal(rounded, np.asarray(lax.dot(A, B, precision="F16_F16_F16")))
    assert not np.array_equal(plain, rounded)
    with pytest.raises(ValueError, match="new enum value must be None or in"):
        gpuarr.config.update("jax_default_matmul_precision", "bogus")


def test_convolutions_accept_and_ignore_algorithms():
    x = RNG.normal(size=(1, 1, 6, 6)).astype(np.float32)
    k = RNG.normal(size=(1, 1, 3, 3)).astype(np.float32)
    plain = np.asarray(lax.conv(x, k, (1, 1), "SAME"))
    for name in ("F16_F16_F16", "TF32_TF32_F32"):
        np.testing.assert_array_equal(np.asarray(lax.conv(x, k, (1, 1), "SAME", precision=name)),
                                      plain)


# ---------------------------------------------------------------- against JAX


def _both(fn_gpuarr, fn_jax):
    out = []
    for fn in (fn_gpuarr, fn_jax):
        try:
            r = fn()
            out.append((np.dtype(r.dtype), np.asarray(r)))
        except ValueError as e:
            out.append(("ValueError", str(e).split("\n")[0]))
    return out


OPERANDS = {
    "f32": (A, B),
    "f16": (A.astype(np.float16), B.astype(np.float16)),
    "i32": (np.arange(12, dtype=np.int32).reshape(3, 4), np.arange(8, dtype=np.int32).reshape(4, 2)),
    "c64": ((A + 1j * A[::-1]).astype(np.complex64), (B - 2j * B).astype(np.complex64)),
}


@pytest.mark.parametrize("operands", sorted(OPERANDS))
@pytest.mark.parametrize("name", [p.name for p in DotAlgorithmPreset] + ["highest"])
def test_presets_match_jax(name, operands):
    jax = pytest.importorskip("jax")
    x, y = OPERANDS[operands]
    (gd, gv), (jd, jv) = _both(lambda: lax.dot(x, y, precision=name),
                               lambda: jax.lax.dot(x, y, precision=name))
    assert gd == jd
    if gd == "ValueError":
        assert gv == jv
    else:
        np.testing.assert_allclose(gv, jv, rtol=2e-6 if operands != "f16" else 1e-3, atol=1e-5)


@pytest.mark.parametrize("pet", [None, np.float32, np.float16])
@pytest.mark.parametrize("name", ["F16_F16_F16", "F32_F32_F32", "BF16_BF16_F32", "F64_F64_F64"])
def test_preferred_element_type_matches_jax(name, pet):
    jax = pytest.importorskip("jax")
    (gd, gv), (jd, jv) = _both(
        lambda: lax.dot(A, B, precision=name, preferred_element_type=pet),
        lambda: jax.lax.dot(A, B, precision=name, preferred_element_type=pet))
    assert gd == jd
    np.testing.assert_allclose(gv.astype(np.float64), jv.astype(np.float64), rtol=1e-3, atol=1e-3)


def test_grad_ragged_and_einsum_match_jax():
    jax = pytest.importorskip("jax")
    name = "F16_F16_F16"
    g = gpuarr.grad(lambda a: (lax.dot(a, B, precision=name) ** 2).sum())(A)
    j = jax.grad(lambda a: (jax.lax.dot(a, B, precision=name) ** 2).sum())(A)
    np.testing.assert_allclose(np.asarray(g), np.asarray(j), rtol=1e-3, atol=1e-3)
    x = RNG.normal(size=(6, 30)).astype(np.float32)
    w = RNG.normal(size=(2, 30, 3)).astype(np.float32)
    gs = np.array([2, 4], np.int32)
    for preset in ("F16_F16_F16", "F64_F64_F64", "TF32_TF32_F32"):
        (gd, gv), (jd, jv) = _both(lambda: lax.ragged_dot(x, w, gs, precision=preset),
                                   lambda: jax.lax.ragged_dot(x, w, gs, precision=preset))
        assert gd == jd
        if gd == "ValueError":
            assert gv == jv
        else:
            np.testing.assert_allclose(gv, jv, rtol=1e-6, atol=1e-6)
    ours = gnp.einsum("ij,jk->ik", A, B, precision=name)
    theirs = jax.numpy.einsum("ij,jk->ik", A, B, precision=name)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
