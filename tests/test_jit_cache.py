"""jit's cache belongs to the function, as in JAX: `jit(f)` twice traces once, a new function
(a lambda around f, a new partial) traces anew, and the options of jit are part of the key.
Each case runs the same code with gpuarr and with JAX and compares when each traced."""
import functools
import gc
import weakref

import numpy as np
import pytest

import gpuarr

jax = pytest.importorskip("jax")

APIS = [pytest.param(gpuarr, id="gpuarr"), pytest.param(jax, id="jax")]


def traces(api, body):
    """The trace count after each step of `body(api, f)`, where `f` counts its traces."""
    count = [0]

    def f(x):
        count[0] += 1
        return x * 2

    seen = []
    for step in body(api, f):
        del step
        seen.append(count[0])
    return seen


def both(body):
    got, want = traces(gpuarr, body), traces(jax, body)
    assert got == want, (got, want)
    return got


def test_impure_print_side_effect_prints_once(capsys):
    # The Sharp Bits' example: a second jit of the same function neither prints nor reads
    # the global again.
    def run(api):
        g = {"y": 1.0}

        def impure_print_side_effect(x):
            print("Executing function")
            return x + g["y"]

        a = api.jit(impure_print_side_effect)(4.)
        g["y"] = 10.0
        b = api.jit(impure_print_side_effect)(5.)
        return float(a), float(b), capsys.readouterr().out

    assert run(gpuarr) == run(jax) == (5.0, 6.0, "Executing function\n")


def test_new_wrappers_of_one_function_share_a_cache():
    def body(api, f):
        yield api.jit(f)(1.)
        yield api.jit(f)(2.)
        yield api.jit(f)(api.numpy.float32(2.))  # a strong float32: a new signature
        yield api.jit(f)(api.numpy.ones(3))
        yield api.jit(f)(api.numpy.ones(3))

    assert both(body) == [1, 1, 2, 3, 3]


def test_a_new_function_traces_anew():
    def body(api, f):
        yield api.jit(f)(1.)
        yield api.jit(lambda x: f(x))(1.)
        yield api.jit(lambda x: f(x))(1.)
        yield api.jit(f)(1.)

    assert both(body) == [1, 2, 3, 3]


def test_same_options_share_and_static_values_key():
    def body(api, f):
        yield api.jit(f, static_argnums=0)(1.)
        yield api.jit(f, static_argnums=0)(1.)
        yield api.jit(f, static_argnums=0)(2.)
        yield api.jit(f, static_argnames="x")(x=3.)
        yield api.jit(f, static_argnames="x")(x=3.)
        yield api.jit(f, donate_argnums=0)(api.numpy.ones(2))
        yield api.jit(f, donate_argnums=0)(api.numpy.ones(2))

    got = traces(gpuarr, body)
    assert got == [1, 1, 2, 3, 3, 4, 4]
    # JAX shares one trace between jits with different options (a lower-level cache keyed
    # on the function); within one set of options both trace exactly when the value changes.
    want = traces(jax, body)
    assert [b - a for a, b in zip(want, want[1:])][:4] == [0, 1, 1, 0]


def test_bound_methods_and_partials():
    class A:
        def __init__(self):
            self.count = 0

        def m(self, x):
            self.count += 1
            return x + 1

    def run(api):
        a = A()
        api.jit(a.m)(1.)
        api.jit(a.m)(1.)  # the first bound method is gone with its jit: traced again
        kept = a.m
        api.jit(kept)(1.)
        api.jit(a.m)(1.)  # equal to the live bound method `kept`: shared
        counts = [a.count]
        calls = [0]

        def g(x, y):
            calls[0] += 1
            return x + y

        p = functools.partial(g, 1.)
        api.jit(p)(1.)
        api.jit(p)(1.)
        api.jit(functools.partial(g, 1.))(1.)  # a new partial: a new function
        return counts + calls

    assert run(gpuarr) == run(jax) == [3, 2]


def test_equal_callables_share():
    class Scale:
        def __init__(self, k):
            self.k = k
            self.count = 0

        def __call__(self, x):
            Scale.calls += 1
            return x * self.k

        def __eq__(self, other):
            return isinstance(other, Scale) and other.k == self.k

        def __hash__(self):
            return hash(self.k)

    def run(api):
        Scale.calls = 0
        a, b = Scale(2), Scale(2)
        api.jit(a)(1.)
        api.jit(b)(1.)
        return Scale.calls

    assert run(gpuarr) == run(jax) == 1


def test_clear_caches_and_cache_size():
    def body(api, f):
        j = api.jit(f)
        yield j(1.)
        assert api.jit(f)._cache_size() == 1
        yield api.jit(f)(np.float32(1.))
        assert j._cache_size() == 2
        api.clear_caches()
        yield api.jit(f)(1.)
        yield j(1.)
        api.jit(f).clear_cache()
        yield api.jit(f)(1.)
        yield api.jit(f)(1.)

    assert both(body) == [1, 2, 3, 3, 4, 4]


def test_config_options_are_part_of_the_key():
    def body(api, f):
        yield api.jit(f)(1.)
        api.config.update("jax_enable_x64", True)
        try:
            yield api.jit(f)(1.)
            yield api.jit(f)(1.)
        finally:
            api.config.update("jax_enable_x64", False)
        yield api.jit(f)(1.)
        with api.default_matmul_precision("highest"):
            yield api.jit(f)(1.)

    assert both(body) == [1, 2, 2, 2, 3]


@pytest.mark.parametrize("api", APIS)
def test_the_cache_lets_functions_be_collected(api):
    def f(x):
        return x + 1

    api.jit(f)(1.)
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_unhashable_function_gets_its_own_cache():
    # JAX raises TypeError for a callable that cannot be hashed; gpuarr gives each such jit a
    # cache of its own.
    class Unhashable:
        __hash__ = None
        calls = 0

        def __call__(self, x):
            Unhashable.calls += 1
            return x

    u = Unhashable()
    j = gpuarr.jit(u)
    j(1.)
    j(2.)
    gpuarr.jit(u)(1.)
    assert Unhashable.calls == 2
