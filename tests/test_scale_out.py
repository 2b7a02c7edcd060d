"""Several devices and several processes: programs in tests/scale_out/programs.py run in fresh
processes (cpu device counts are fixed at start; mpiexec starts several), each bounded in time
so that a hang fails the test. Every process runs on this machine (loopback only)."""
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = Path(__file__).parent / "scale_out" / "programs.py"
ROOT = Path(__file__).resolve().parents[1]
# gpuarr first, then what the run was given (the CuPy stand-in, under GPUARR_CUDA_STANDIN=1)
SEARCH_PATH = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
LIMIT = 300  # seconds per run: a hang fails the test (runs take 5 to 20 s unloaded)


def _mpiexec():
    """The launcher of the MPI that mpi4py was installed with (the mpich wheel puts it next
    to the interpreter), else the first on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _run(args, mpi=0, lib="gpuarr", check=True, platforms="cpu"):
    """`platforms=""`: gpuarr's default, whose cpu platform compiles jitted programs to C
    kernels when a C compiler is found (the CuPy stand-in is left out of the path, so the
    default stays cpu); "cpu" runs them on the NumPy backend."""
    cmd = [sys.executable, str(PROGRAMS), lib, *args]
    if mpi:
        cmd = [_mpiexec(), "-n", str(mpi), *cmd, "--mpi"]
    # cpu devices and processes, for gpuarr as for JAX, whatever platform the suite runs on
    env = dict(os.environ, PYTHONPATH=SEARCH_PATH if platforms else str(ROOT),
               JAX_PLATFORMS="cpu", GPUARR_PLATFORMS=platforms)
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT, env=env)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines()
               if line.startswith("RESULT ")]
    return results, proc


def _need_mpi():
    pytest.importorskip("mpi4py")
    if _mpiexec() is None:
        pytest.skip("no mpiexec (pip install 'gpuarr[distributed]')")


def test_cpu_devices_shardings_and_shards_match_jax():
    pytest.importorskip("jax")
    (ours,), _ = _run(["devices", "4"])
    (theirs,), _ = _run(["devices", "4"], lib="jax")
    assert ours == theirs


def test_xla_flags_device_count():
    env = dict(os.environ, PYTHONPATH=SEARCH_PATH, GPUARR_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=3")
    out = subprocess.run([sys.executable, "-c", "import gpuarr; print(gpuarr.devices(), "
                          "gpuarr.local_device_count())"],
                         capture_output=True, text=True, timeout=LIMIT, env=env)
    assert out.stdout.strip() == "[CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2)] 3"


def test_collectives_per_device_equal_the_vmap_path_bit_for_bit():
    (r,), _ = _run(["collectives", "4"])
    assert all(r["same"].values()), r["same"]
    assert all(r["jitted"].values()), r["jitted"]
    assert r["two_d"] == [True, True]
    assert r["pmap"] and r["pmap_devices"] == 4
    # a keyword argument, and a static one, still run a position per device
    assert r["pmap_forms"] == {"keywords": [True, 4], "static": [True, 4]}
    assert r["jit_shardings"] == [True, "NamedSharding(mesh=Mesh('i': 4, axis_types=(Explicit,"
                                  ")), spec=P(), memory_kind=device)", 4]
    assert r["out_sharding"] == ("NamedSharding(mesh=Mesh('i': 4, axis_types=(Explicit,)), "
                                 "spec=P('i',), memory_kind=device)")
    assert r["errors"]["unknown_axis"].startswith("Found an unbound axis name: nope.")


@functools.cache
def _run_features():
    (ours,), _ = _run(["features", "4"])
    (theirs,), _ = _run(["features", "4"], lib="jax")
    return ours, theirs


def _features():
    """gpuarr's and JAX's results of the `features` program on 4 cpu devices (one run of each
    for the tests below)."""
    pytest.importorskip("jax")
    return _run_features()


def test_jit_on_split_inputs_runs_per_device_with_jax_shardings():
    """jit with in_shardings (and on inputs already split): one program per device whose
    reductions over the split axis gain an all-reduce; outputs report JAX's shardings."""
    ours, theirs = (r["jit_split"] for r in _features())
    assert ours["specs"] == theirs["specs"]
    assert ours["committed"] == theirs["committed"]
    assert ours["out_sharding"] == theirs["out_sharding"]
    for name, leaves in ours["values"].items():
        for got, want in zip(leaves, theirs["values"][name]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    assert all(all(v) for v in ours["one"].values()), ours["one"]
    # The gradient's per-device program: local blocks, psum for the batch reductions,
    # nothing gathered.
    program = ours["program"]
    assert "psum[axis_name=('i',)]" in program and "all_gather" not in program
    assert "b:f32[4,4]" in program  # one device's block of the f32[16,4] batch
    split, one = ours["losses"]
    assert split[-1] < split[0]
    np.testing.assert_allclose(split, one, rtol=2e-6)


@functools.cache
def _jit_shardings(n):
    pytest.importorskip("jax")
    (ours,), _ = _run(["jit_shardings", str(n)])
    (theirs,), _ = _run(["jit_shardings", str(n)], lib="jax")
    return ours, theirs


def _same_call_results(ours, theirs, exact):
    """Each case raises JAX's error (class and message) or gives JAX's outputs: sharding,
    committed flag, each device's index, and values (whole and per piece) to rounding, or
    exactly where `exact(case)`."""
    assert ours.keys() == theirs.keys()
    for case, want in theirs.items():
        got = ours[case]
        assert got.keys() == want.keys(), (case, got, want)
        if "error" in want:
            assert got["error"] == want["error"], case
            continue
        assert len(got["outputs"]) == len(want["outputs"]), case
        for g, w in zip(got["outputs"], want["outputs"]):
            assert g[1:4] == w[1:4], (case, g[1:4], w[1:4])
            assert [p[:2] for p in g[4]] == [p[:2] for p in w[4]], case
            for a, b in [(g[0], w[0])] + [(p[2], q[2]) for p, q in zip(g[4], w[4])]:
                if exact(case):
                    np.testing.assert_array_equal(a, b, err_msg=case)
                else:
                    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=case)


@pytest.mark.parametrize("n", [2, 4])
def test_jit_in_shardings_and_committed_arguments_match_jax(n):
    """A committed argument placed otherwise than its in_sharding raises JAX's ValueError
    (NamedShardings over the same or other devices, single-device Arrays, a
    SingleDeviceSharding, pytrees with None entries, device_put inside jit), and so do
    committed arguments on different devices without in_shardings; uncommitted and NumPy
    arguments are placed as in_shardings say, with JAX's output shardings."""
    ours, theirs = (r["committed"] for r in _jit_shardings(n))
    assert theirs["rep_to_split"]["error"][0] == "ValueError"  # the oracle raises here
    assert "outputs" in theirs["device_1_replicated"]  # and reshards a replicated one
    assert theirs["plain_split_and_device_0"]["error"][0] == "ValueError"  # jit without
    assert "outputs" in theirs["plain_split_and_replicated"]  # in_shardings compares them too
    _same_call_results(ours, theirs, lambda case: True)


@pytest.mark.parametrize("n", [2, 4])
def test_sharding_constraint_inside_data_parallel_jit_matches_jax(n):
    """with_sharding_constraint inside jit on batch-split inputs lays the value out as JAX
    does (gathered for P(), cut per device for another split), over Auto and Explicit axes:
    the output shardings, each device's piece and the values; the values equal the
    one-device function's bit for bit."""
    (ours, theirs) = _jit_shardings(n)
    assert theirs["constraint"]["Auto/out"]["outputs"][0][2].endswith("spec=P(), "
                                                                      "memory_kind=device)")
    exact = ("to_columns", "input", "device_put", "to_rows", "committed", "vmap",
             "unconstrained")  # no arithmetic
    _same_call_results(ours["constraint"], theirs["constraint"],
                       lambda case: case.endswith(exact))
    assert ours["same"] and all(ours["same"].values()), ours["same"]


