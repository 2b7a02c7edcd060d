"""Small-domain lookup tables in compiled Programs (gpuarr/backends/lookup_tables.py): which
chains become a gather, and that the results stay JAX's bit for bit before and after the table
is built."""
import numpy as np
import pytest
from helpers import jit_runs_numpy_backend

import gpuarr
from gpuarr import impls, lax, random
from gpuarr.backends import lookup_tables
from gpuarr.backends.numpy import codegen
from gpuarr.backends.numpy.codegen import source_of
from gpuarr.compiler import passes
from gpuarr.random import xla_math
from gpuarr.random.xla_math import erf_inv_giles, xla_log
from tests.jax_compare import FLOAT16_CONTRACTION_TOL, float16_units, xla_contracts_float16

jax = pytest.importorskip("jax")
jrandom = pytest.importorskip("jax.random")

# Tables are built by the NumPy backend's jit; other platforms compile the chain into a kernel
# and leave the table unbuilt, but their values must still be JAX's.
TABLES_BUILT = jit_runs_numpy_backend()


def _source(fn, *args):
    return source_of(gpuarr.make_jaxpr(fn)(*args))


def _tables_of(fn, *args):
    """The LookupTables that fn's Program under jit (after jit's passes) is compiled with."""
    closed = passes.optimize(gpuarr.make_jaxpr(fn)(*args))
    prog = lookup_tables.tabulate(closed.program, codegen._is_elementwise,
                                  impls.costly_prims, codegen.compile_program)
    return [e.params["table"] for e in prog.eqns if e.prim is lookup_tables.lookup_table_p]


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    if ours.dtype == np.float16 and xla_contracts_float16():
        assert float16_units(ours, theirs) <= FLOAT16_CONTRACTION_TOL
        return
    np.testing.assert_array_equal(ours.view(np.uint8), theirs.view(np.uint8))


