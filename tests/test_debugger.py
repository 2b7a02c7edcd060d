"""jax.debug.breakpoint: the (jdb) prompt over run-time values, eager and under jit, vmap
and grad; transcripts compared with JAX's where JAX is installed."""
import io

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp

COMMANDS = "p y\npp {'n': y.shape}\np x.dtype\np zz\nl\nu\nd\nd\nc\n"


def make(jax, jnp, out, commands=COMMANDS):
    def f(x):
        y = jnp.asarray(x) * 2 + 0.5
        jax.debug.breakpoint(stdin=io.StringIO(commands), stdout=out, num_frames=2)
        return y + 1

    def outer(x):
        return f(x) * 3
    return outer


def transcript(jax, jnp, wrap=lambda g: g, x=None):
    out = io.StringIO()
    wrap(make(jax, jnp, out))(np.arange(3, dtype=np.float32) if x is None else x)
    return out.getvalue()


def test_eager_and_jit_show_the_values():
    for wrap in (lambda g: g, gpuarr.jit):
        text = transcript(gpuarr, gnp, wrap)
        y = np.arange(3, dtype=np.float32) * 2 + 0.5
        assert text.startswith("Entering jdb:\n(jdb) Array(")
        assert repr(gnp.asarray(y)) in text and "{'n': (3,)}" in text and "float32" in text
        assert "*** NameError: name 'zz' is not defined" in text
        assert "->          jax.debug.breakpoint(" in text  # the list shows the current line
        assert "return f(x) * 3" in text and "At bottommost frame." in text


def test_vmap_stops_per_example_and_grad_sees_primals():
    out = io.StringIO()
    commands = "p y.shape\nc\n"
    gpuarr.vmap(make(gpuarr, gnp, out, commands * 2))(np.ones((2, 3), np.float32))
    assert out.getvalue().count("(jdb) (3,)") == 2
    out = io.StringIO()
    gpuarr.grad(lambda x: make(gpuarr, gnp, out, "p x\nc\n")(x).sum())(np.float32(0.5))
    assert "Array(0.5, dtype=float32)" in out.getvalue()
    tok = gpuarr.debug.breakpoint(token=gnp.ones(2), stdin=io.StringIO("c\n"), stdout=out)
    np.testing.assert_array_equal(np.asarray(tok), np.ones(2))
    with pytest.raises(ValueError, match="mutually exclusive"):
        gpuarr.debug.breakpoint(token=gnp.ones(2), ordered=True)


@pytest.mark.parametrize("jitted", [False, True])
def test_transcript_matches_jax(jitted):
    jax = pytest.importorskip("jax")
    ours = transcript(gpuarr, gnp, gpuarr.jit if jitted else (lambda g: g))
    theirs = transcript(jax, jax.numpy, jax.jit if jitted else (lambda g: g))
    assert ours == theirs