def test_arrays_over_cpu_devices_own_a_buffer_per_device():
    """On 4 cpu devices, device_put, shard_map, pmap, jit (data-parallel, and of a shard_map)
    and eager operations (elementwise, broadcasts, reductions and argmax across the split
    dimension, reshape) give Arrays whose pieces are each device's own buffer (no two shards
    share memory), with JAX's shardings, shard shapes and dtypes and its values; gpuarr's
    eager results, cpu sums across devices included, are bit for bit the one-device ones."""
    pytest.importorskip("jax")
    (ours,), _ = _run(["cpu_shards", "4"])
    (theirs,), _ = _run(["cpu_shards", "4"], lib="jax")
    assert sorted(ours["arrays"]) == sorted(theirs["arrays"])
    for name, (spec, dtype, shapes, _, value) in theirs["arrays"].items():
        got = ours["arrays"][name]
        assert got[:3] == [spec, dtype, shapes], name
        # JAX's cpu device_put may alias an aligned NumPy array for every device of a
        # replicated sharding; gpuarr always gives each device its own copy.
        assert got[3] is True, name
        np.testing.assert_allclose(got[4], value, rtol=1e-6, atol=1e-5, err_msg=name)
    held = ours["held"]
    same = held.pop("same")
    assert set(held.values()) == {"DeviceShards"}, held
    assert all(same.values()), same


@functools.cache
def _run_split_ops():
    (ours,), _ = _run(["split_ops", "2"])
    (theirs,), _ = _run(["split_ops", "2"], lib="jax")
    return ours, theirs


def _split_ops():
    """gpuarr's and JAX's results of the `split_ops` program on 2 cpu devices."""
    pytest.importorskip("jax")
    return _run_split_ops()


def test_per_block_eager_operations_and_jit_around_shard_map_match_jax():
    """On 2 cpu devices (Auto and Explicit meshes): eager matrix products keeping their
    contraction whole, slices, sorts and cumulative operations along unsplit dimensions,
    transposes and concatenation run on each device's blocks, and jitted functions holding
    shard_maps among other operations (or in a `cond`'s branch, or an inner `jit`) keep
    their outputs as pieces; each result has JAX's
    sharding, dtype, shard shapes and values, and the eager ones are bit for bit the
    one-device results. Combining a split array with an operand committed to one device is
    JAX's ValueError."""
    ours, theirs = _split_ops()
    assert sorted(ours["arrays"]) == sorted(theirs["arrays"])
    assert len(theirs["arrays"]) == 2 * (22 + 11)
    for name, (spec, dtype, shapes, value) in theirs["arrays"].items():
        got = ours["arrays"][name]
        assert got[:3] == [spec, dtype, shapes], name
        np.testing.assert_allclose(got[3], value, rtol=1e-6, atol=1e-6, err_msg=name)
    assert set(ours["held"].values()) == {"DeviceShards"}, ours["held"]
    assert len(ours["same"]) == 2 * 22 and all(ours["same"].values()), ours["same"]
    # a split operand with one committed to a single device: JAX's ValueError
    assert ours["errors"] == theirs["errors"]
    assert {e[0] for e in ours["errors"].values()} == {"ValueError"}, ours["errors"]


def test_eager_operations_along_the_split_dimension_match_jax():
    """On 4 cpu devices (a 4-device and a 2x2 mesh, Auto axes; `rev` and `concatenate` also
    over an Explicit axis): slices, reversals, concatenation, dynamic slices, sorts,
    cumulative operations, gathers and scatters along split dimensions give JAX's sharding,
    dtype, shard shapes and values, held as pieces, bit for bit the one-device results; the
    slices, reversals, concatenations and dynamic slices never put an operand together whole
    (each device reads only what its block needs from the pieces holding it), nor do a gather
    or a scatter along an unsplit dimension (each device works on its blocks)."""
    pytest.importorskip("jax")
    (ours,), _ = _run(["split_dimension", "4"])
    (theirs,), _ = _run(["split_dimension", "4"], lib="jax")
    assert sorted(ours["arrays"]) == sorted(theirs["arrays"])
    assert len(theirs["arrays"]) == 63
    for name, (spec, dtype, shapes, value) in theirs["arrays"].items():
        got = ours["arrays"][name]
        assert got[:3] == [spec, dtype, shapes], name
        np.testing.assert_allclose(got[3], value, rtol=1e-6, atol=1e-6, err_msg=name)
    assert set(ours["held"].values()) == {"DeviceShards"}, ours["held"]
    assert len(ours["same"]) == 63 and all(ours["same"].values()), ours["same"]
    kept = {n.split("/")[1] for n in ours["arrays"] if n.startswith(("region/", "per_block/"))}
    assert len(kept) == 37 and all(ours["joins"][n] == 0 for n in kept), ours["joins"]


@functools.cache
def _run_loops():
    (ours,), _ = _run(["loops", "4"])
    (theirs,), _ = _run(["loops", "4"], lib="jax")
    return ours, theirs


def test_shard_map_in_jitted_loops_runs_per_device():
    """On 4 cpu devices (an Auto and an Explicit mesh): jitted fori_loops, scans (stacked
    outputs, split xs, reverse), a while_loop whose predicate is a psum, nested loops with a
    cond, a loop among other operations and a scan of length 0, all of shard_map steps, run per device: every
    output is held as pieces on the 4 devices, nothing is put together whole, the values are
    bit for bit the named-vmap path's and the shardings, dtypes and shard shapes JAX's
    (`P(None, 'i')` for a scan's stacked outputs)."""
    pytest.importorskip("jax")
    ours, theirs = _run_loops()
    assert sorted(ours["arrays"]) == sorted(theirs["arrays"])
    assert len(theirs["arrays"]) == 2 * 12
    for name, (spec, dtype, shapes, value) in theirs["arrays"].items():
        got = ours["arrays"][name]
        assert got[:3] == [spec, dtype, shapes], name
        np.testing.assert_allclose(got[3], value, rtol=1e-5, atol=1e-5, err_msg=name)
    assert set(ours["held"].values()) == {"DeviceShards"}, ours["held"]
    assert all(d == [f"cpu:{k}" for k in range(4)] for d in ours["devices"].values())
    assert len(ours["same"]) == 24 and all(ours["same"].values()), ours["same"]
    assert len(ours["joins"]) == 14 and set(ours["joins"].values()) == {0}, ours["joins"]
    assert theirs["arrays"]["Auto/while/1"][3] >= 2  # the predicate ran several iterations


def test_data_parallel_training_loop_of_shard_map_steps():
    """A data-parallel MLP trained for 20 steps as one jitted fori_loop over a shard_map
    step (pmean of the gradients) on 4 cpu devices gives the losses and parameters of a
    Python loop calling the same step (to float32 rounding; here equal), and JAX's; its
    outputs stay replicated pieces with JAX's shardings."""
    pytest.importorskip("jax")
    ours, theirs = (r["mlp"] for r in _run_loops())
    losses = np.asarray(ours["losses"])
    assert losses[-1] < 0.6 * losses[0]
    np.testing.assert_allclose(losses, ours["eager"], rtol=2e-6)
    for got, want in zip(ours["params"], ours["eager_params"]):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(losses, theirs["losses"], rtol=2e-5)
    for got, want in zip(ours["params"], theirs["params"]):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    assert ours["specs"] == theirs["specs"] and set(ours["held"]) == {"DeviceShards"}