SAMPLERS = {  # name -> (gpuarr sampler, JAX sampler) of (key, shape, dtype)
    "normal": (random.normal, jrandom.normal),
    "exponential": (random.exponential, jrandom.exponential),
    "gumbel": (random.gumbel, jrandom.gumbel),
    "logistic": (random.logistic, jrandom.logistic),
    "laplace": (random.laplace, jrandom.laplace),
    "truncated_normal": (lambda k, s, d: random.truncated_normal(k, -1.5, 0.5, s, d),
                         lambda k, s, d: jrandom.truncated_normal(k, -1.5, 0.5, s, d)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_sampler_chain_is_a_table_with_jax_values(name):
    ours, theirs = SAMPLERS[name]
    shape = (24, 40)  # 960 float16 values: past the 2**10-entry domain on the second call

    def draw(k):
        return ours(k, shape, np.float16)
    assert "lookup_table" in _source(draw, random.key(0))
    (table,) = _tables_of(draw, random.key(0))
    assert table.chain.domain == 1 << 10 and table.dtype == np.float16
    ours_jit, theirs_jit = gpuarr.jit(draw), jax.jit(lambda k: theirs(k, shape, np.float16))
    _same(ours_jit(random.key(0)), theirs_jit(jrandom.key(0)))
    assert table.values is None  # evaluated: the table has not paid for itself yet
    for seed in (1, 2):
        _same(ours_jit(random.key(seed)), theirs_jit(jrandom.key(seed)))
    assert (table.values is not None) == TABLES_BUILT


@pytest.mark.slow
@pytest.mark.numpy_backend  # blocked runs are the NumPy backend's
def test_float32_normal_table_matches_jax_in_blocked_runs(monkeypatch):
    # 2**21 values go block by block; two calls fill the 2**23-entry domain and build the table.
    grid = xla_math._GridTable()  # erf_inv's own memo: filling the table must not build it
    monkeypatch.setattr(xla_math, "_GRID_TABLE", grid)
    n = 1 << 22

    def draw(k):
        return random.normal(k, (n,))
    (table,) = _tables_of(draw, random.key(0))
    ours, theirs = gpuarr.jit(draw), jax.jit(lambda k: jrandom.normal(k, (n,)))
    for seed in (3, 4, 5):
        _same(ours(random.key(seed)), theirs(jrandom.key(seed)))
    assert table.values is not None and table.values.shape == (1 << 23,)
    assert grid.values is None and grid.emulated < 1 << 23
    small = gpuarr.jit(lambda k: random.normal(k, (3, 700)))  # shares the built table
    assert _tables_of(lambda k: random.normal(k, (3, 700)), random.key(0))[0] is table
    _same(small(random.key(9)), jax.jit(lambda k: jrandom.normal(k, (3, 700)))(jrandom.key(9)))


def test_table_values_are_the_chain_evaluated():
    def chain(bits):
        return erf_inv_giles(lax.mul(lax.convert_element_type(
            lax.shift_right_logical(bits, np.uint32(20)), np.float32), np.float32(2 ** -12)))
    bits = np.arange(2048, dtype=np.uint32) * np.uint32(2654435761)
    (table,) = _tables_of(chain, bits)
    expected = np.asarray(chain(bits))  # eager: one equation at a time, no table
    got = gpuarr.jit(chain)
    for _ in range(3):
        _same(got(bits), expected)
    if TABLES_BUILT:
        _same(table.values, np.asarray(chain(np.arange(4096, dtype=np.uint32) << np.uint32(20))))
    else:
        assert table.values is None


def test_uniform_has_no_table():
    # Its chain is a few cheap passes: a gather from 32 MiB would cost more.
    assert "lookup_table" not in _source(lambda k: random.uniform(k, (4096,)), random.key(0))


def test_chain_read_twice_outside_is_left_alone():
    def two_exits(bits):
        x = lax.convert_element_type(lax.shift_right_logical(bits, np.uint32(22)), np.float32)
        return xla_log(lax.add(x, np.float32(1))), x
    bits = np.arange(4096, dtype=np.uint32) * np.uint32(2654435761)
    assert "lookup_table" not in _source(two_exits, bits)
    for ours, eager in zip(gpuarr.jit(two_exits)(bits), two_exits(bits)):
        _same(ours, eager)


def test_traced_operand_ends_the_chain():
    def scaled(bits, scale):
        x = lax.convert_element_type(lax.shift_right_logical(bits, np.uint32(22)), np.float32)
        return xla_log(lax.mul(x, scale))
    bits = np.arange(4096, dtype=np.uint32) * np.uint32(2654435761)
    assert "lookup_table" not in _source(scaled, bits, np.float32(0.5))
    _same(gpuarr.jit(scaled)(bits, np.float32(0.5)), scaled(bits, np.float32(0.5)))


@pytest.mark.parametrize("shift", [8, 32])
def test_domain_too_large_or_empty_is_left_alone(shift):
    def chain(bits):
        m = lax.shift_right_logical(bits, np.uint32(shift))
        return xla_log(lax.convert_element_type(m, np.float32))
    bits = np.arange(4096, dtype=np.uint32) * np.uint32(2654435761)
    assert "lookup_table" not in _source(chain, bits)
    with np.errstate(divide="ignore"):
        _same(gpuarr.jit(chain)(bits), chain(bits))


def test_vmapped_sampler_under_jit():
    keys = random.split(random.key(1), 3)
    jkeys = jrandom.split(jrandom.key(1), 3)
    ours = gpuarr.jit(gpuarr.vmap(lambda k: random.normal(k, (700,), np.float16)))
    theirs = jax.jit(jax.vmap(lambda k: jrandom.normal(k, (700,), np.float16)))
    for _ in range(2):
        _same(ours(keys), theirs(jkeys))


def test_dead_branch_of_the_chain_goes_with_it():
    def chain(bits):
        m = lax.shift_right_logical(bits, np.uint32(22))
        lax.add(m, np.uint32(1))  # read by nothing: the Program keeps it without jit's passes
        return xla_log(lax.add(lax.convert_element_type(m, np.float32), np.float32(1)))
    bits = np.arange(4096, dtype=np.uint32) * np.uint32(2654435761)
    closed = gpuarr.make_jaxpr(chain)(bits)
    assert "lookup_table" in source_of(closed)
    _same(codegen.compile_closed(closed)(bits)[0], chain(bits))