def test_axis_index_groups_under_pmap_match_jax():
    ours, theirs = (r["groups"] for r in _features())
    assert ours["values"] == theirs["values"]
    assert all(ours["vectorised"].values()), ours["vectorised"]
    for name in ("not_a_partition", "scatter_size", "vmap", "vmap_all_gather"):
        assert ours["errors"][name] == theirs["errors"][name], name
    # JAX's shard_map raises a bare NotImplementedError; gpuarr says what to do instead.
    assert theirs["errors"]["shard_map"][0] == ours["errors"]["shard_map"][0]
    assert "not supported in shard_map" in ours["errors"]["shard_map"][1]


def test_grad_jvp_vmap_around_per_device_shard_map_and_pmap():
    """The transformed shard_map (and pmap) runs a program per device, its transposed
    collectives included; values match JAX and the one-device named-vmap path."""
    ours, theirs = (r["transforms"] for r in _features())
    for name, leaves in ours["values"].items():
        assert len(leaves) == len(theirs["values"][name]), name
        for got, want in zip(leaves, theirs["values"][name]):
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=name)
    for name, leaves in ours["one"].items():
        for got, want in zip(ours["values"][name], leaves):
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=name)


@functools.cache
def _on_two_standin_gpus(program: str) -> dict:
    """The RESULT of tests/scale_out/programs.py's `program` on 2 cuda devices of the stand-in."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "cupy_standin"),
                                                       str(ROOT)]),
               CUPY_STANDIN_DEVICES="2", GPUARR_PLATFORMS="cuda")
    proc = subprocess.run([sys.executable, str(PROGRAMS), "gpuarr", program, "2"],
                          capture_output=True, text=True, timeout=LIMIT, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (r,) = [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines()
            if line.startswith("RESULT ")]
    return r


def test_collectives_between_gpus_run_over_nccl():
    """Two cuda devices of the CuPy stand-in: shard_map's and pmap's collectives (and the
    transposed ones of a gradient) go through cupy.cuda.nccl and equal the one-device path."""
    r = _on_two_standin_gpus("gpus")
    if "skip" in r:
        pytest.skip(r["skip"])
    assert all(r["same"].values()), r["same"]
    assert r["pmap"] and r["grad"] == 0.0 and r["pmap_devices"] == ["cuda:0", "cuda:1"]
    # psum, pmean, pmax and pmap's psum (forward and transposed) are all-reduces; all_gather,
    # psum_scatter, ppermute and all_to_all their own NCCL calls (one per rank each).
    assert r["nccl"]["ncclAllGather"] == 4 and r["nccl"]["ncclReduceScatter"] == 2
    assert r["nccl"]["ncclSend"] == r["nccl"]["ncclRecv"] == 4
    assert r["nccl"]["ncclAllReduce"] >= 10
    # jit with in_shardings on the GPUs: the loss's and the gradient's sums all-reduced
    # (one NCCL call per GPU each), to float32 rounding of the one-device result.
    loss_diff, grad_diff, spec, all_reduces = r["jit_split"]
    assert loss_diff < 1e-6 and grad_diff < 1e-6 and spec == "P()" and all_reduces == 4


def test_array_over_gpus_keeps_each_piece_on_its_gpu():
    """device_put over 2 cuda devices of the CuPy stand-in: each GPU's memory holds its piece
    only (no global copy on the first), addressable_shards are those pieces, and shard_map,
    eager operations and host reads see the whole value; an eager shard_map's outputs stay
    as pieces on their GPUs, with no transfer through the host."""
    r = _on_two_standin_gpus("gpu_shards")
    assert r["placed"] == [r["piece_bytes"]] * 2
    assert r["shards"] == [["cuda:0", "cuda:0", [256, 64], True],
                           ["cuda:1", "cuda:1", [256, 64], True]]
    assert r["values"] == [True] * 4 and r["spec"] == "P('i',)"
    assert r["after"] == [r["piece_bytes"]] * 2  # results dropped: the pieces remain
    # An eager shard_map reads each GPU's piece there and leaves its result there.
    assert r["eager"] == dict(moved=[0, 0], grew=[r["piece_bytes"]] * 2, stored="DeviceShards",
                              spec="P('i',)", devices=["cuda:0", "cuda:1"],
                              replicated=["cuda:0", "cuda:1"], per_piece=r["eager"]["per_piece"])
    # Eager elementwise operations, and reductions over the unsplit dimension, run per piece
    # (each GPU's memory grows by its piece of the result, nothing but scalars moves), their
    # values bit for bit those on one GPU.
    for name, got in r["eager"]["per_piece"].items():
        dtype = "int32" if name == "cast" else "float32"
        assert got == ["DeviceShards", "P('i',)", True, True, True, dtype], name  # Auto axes


def test_reductions_across_gpus_combine_over_nccl():
    """Eager reductions and argmax/argmin across the split dimension of an array over 2
    stand-in GPUs run on each GPU's piece and combine over NCCL (an all-reduce; argmax an
    all-gather of one value and index per GPU): nothing but scalars crosses the host, the
    result is held by both GPUs, replicated (P()) as JAX reports it. Sums are added in
    another order than on one GPU, so they agree to float32 rounding; max, min and argmax
    exactly. A broadcast row added to the array is cut into each GPU's block."""
    r = _on_two_standin_gpus("gpu_shards")
    if "skip" in r:
        pytest.skip(r["skip"])
    for name, (held, spec, moved, nccl, devices, diff, same_dtype) in r["across"].items():
        assert held == "DeviceShards" and devices == ["cuda:0", "cuda:1"], name
        assert same_dtype, name
        if name == "addrow":  # elementwise: the row's blocks go to each GPU, nothing else
            assert spec == "P('i',)" and nccl == {} and moved == 2 * 64 * 4 and diff == 0.0
            continue
        assert spec == "P()", name
        assert moved <= 8, name  # at most a scalar operand (mean's divisor) through the host
        if name.startswith("arg"):
            assert nccl == {"ncclAllGather": 4} and diff == 0.0, name
        else:
            assert nccl == {"ncclAllReduce": 2}, name
            assert diff <= (0.0 if name in ("max0", "min") else 1e-6), name


def test_jit_data_parallel_runs_per_gpu_and_keeps_pieces():
    """jit on an array split over 2 stand-in GPUs with replicated weights: each GPU runs the
    per-device program on its own piece (nothing crosses the host or another GPU), the
    gradient's sums are all-reduced over NCCL, and the outputs stay as pieces on both GPUs
    with JAX's shardings; the loss and gradient equal the one-GPU results to float32
    rounding, an elementwise jit bit for bit. jit of a shard_map (alone, or among other
    operations) keeps its pieces too."""
    r = _on_two_standin_gpus("gpu_shards")
    if "skip" in r:
        pytest.skip(r["skip"])
    step, elementwise = r["jit_split"]["step"], r["jit_split"]["elementwise"]
    assert step["moved"] == 0 and step["nccl"] == {"ncclAllReduce": 4}
    assert step["held"] == ["DeviceShards"] * 2 and step["specs"] == ["P()", "P()"]
    assert step["devices"] == [["cuda:0", "cuda:1"]] * 2
    assert step["diff"][0] <= 1e-6 and step["diff"][1] <= 1e-6
    assert elementwise["moved"] == 0 and elementwise["nccl"] == {}
    assert elementwise["held"] == ["DeviceShards"] and elementwise["specs"] == ["P('i',)"]
    assert elementwise["grew"] == [r["piece_bytes"]] * 2  # each GPU: its block of the result
    assert elementwise["same"] == [True]
    # jit of a shard_map, alone and with elementwise work around it: the same, per GPU
    for name, spec, nccl in (("shard_map", "P()", {"ncclAllReduce": 2}),
                             ("around_shard_map", "P('i',)", {})):
        got = r["jit_split"][name]
        assert got["held"] == ["DeviceShards"] and got["specs"] == [spec], name
        assert got["nccl"] == nccl and got["moved"] <= 8 * 2, name  # scalars only
        assert got["devices"] == [["cuda:0", "cuda:1"]] and got["diff"][0] <= 1e-4, name
    # The equations around the shard_map run as each GPU's compiled plan: `v * 3` one kernel,
    # the shard_map one, `tanh(. + 1)` one fused kernel per GPU (eagerly: two), nothing through
    # the host; a matrix product after it reads the replicated weights each GPU holds.
    around, after = r["jit_split"]["around_shard_map"], r["jit_split"]["matmul_after_shard_map"]
    assert around["moved"] == 0 and around["launches"] == 3 * 2 and around["same"] == [True]
    assert after["moved"] == 0 and after["library"] == {"matmul": 2} and after["nccl"] == {}
    assert after["held"] == ["DeviceShards"] and after["specs"] == ["P('i',)"]
    assert after["launches"] == 2 * 2 and after["diff"][0] <= 1e-6


def test_per_block_eager_operations_run_on_each_gpu():
    """The eager operations of the cpu-device test above on 2 stand-in GPUs: each runs on
    the GPUs' pieces where they are (no piece through the host, no NCCL call: at most a
    scalar operand crosses), its result held by both GPUs with the sharding JAX reports on
    cpu devices, bit for bit the one-GPU result, with its dtype."""
    r = _on_two_standin_gpus("gpu_shards")
    if "skip" in r:
        pytest.skip(r["skip"])
    _, theirs = _split_ops()
    blocks = dict(r["per_block"])
    moved, w_bytes, held, same = blocks.pop("host_weights")
    assert held == "DeviceShards" and same and moved <= 4 * w_bytes  # w only, never x's pieces
    assert len(blocks) == 22
    for name, (held, spec, moved, nccl, devices, same, dtype, one_dtype) in blocks.items():
        assert held == "DeviceShards" and devices == ["cuda:0", "cuda:1"], name
        assert spec == theirs["arrays"][f"auto/{name}"][0], name
        assert dtype == one_dtype == theirs["arrays"][f"auto/{name}"][1], name
        assert moved <= 8 * 2 and nccl == {} and same, name


def test_eager_operations_along_the_split_dimension_on_gpus():
    """The cases of the cpu-device test above on 2 stand-in GPUs: JAX's shardings (on 2 cpu
    devices), dtypes, shard shapes and values, held as pieces on the GPUs, bit for bit the
    one-GPU results. A slice, reversal, concatenation or dynamic slice (and a gather or
    scatter along an unsplit dimension) moves through the host only what the result needs
    (each needed part of a piece out, each GPU's block in: at most three times the result's
    bytes on 2 GPUs, with a NumPy operand's own transfer)."""
    pytest.importorskip("jax")
    r = _on_two_standin_gpus("split_dimension")
    if "skip" in r:
        pytest.skip(r["skip"])
    (theirs,), _ = _run(["split_dimension", "2"], lib="jax")
    assert sorted(r["arrays"]) == sorted(theirs["arrays"])
    for name, (spec, dtype, shapes, value) in theirs["arrays"].items():
        got = r["arrays"][name]
        assert got[:3] == [spec, dtype, shapes], name
        np.testing.assert_allclose(got[3], value, rtol=1e-6, atol=1e-6, err_msg=name)
    assert set(r["held"].values()) == {"DeviceShards"} and all(r["same"].values()), r["same"]
    kept = {n.split("/")[1] for n in r["arrays"] if n.startswith(("region/", "per_block/"))}
    for name in kept:
        moved, nbytes = r["moved"][name]
        assert r["joins"][name] == 0 and moved <= 3 * nbytes + 64, (name, moved, nbytes)


def test_shard_map_in_jitted_loops_runs_per_gpu():
    """The jitted loops of shard_map steps on 2 stand-in GPUs: each output held as pieces on
    both GPUs with JAX's shardings, bit for bit the one-GPU named-vmap path; the collectives
    are NCCL all-reduces, and only scalars cross the host: nothing for a fori_loop or scan
    of static length, a while_loop's predicate once per iteration (and scan's step index).
    The training loop equals the Python loop of the same step."""
    pytest.importorskip("jax")
    r = _on_two_standin_gpus("loops")
    if "skip" in r:
        pytest.skip(r["skip"])
    theirs, _ = _run_loops()
    assert len(r["arrays"]) == 12
    for name, (spec, dtype, shapes, _) in r["arrays"].items():
        assert [spec, dtype] == theirs["arrays"][name][:2], name
        assert shapes == theirs["arrays"][name][2][:2], name  # 4 rows per device in both
    assert set(r["held"].values()) == {"DeviceShards"} and all(r["same"].values()), r["same"]
    assert all(d == ["cuda:0", "cuda:1"] for d in r["devices"].values())
    assert set(r["joins"].values()) == {0}, r["joins"]
    moved = r["moved"]
    for name, steps in (("fori", 3), ("scan", 9), ("nested", 5), ("around", 2)):
        assert moved[name] == [0, {"ncclAllReduce": 2 * steps}], (name, moved[name])
    assert moved["scan_xs"][0] <= 3 * 2 * 16  # scalars (the step index) to each GPU
    iterations = r["arrays"]["Auto/while/1"][3]
    assert moved["while"][1] == {"ncclAllReduce": 2 * (2 * iterations + 1)}
    assert moved["while"][0] <= 4 * (iterations + 1) + 8  # the predicates, one byte each
    np.testing.assert_allclose(r["mlp"]["losses"], r["mlp"]["eager"], rtol=2e-6)
    assert r["mlp"]["held"] == ["DeviceShards"] * 4


def test_nccl_unique_id_goes_over_mpi():
    """2 processes with one stand-in GPU each: the group's first process makes the NCCL
    unique id, MPI carries it (as host bytes) to the other, and each process initialises its
    own rank of the 2-rank communicator with the same id (returning once both joined), once.
    An all-reduce whose count differs between the processes is NCCL's invalid argument."""
    _need_mpi()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "cupy_standin"),
                                                       str(ROOT)]),
               CUPY_STANDIN_DEVICES="1", JAX_PLATFORMS="cpu", GPUARR_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(PROGRAMS), "gpuarr",
                           "nccl_ids", "1", "--mpi"], capture_output=True, text=True,
                          timeout=LIMIT, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = sorted((json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines()
                      if line.startswith("RESULT ")), key=lambda r: r["process"])
    assert [(r["rank"], r["comm_rank"], r["size"]) for r in results] == [(0, 0, 2), (1, 1, 2)]
    assert all(r["same_id"] and r["id_bytes"] == 128 and r["cached"] for r in results)
    for r in results:  # counts that differ between the processes' ranks: NCCL's error in both
        assert r["mismatch"].startswith("NCCL_ERROR_INVALID_ARGUMENT: invalid argument")
        assert "collective call 0: the ranks called" in r["mismatch"]


@functools.cache
def _two_processes_with_gpus() -> list:
    """The RESULTs of `mpiexec -n 2` running tests/scale_out/programs.py's gpu_processes with
    2 stand-in GPUs per process (4 in the mesh), in process order."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "cupy_standin"),
                                                       str(ROOT)]),
               CUPY_STANDIN_DEVICES="2", JAX_PLATFORMS="cpu", GPUARR_PLATFORMS="cuda")
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(PROGRAMS), "gpuarr",
                           "gpu_processes", "2", "--mpi"], capture_output=True, text=True,
                          timeout=LIMIT, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return sorted((json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines()
                   if line.startswith("RESULT ")), key=lambda r: r.get("process", 0))


def _gpu_processes() -> list:
    _need_mpi()
    results = _two_processes_with_gpus()
    if any("skip" in r for r in results):
        pytest.skip(results[0]["skip"])
    assert [r["process"] for r in results] == [0, 1]
    return results


def test_collectives_between_gpus_of_two_processes_run_over_nccl():
    """mpiexec -n 2 with 2 stand-in GPUs per process, the cuda platform listing all 4:
    shard_map's psum, pmax, all_gather, psum_scatter, ppermute and all_to_all over the 4 GPUs
    equal the one-device path, and the data-parallel MLP gives the one-process losses to
    float32 rounding. The data between the processes went through the stand-in's NCCL (its
    calls, and bytes sent to the other process), not through the host: the input's pieces
    were on the GPUs already, the results stay there, and gpuarr's own MPI exchanges carried
    none."""
    results = _gpu_processes()
    (one,), _ = _run(["mlp", "1"])
    calls = {"psum": {"ncclAllReduce": 2}, "pmax": {"ncclAllReduce": 2},
             "all_gather": {"ncclAllGather": 2}, "psum_scatter": {"ncclReduceScatter": 2},
             "ppermute": {"ncclSend": 2, "ncclRecv": 2},
             "all_to_all": {"ncclSend": 6, "ncclRecv": 6}}  # 3 peers per GPU, 2 GPUs
    for p, r in enumerate(results):
        local = [f"cuda:{2 * p}", f"cuda:{2 * p + 1}"]
        # ids number every process's GPUs; local_hardware_id is the CUDA ordinal in its process
        assert r["devices"] == [[0, 0, 0], [1, 0, 1], [2, 1, 0], [3, 1, 1]]
        assert r["local"] == local
        assert r["remote_put"].startswith(f"CudaDevice(id={3 if p == 0 else 0}) is a GPU of "
                                          f"process {1 - p}: this process can place data")
        assert all(r["same"].values()), r["same"]
        for name, moved in r["moved"].items():
            assert moved["host"] == 0, (name, moved)
            assert moved["held"] == "DeviceShards" and moved["devices"] == local, name
            assert moved["nccl"] == calls[name], (name, moved)
            assert moved["peer_bytes"] > 0, name
        mlp = r["mlp"]
        assert mlp["devices"] == 4
        np.testing.assert_allclose(mlp["losses"], one["losses"], rtol=2e-6)
        # every step's gradients (and loss) all-reduced over NCCL, 2 local GPUs each sending
        # its part to the other process; gpuarr's MPI moved no data
        assert mlp["nccl"]["ncclAllReduce"] >= 20 * 5 * 2 and set(mlp["nccl"]) == {
            "ncclAllReduce"}
        assert mlp["peer_bytes"] >= 20 * 2 * mlp["gradient_bytes"]
        assert mlp["mpi_data"] == {"allgather_array": 0, "allreduce_sum": 0}


def _held_on(got: dict, local: list, n: int = 1) -> None:
    """Each of the `n` outputs of a case is pieces on this process's GPUs."""
    assert got["held"] == ["DeviceShards"] * n and got["devices"] == [local] * n, got
    assert got["dtypes"] == [True] * n, got


def test_arrays_over_gpus_of_two_processes_keep_their_pieces_there():
    """make_array_from_process_local_data over the GPUs of 2 processes puts each local piece
    on its GPU, and a shard_map reads the outputs of the one before it where they are: nothing
    crosses the host, only NCCL's all-reduce crosses to the other process, and the values
    equal the one-GPU results bit for bit. So does the gradient of a shard_map, not jitted."""
    for p, r in enumerate(_gpu_processes()):
        local = [f"cuda:{2 * p}", f"cuda:{2 * p + 1}"]
        assert r["placed"] == ["DeviceShards", [local[0], True], [local[1], True]]
        chain = r["chain"]["chain"]
        _held_on(chain, local, 2)
        assert chain["host"] == 0 and chain["nccl"] == {"ncclAllReduce": 2}
        assert chain["peer"] > 0 and chain["diff"] == [0.0, 0.0]
        assert chain["specs"] == ["P('i',)", "P(None,)"]
        grad = r["chain"]["grad"]  # grad of a shard_map, eagerly: per GPU as well
        _held_on(grad, local)
        assert grad["host"] <= 4 * 2 and grad["diff"] == [0.0] and grad["specs"] == ["P('i',)"]
        # the psum; its transpose is a pvary with check_vma, as in JAX, which moves nothing
        assert grad["nccl"] == {"ncclAllReduce": 2}


def test_eager_operations_on_arrays_over_gpus_of_two_processes():
    """Eager elementwise operations and reductions on an array over the GPUs of 2 processes
    run as within one process: per GPU piece (elementwise, over the unsplit dimension), or per
    piece with an all-reduce (all-gather for argmax) over NCCL across the processes, the
    result held by the GPUs with JAX's sharding. Nothing but a scalar operand crosses the
    host; values equal one GPU's bit for bit (the data's sums are exact in any order), the
    sum of sines to float32 rounding."""
    for p, r in enumerate(_gpu_processes()):
        local = [f"cuda:{2 * p}", f"cuda:{2 * p + 1}"]
        for name, got in r["eager"].items():
            _held_on(got, local)
            # a scalar per GPU at most; the added row's block per GPU
            assert got["host"] <= (3 * 4 * 2 if name == "addrow" else 4 * 2), (name, got)
            if name in ("add", "sin", "mul", "cast", "sum1", "max1", "addrow"):
                assert got["nccl"] == {} and got["diff"] == [0.0], (name, got)
                assert got["specs"][0].startswith("P('i'"), (name, got)
                continue
            assert got["nccl"] == ({"ncclAllGather": 4} if name.startswith("arg") else
                                   {"ncclAllReduce": 2}), (name, got)
            assert got["peer"] > 0, name
            assert got["diff"][0] <= (1e-6 if name == "sin_sum" else 0.0), (name, got)
            assert got["specs"] == (["P(None,)"] if name.endswith("0") else ["P()"]), name


def test_jit_on_inputs_split_over_gpus_of_two_processes():
    """jit's data-parallel case over the GPUs of 2 processes (batch split, weights
    replicated): each GPU runs the per-device program on its piece, the loss's and gradient's
    sums are all-reduced over NCCL across the processes, nothing crosses the host, and the
    outputs stay on the GPUs with JAX's shardings; the values equal one GPU's to float32
    rounding (an elementwise jit bit for bit)."""
    for p, r in enumerate(_gpu_processes()):
        local = [f"cuda:{2 * p}", f"cuda:{2 * p + 1}"]
        step, elementwise = r["jit_split"]["step"], r["jit_split"]["elementwise"]
        _held_on(step, local, 2)
        assert step["host"] == 0 and step["nccl"] == {"ncclAllReduce": 4}
        assert step["peer"] > 0 and max(step["diff"]) <= 1e-6
        assert step["specs"] == ["P()", "P(None, None)"]
        _held_on(elementwise, local)
        assert elementwise["host"] == 0 and elementwise["nccl"] == {}
        assert elementwise["diff"] == [0.0] and elementwise["specs"] == ["P('i', None)"]


def test_pmap_over_gpus_of_two_processes():
    """pmap with 2 processes of 2 GPUs: each process passes its 2 positions and gets back
    its own (on its GPUs), and psum, pmean, all_gather and psum_scatter span all 4 GPUs over
    NCCL, equal to the named vmap over the 4 positions; so do a pmap given a keyword argument
    (mapped over its leading axis) and one given a static argument. Only the local batch
    crosses the host (pmean's divisor is the axis size, with no all-reduce); a pmap on
    another's outputs reads them on the GPUs. out_axes given per output (a dict: axis 1,
    None, axis 0) gives each process its positions of the mapped outputs and the unmapped
    one whole, as JAX."""
    calls = {"psum": {"ncclAllReduce": 2}, "pmean": {"ncclAllReduce": 2},
             "all_gather": {"ncclAllGather": 2}, "psum_scatter": {"ncclReduceScatter": 2},
             "keywords": {"ncclAllReduce": 2}, "static": {"ncclAllReduce": 2}}
    for p, r in enumerate(_gpu_processes()):
        local = [f"cuda:{2 * p}", f"cuda:{2 * p + 1}"]
        for name, got in r["pmap"].items():
            assert got["same"], name
            assert got["shape"][0] == 2, name
            if name == "chained":
                assert got["host"] == 0 and got["nccl"] == {"ncclAllReduce": 2}
                continue
            assert got["devices"] == local and got["nccl"] == calls[name], (name, got)
            batch = 2 * 3 * 4  # the local positions, float32[2, 3]
            if name == "keywords":  # two mapped arguments
                batch *= 2
            assert got["host"] == batch, (name, got)  # pmean's divisor is folded: no scalar
        assert r["pmap_out_axes"] == {  # out_axes per output, as JAX
            "outer": {"same": True, "shape": [3, 2, 2]}, "max": {"same": True, "shape": [3]},
            "twice": {"same": True, "shape": [2, 3]}}


def test_resharding_over_gpus_of_two_processes_goes_over_nccl():
    """An array split over the GPUs of 2 processes, put replicated (and back to its split)
    with device_put, and used by eager operations that need its global value (a slice along
    the split dimension, stack, a dot contracting the split): each GPU receives the blocks it
    lacks from the GPUs holding them over NCCL (send/recv), nothing through the host for the
    reshardings, and the results equal the one-GPU results bit for bit, held by this
    process's GPUs with JAX's shardings."""
    for r in _gpu_processes():
        got = r["reshard"]
        for name, case in got.items():
            assert case["diff"] == [0.0] and case["dtypes"] == [True], (name, case)
            assert case["held"] == ["DeviceShards"] and case["devices"] == [r["local"]], name
            assert set(case["nccl"]) == {"ncclSend", "ncclRecv"}, (name, case)
        assert {name: case["specs"][0] for name, case in got.items()} == {
            "put_rep": "P()", "put_back": "P('i',)", "slice": "P(None, None)",
            "stack": "P(None, 'i', None)", "dot_t": "P(None, None)"}
        block = 4 * 3 * 4  # each GPU's rows of the (16, 3) float32 value
        for name in ("put_rep", "put_back", "slice"):
            # each local GPU's block to the 2 GPUs of the other process, 3 receives per GPU
            assert got[name]["host"] == 0 and got[name]["peer"] == 2 * 2 * block, got[name]
            assert got[name]["nccl"] == {"ncclSend": 6, "ncclRecv": 6}, got[name]


def test_reading_a_split_array_over_gpus_of_two_processes_is_jax_error():
    """Reading an array split over the GPUs of 2 processes to the host (np.asarray, str)
    raises JAX's error for reading an array spanning processes; its repr is JAX's shape
    and dtype."""
    for r in _gpu_processes():
        for name in ("str", "read"):
            assert r["errors"][name].startswith(
                "RuntimeError: Fetching value for `jax.Array` that spans non-addressable"), name
        assert r["shown"] == "Array(shape=(16, 3), dtype=float32)"


_MPI_RUNS = [(2, 2, "cpu"), (4, 1, "cpu"), (2, 1, "")]


@functools.cache
def _run_mpi_collectives(procs, local, platforms) -> list:
    results, _ = _run(["mpi_collectives", str(local)], mpi=procs, platforms=platforms)
    assert sorted(r["process"] for r in results) == list(range(procs))
    return results


def _mpi_collectives(procs, local, platforms) -> list:
    """The RESULTs of `mpiexec -n procs` running the mpi_collectives program with `local` cpu
    devices per process (one run for the tests below)."""
    _need_mpi()
    return _run_mpi_collectives(procs, local, platforms)


@pytest.mark.parametrize("procs,local,platforms", _MPI_RUNS)
def test_mpi_collectives_equal_single_process(procs, local, platforms):
    for r in _mpi_collectives(procs, local, platforms):
        assert r["count"] == procs and r["devices"] == procs * local and r["local"] == local
        assert all(r["same"].values()), r["same"]
        assert r["allgather"] == [float(p) for p in range(procs)]
        assert r["broadcast"] == 10.0


_NO_MPI = {"allgather_array": 0, "allreduce_sum": 0, "alltoallv": 0}


@pytest.mark.parametrize("procs,local,platforms", _MPI_RUNS)
def test_pmap_over_cpu_devices_of_several_processes(procs, local, platforms):
    """pmap with several processes of cpu devices: each process passes its local batch and
    gets back its own positions, held by its devices; psum, pmean, pmax, all_gather,
    psum_scatter and ppermute span every process's devices over MPI and equal the
    one-process named vmap over all the positions (bit for bit; a sum of unrounded values,
    added in MPI's order, to float32 rounding). Keyword arguments are mapped over their
    leading axis and a static argument is passed whole, as in JAX. `psum(1, axis)` is the
    axis size with no exchange (so pmean all-reduces only its operand), and a pmap on
    another's outputs reads them on their devices (no batch copied in from the host). A
    C-ordered float32 NumPy batch is lent to the devices, not copied (a result returning it
    unchanged is copied out, so changing the batch afterwards leaves the result alone); a
    float64 batch is converted, so copied. Repeated calls with the same shapes and static
    value trace the function once, as JAX's pmap. out_axes given per output (a dict: axis
    1, None, axis 0) gives each process its positions of the mapped outputs and the
    unmapped one whole, equal to the named vmap's."""
    for r in _mpi_collectives(procs, local, platforms):
        pmaps = {name: got for name, got in r["pmap"].items() if name != "traces"}
        for name, got in pmaps.items():
            assert got["same"], (name, got)
            assert got["held"] == "DeviceShards" and got["devices"] == r["local_ids"], name
            assert got["shape"][0] == local, name
        used = {name: got["used"] for name, got in pmaps.items()}
        for name in ("psum", "pmean", "psum_rounding", "keywords", "static", "float64"):
            assert used[name]["allreduce_sum"] == 1 and used[name]["allgather_array"] == 0, (
                name, used[name])
        for name in ("pmax", "all_gather", "psum_scatter", "ppermute"):
            assert used[name]["allgather_array"] == 1, (name, used[name])
        assert used["size"] == dict(_NO_MPI, from_host=1, copied=0)
        assert used["keywords"]["from_host"] == 3  # three mapped arguments
        assert used["chained"] == dict(_NO_MPI, allreduce_sum=1, from_host=0, copied=0)
        assert all(u["copied"] == 0 for name, u in used.items() if name != "float64"), used
        assert used["float64"]["from_host"] == used["float64"]["copied"] == 1
        assert used["identity"] == dict(_NO_MPI, from_host=1, copied=0)
        assert not pmaps["identity"]["shares"]
        assert r["pmap"]["traces"] == 3
        assert r["pmap_out_axes"] == {  # out_axes per output, as JAX
            "outer": {"same": True, "shape": [3, local, 2]}, "max": {"same": True, "shape": [3]},
            "twice": {"same": True, "shape": [local, 3]}}


@pytest.mark.parametrize("procs,local,platforms", _MPI_RUNS)
def test_psum_results_across_processes_own_their_memory(procs, local, platforms):
    """Two psums in a row over 36 MiB per device (a jitted shard_map's and a pmap's), both
    results kept: every value of both equals the exact sum, no two pieces share memory
    (the MPI sum's result block is reused only once nothing refers to it), and with one
    device per process each result is that block itself, not a copy of it."""
    for r in _mpi_collectives(procs, local, platforms):
        for name, got in r["kept"].items():
            assert got["same"] == [True, True] and not got["shared"], (name, got)
            if local == 1:
                assert all(got["own_block"]), (name, got)


def test_pmap_traces_once_per_signature_as_jax():
    """pmap over 2 cpu devices traces its function once per argument shapes and static
    value, as JAX's pmap does (a repeated call runs the Program traced by the first)."""
    pytest.importorskip("jax")
    (ours,), _ = _run(["pmap_traces", "2"])
    (theirs,), _ = _run(["pmap_traces", "2"], lib="jax")
    assert ours == theirs == {"traces": 3}


@pytest.mark.parametrize("procs,local,platforms", _MPI_RUNS)
def test_eager_operations_over_cpu_devices_of_several_processes(procs, local, platforms):
    """Eager operations on an array split over the cpu devices of several processes run as
    on GPUs: elementwise ones (a scalar, a broadcast row), reductions over the unsplit
    dimension and the per-block ones (a matrix product keeping its contraction whole, a
    slice and a cumsum along the unsplit dimension, a transpose) on each device's piece with
    no exchange, reductions and argmax/argmin across
    the split dimension per device with MPI between the processes; the results are pieces
    on this process's devices with JAX's shardings, bit for bit the one-device results (cpu
    sums across devices add the gathered operand whole). Reading the split array to the host
    (`np.asarray`, `str`, `tolist`) is JAX's error, and its repr is JAX's shape and dtype."""
    for r in _mpi_collectives(procs, local, platforms):
        for name, got in r["eager"].items():
            assert got["same"], (name, got)
            assert got["held"] == "DeviceShards" and got["devices"] == r["local_ids"], name
            if name in ("add", "sin", "mul", "cast", "sum1", "max1", "addrow", "dot", "slice1",
                        "cumsum1", "transpose"):
                assert got["used"] == dict(_NO_MPI, from_host=0, copied=0), (name, got)
                assert got["spec"] == ("P(None, 'i')" if name == "transpose" else
                                       "P('i',)" if name in ("sum1", "max1") else
                                       "P('i', None)"), (name, got)
                continue
            assert got["used"]["allgather_array"] >= 1, (name, got)
            assert got["spec"] == ("P(None,)" if name.endswith("0") else "P()"), (name, got)
        for name, error in r["errors"].items():
            assert error.startswith("RuntimeError: Fetching value for `jax.Array` that spans "
                                    "non-addressable"), name
        rows = procs * local * procs * local
        assert r["shown"] == f"Array(shape=({rows}, 3), dtype=float32)"


@functools.cache
def _jax_reshard_specs(n) -> dict:
    """The shardings JAX (XLA's propagation) gives the reshard cases on n cpu devices."""
    (specs,), _ = _run(["reshard_specs", str(n)], lib="jax")
    return specs


_RESHARD_ONLY = ("put_rep", "put_col", "put_back", "constraint", "jit_out")


@pytest.mark.parametrize("procs,local,platforms", _MPI_RUNS)
def test_resharding_and_global_value_across_processes_match_jax(procs, local, platforms):
    """An Array split over the rows of the cpu devices of several processes, resharded
    (device_put to replicated, to split columns and back, with_sharding_constraint, jit's
    out_shardings, a shard_map eager or jitted whose in_spec splits the columns) and used by
    eager operations that need its global value (slices and an index along the split
    dimension, stack, concatenate, dots contracting or keeping the split, a gather, pad,
    sort, cumsum, fft, median): every result equals the one-device result bit for bit, is
    held as this process's pieces, and reports the sharding JAX gives on one process with as
    many cpu devices. A resharding is one MPI Alltoallv carrying only the blocks another
    process lacks, once per process however many of its devices need them."""
    pytest.importorskip("jax")
    n = procs * local
    rows, cols, width = 4 * n, 4, 4  # the (4n, 4) float32 value, split over the rows
    mine = rows * local // n  # the rows this process holds
    specs = _jax_reshard_specs(n)
    for r in _mpi_collectives(procs, local, platforms):
        got = r["reshard"]
        assert set(got) == set(specs)
        for name, case in got.items():
            assert case["same"] and case["held"] == "DeviceShards", (name, case)
            assert case["spec"] == specs[name], (name, case["spec"], specs[name])
        for name in _RESHARD_ONLY:
            assert got[name]["used"] == dict(_NO_MPI, alltoallv=2 if name == "put_back" else 1,
                                             from_host=0, copied=0), (name, got[name])
        assert got["smap"]["used"]["alltoallv"] == got["smap_jit"]["used"]["alltoallv"] == 1
        # replicated: this process's rows to each other process, once
        assert got["put_rep"]["sent"] == mine * cols * width * (procs - 1)
        assert got["put_rep"]["shapes"] == [[rows, cols]]
        # split columns: this process's rows of the other processes' columns
        assert got["put_col"]["sent"] == mine * (cols * (n - local) // n) * width
        assert got["put_col"]["shapes"] == [[rows, cols // n]]


def test_data_parallel_mlp_same_losses_on_devices_and_processes():
    one, _ = _run(["mlp", "1"])
    four_devices, _ = _run(["mlp", "4"])
    runs = [one[0]["losses"], four_devices[0]["losses"]]
    try:
        _need_mpi()
    except pytest.skip.Exception:
        pass
    else:
        for procs in (2, 4):
            results, _ = _run(["mlp", "1"], mpi=procs)
            assert len(results) == procs
            runs += [r["losses"] for r in results]
    assert len(runs[0]) == 20 and runs[0][-1] < runs[0][0]
    for losses in runs[1:]:
        np.testing.assert_allclose(losses, runs[0], rtol=2e-6)


@pytest.mark.parametrize("kind,error,message", [
    ("twice", "RuntimeError", "distributed.initialize should only be called once."),
    ("shapes", "ValueError", "process 0: process_allgather of float32[3]"),
])
def test_faults_raise_clear_errors(kind, error, message):
    _need_mpi()
    results, _ = _run(["fault", kind], mpi=2)
    assert len(results) == 2
    for r in results:
        assert r["error"] == error and message in r["message"]


def test_absent_or_dead_process_fails_within_the_timeout():
    _need_mpi()
    results, _ = _run(["fault", "absent"], mpi=2)
    (r,) = [r for r in results if r["process"] == 0]
    assert r["error"] == "ProcessFailureError" and "waited 2 s" in r["message"]
    # A process that exits: the launcher ends the run (never a hang) with its status.
    _, proc = _run(["fault", "dies"], mpi=2, check=False)
    assert proc.returncode != 0


def test_process_dying_during_a_transfer_fails_the_others_within_the_timeout():
    """Process 1 exits with its part of a 64 MiB psum posted to MPI; the launcher is told to
    leave the other running (MPICH's -disable-auto-cleanup), so that gpuarr itself must end
    process 0's wait: ProcessFailureError after the 2 s bound, not a hang."""
    _need_mpi()
    usage = subprocess.run([_mpiexec(), "--help"], capture_output=True, text=True,
                           timeout=60).stdout
    if "-disable-auto-cleanup" not in usage:
        pytest.skip("the launcher cannot leave the survivors running (MPICH's hydra can)")
    env = dict(os.environ, PYTHONPATH=SEARCH_PATH, GPUARR_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([_mpiexec(), "-disable-auto-cleanup", "-n", "2", sys.executable,
                           str(PROGRAMS), "gpuarr", "fault", "dies_in_transfer", "--mpi"],
                          capture_output=True, text=True, timeout=LIMIT, env=env)
    results = [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines()
               if line.startswith("RESULT ")]
    assert [r["process"] for r in results] == [0], proc.stdout[-3000:] + proc.stderr[-3000:]
    (r,) = results
    assert r["error"] == "ProcessFailureError", r
    assert "another process died or stopped during the transfer" in r["message"]
    assert 2 <= r["waited"] < 2 + 30  # the bound, and the time to notice it on a busy machine


def test_initialize_without_a_launcher_says_how_to_start():
    code = ("import gpuarr\ntry:\n    gpuarr.distributed.initialize('localhost:1234', 2, 0)\n"
            "except RuntimeError as e:\n    print(e)")
    env = dict(os.environ, PYTHONPATH=SEARCH_PATH)
    for k in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MPI_LOCALRANKID",
              "SLURM_PROCID"):
        env.pop(k, None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=LIMIT, env=env)
    assert "Run the program with `mpiexec -n 2 python ...`" in out.stdout


def test_initialize_without_mpi4py_names_the_extra():
    code = ("import sys\nsys.modules['mpi4py'] = None\nimport gpuarr\ntry:\n"
            "    gpuarr.distributed.initialize(cluster_detection_method='mpi4py')\n"
            "except ImportError as e:\n    print(e)\nprint(gpuarr.distributed.is_initialized(), "
            "gpuarr.process_count())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=LIMIT, env=dict(os.environ, PYTHONPATH=SEARCH_PATH))
    assert "pip install 'gpuarr[distributed]'" in out.stdout
    assert out.stdout.strip().endswith("False 1")


def test_shard_map_manual_over_some_axes_and_check_vma_match_jax():
    """On 4 cpu devices (a 2 x 2 mesh): shard_map with `axis_names` a subset of the mesh
    axes, and check_vma's errors for outputs whose out_specs claim replication they lack
    (after axis_index, ppermute, all_gather), as JAX 0.10.2 gives them."""
    pytest.importorskip("jax")
    (ours,), _ = _run(["manual_axes", "4"])
    (theirs,), _ = _run(["manual_axes", "4"], lib="jax")
    assert ours["specs"] == theirs["specs"]
    assert ours["values"] == theirs["values"]
    for name, want in theirs["errors"].items():
        got = ours["errors"][name]
        # JAX names its own wrapper of the function in the message; compare the rest.
        assert got[0] == want[0] == "ValueError", name
        assert (re.sub(r"function '[^']*'", "function f", got[1])
                == re.sub(r"function '[^']*'", "function f", want[1])), name


@pytest.mark.parametrize("n", [1, 2])
def test_check_vma_through_control_flow_matches_jax(n):
    """cond, switch, while_loop, scan and fori_loop inside a shard_map on 1 (the named-vmap
    path) and 2 cpu devices: which bodies JAX 0.10.2 accepts, their values (axis_index in a
    branch or loop body included), and JAX's TypeErrors (a loop whose body changes the mesh
    axes its carry varies along, branches that disagree) word for word."""
    pytest.importorskip("jax")
    (ours,), _ = _run(["vma_control_flow", str(n)])
    (theirs,), _ = _run(["vma_control_flow", str(n)], lib="jax")
    assert sorted(ours) == sorted(theirs)
    for name, want in theirs.items():
        got = ours[name]
        if want[0] == "ValueError":  # JAX names its own wrapper of the function
            want[1] = re.sub(r"function '[^']*'", "function f", want[1])
            got[1] = re.sub(r"function '[^']*'", "function f", got[1])
        assert got == want, name


def _same_vma_grads(ours, theirs):
    """vma_grads results agree: each case's values (by value, dtype and shape) or its error's
    class and message (JAX names its own wrapper of the function in the message)."""
    assert ours["devices"] == theirs["devices"]
    assert sorted(ours["cases"]) == sorted(theirs["cases"])
    for name, want in theirs["cases"].items():
        got = ours["cases"][name]
        assert got[0] == want[0], (name, got, want)
        if want[0] != "ok":
            assert (re.sub(r"function '[^']*'", "function f", got[1])
                    == re.sub(r"function '[^']*'", "function f", want[1])), name
            continue
        assert len(got[1]) == len(want[1]), name
        for (value, dtype, shape), (ref, ref_dtype, ref_shape) in zip(got[1], want[1]):
            assert (dtype, shape) == (ref_dtype, ref_shape), name
            np.testing.assert_allclose(value, ref, rtol=1e-4, atol=1e-5, err_msg=name)


def _check_sums_devices(result):
    """With check_vma the gradient of the replicated parameters is the sum of each device's
    own gradient (check_vma=False), whatever the oracle says."""
    cases, n = result["cases"], result["devices"]
    assert cases["step_psum_loss"][0] == cases["step_unchecked"][0] == "ok", cases
    summed, own = cases["step_psum_loss"][1][1:], cases["step_unchecked"][1]
    for (total, _, shape), (each, _, each_shape) in zip(summed, own):
        assert each_shape == [n, *shape]
        np.testing.assert_allclose(np.sum(each, axis=0), total, rtol=1e-4, atol=1e-5)
    assert cases["no_pmean_error"][0] == "ValueError"


@pytest.mark.parametrize("n", [2, 4])
def test_grads_inside_shard_map_follow_check_vma_as_jax(n):
    """On n cpu devices, grad, value_and_grad, vjp and jvp inside a shard_map body with
    check_vma (the default) as JAX 0.10.2 types it: the gradient of a replicated parameter is
    the devices' sum and unvarying (out_specs=P() needs no pmean; with pmean, the same),
    grads through psum and pmean of a loss, through scan and fori_loop, of collectives of an
    unvarying value, pcast; each device's own gradient with check_vma=False; jit around the
    shard_map, grad from outside; the out_specs error for a varying output."""
    (ours,), _ = _run(["vma_grads", str(n)])
    _check_sums_devices(ours)
    pytest.importorskip("jax")
    (theirs,), _ = _run(["vma_grads", str(n)], lib="jax")
    _same_vma_grads(ours, theirs)


@pytest.mark.parametrize("per_process", [1, 2])
def test_grads_inside_shard_map_across_processes_match_jax(per_process):
    """The same cases over the cpu devices of 2 processes: every process gets the values JAX
    computes on one process with as many devices."""
    _need_mpi()
    results, _ = _run(["vma_grads", str(per_process)], mpi=2)
    assert len(results) == 2
    for r in results:
        _check_sums_devices(r)
    pytest.importorskip("jax")
    (theirs,), _ = _run(["vma_grads", str(2 * per_process)], lib="jax")
    for r in results:
        _same_vma_grads(r, theirs)
