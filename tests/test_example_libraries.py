"""gpuarr.example_libraries (optimizers, stax) against jax.example_libraries: optimizer
trajectories on a small quadratic, schedules, clipping and state packing; each stax layer's
output shape, initial parameters (same keys give the same parameters) and outputs; and a small
MLP trained with adam."""
import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest
from jax.example_libraries import optimizers as opt_ref
from jax.example_libraries import stax as stax_ref

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.example_libraries import optimizers, stax

RNG = np.random.RandomState(0)
W0 = RNG.randn(2, 3).astype(np.float32)
B0 = RNG.randn(3).astype(np.float32)
TARGET = RNG.randn(2, 3).astype(np.float32)
SCALE = np.array([0.5, 1.0, 2.0], np.float32)


def _quadratic(np_mod):
    def loss(params):
        w, b = params["w"], params["b"]
        return np_mod.sum(SCALE * (w - TARGET) ** 2) + np_mod.sum((b - 1.0) ** 2 * SCALE)
    return loss


def _assert_trees_close(tree, tree_ref, rtol=1e-6, atol=1e-6):
    leaves, leaves_ref = jax.tree.leaves(tree), jax.tree.leaves(tree_ref)
    assert gpuarr.tree.structure(tree) == gpuarr.tree.structure(jax.tree.map(np.asarray, tree_ref))
    for a, b in zip(leaves, leaves_ref):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _run(lib, grad, np_mod, name, args, kwargs, steps=3, jit=None):
    init, update, get_params = getattr(lib, name)(*args, **kwargs)
    state = init({"w": np_mod.asarray(W0), "b": np_mod.asarray(B0)})
    grad_fn = grad(_quadratic(np_mod))
    step = lambda i, s: update(i, grad_fn(get_params(s)), s)
    if jit is not None:
        step = jit(step)
    for i in range(steps):
        state = step(i, state)
    return get_params(state)


OPTIMIZERS = [
    ("sgd", (0.1,), {}),
    ("sgd", (("exponential_decay", 0.1, 2, 0.5),), {}),
    ("momentum", (0.05, 0.9), {}),
    ("nesterov", (0.05, 0.8), {}),
    ("adagrad", (0.3,), {}),
    ("rmsprop", (0.05,), {"gamma": 0.8}),
    ("rmsprop_momentum", (0.05,), {}),
    ("adam", (0.1,), {}),
    ("adam", (("inverse_time_decay", 0.1, 1, 0.5, True),), {"b1": 0.8}),
    ("adamax", (0.1,), {}),
    ("sm3", (0.2,), {}),
    ("sgd", (("polynomial_decay", 0.2, 2, 0.05),), {}),
    ("momentum", (("piecewise_constant", [1, 2], [0.1, 0.05, 0.01]),), {"mass": 0.5}),
]


def _resolve(lib, args):
    """Turn a leading ("schedule_name", *schedule_args) into that library's schedule."""
    if args and isinstance(args[0], tuple):
        name, *sargs = args[0]
        return (getattr(lib, name)(*sargs),) + tuple(args[1:])
    return args


@pytest.mark.parametrize("name,args,kwargs", OPTIMIZERS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(OPTIMIZERS)])
def test_optimizer_matches_jax(name, args, kwargs):
    got = _run(optimizers, gpuarr.grad, jnp, name, _resolve(optimizers, args), kwargs)
    want = _run(opt_ref, jax.grad, jnp_ref, name, _resolve(opt_ref, args), kwargs)
    _assert_trees_close(got, want)


def test_jitted_update_matches_jax():
    got = _run(optimizers, gpuarr.grad, jnp, "adam", (0.1,), {}, jit=gpuarr.jit)
    want = _run(opt_ref, jax.grad, jnp_ref, "adam", (0.1,), {}, jit=jax.jit)
    _assert_trees_close(got, want)


def test_schedules_match_jax_eagerly_and_under_jit():
    makers = [("constant", (0.3,)), ("exponential_decay", (0.1, 3, 0.5)),
              ("inverse_time_decay", (0.1, 2, 0.5)), ("inverse_time_decay", (0.1, 2, 0.5, True)),
              ("polynomial_decay", (0.2, 4, 0.01, 2.0)),
              ("piecewise_constant", ([2, 5], [1.0, 0.5, 0.1]))]
    for name, args in makers:
        sched, sched_ref = getattr(optimizers, name)(*args), getattr(opt_ref, name)(*args)
        jitted = gpuarr.jit(lambda i, s=sched: jnp.asarray(s(i)))
        for i in [0, 1, 2, 5, 7]:
            want = np.asarray(sched_ref(i))
            np.testing.assert_allclose(np.asarray(sched(i)), want, rtol=1e-6, err_msg=name)
            np.testing.assert_allclose(np.asarray(jitted(jnp.asarray(i))), want, rtol=1e-6,
                                       err_msg=name)
    assert optimizers.make_schedule(0.5)(3) == 0.5
    f = lambda i: i
    assert optimizers.make_schedule(f) is f
    with pytest.raises(TypeError):
        optimizers.make_schedule(jnp.ones(2))
    with pytest.raises(ValueError, match="boundaries length must be one shorter"):
        optimizers.piecewise_constant([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="boundaries and values must be sequences"):
        optimizers.piecewise_constant(1, [1.0, 2.0])


def test_l2_norm_and_clip_grads():
    tree = {"w": W0, "b": [B0, np.float32(3.0)]}
    tree_g = gpuarr.tree.map(jnp.asarray, tree)
    tree_r = jax.tree.map(jnp_ref.asarray, tree)
    np.testing.assert_allclose(np.asarray(optimizers.l2_norm(tree_g)),
                               np.asarray(opt_ref.l2_norm(tree_r)), rtol=1e-6)
    for max_norm in [0.5, 100.0]:
        _assert_trees_close(optimizers.clip_grads(tree_g, max_norm),
                            opt_ref.clip_grads(tree_r, max_norm))


def test_state_pack_unpack_and_structure_errors():
    init, update, get_params = optimizers.momentum(0.1, 0.9)
    state = init({"w": jnp.asarray(W0), "b": jnp.asarray(B0)})
    assert isinstance(state, optimizers.OptimizerState)
    # The state is a pytree whose leaves are the per-parameter state arrays.
    assert len(gpuarr.tree.leaves(state)) == 4
    marked = optimizers.unpack_optimizer_state(state)
    assert set(marked) == {"w", "b"} and isinstance(marked["w"], optimizers.JoinPoint)
    np.testing.assert_array_equal(np.asarray(marked["w"].subtree[0]), W0)
    assert list(marked["b"])[0] is marked["b"].subtree
    repacked = optimizers.pack_optimizer_state(marked)
    assert repacked.tree_def == state.tree_def and repacked.subtree_defs == state.subtree_defs
    _assert_trees_close(get_params(repacked), {"w": W0, "b": B0})

    ref_init, ref_update, _ = opt_ref.momentum(0.1, 0.9)
    ref_state = ref_init({"w": jnp_ref.asarray(W0), "b": jnp_ref.asarray(B0)})
    with pytest.raises(TypeError) as err_ref:
        ref_update(0, {"w": jnp_ref.asarray(W0)}, ref_state)
    with pytest.raises(TypeError) as err:
        update(0, {"w": jnp.asarray(W0)}, state)
    assert str(err.value) == str(err_ref.value)


# ---------------------------------------------------------------- stax


def _check_layer(layer, layer_ref, input_shape, inputs=None, jit=True, **apply_kwargs):
    """Same output shape and initial params as JAX from key 0, and the same outputs (eagerly
    and, with `jit`, under gpuarr.jit)."""
    shape, params = layer[0](gpuarr.random.key(0), input_shape)
    shape_ref, params_ref = layer_ref[0](jax.random.key(0), input_shape)
    assert tuple(shape) == tuple(shape_ref)
    assert gpuarr.tree.structure(params) == gpuarr.tree.structure(
        jax.tree.map(np.asarray, params_ref))
    for p, q in zip(gpuarr.tree.leaves(params), jax.tree.leaves(params_ref)):
        assert p.dtype == q.dtype
        np.testing.assert_array_equal(np.asarray(p), np.asarray(q))
    if inputs is None:
        inputs = np.random.RandomState(1).randn(*input_shape).astype(np.float32)
    x = gpuarr.tree.map(jnp.asarray, inputs)
    x_ref = jax.tree.map(jnp_ref.asarray, inputs)
    kwargs_ref = {k: (jax.random.key(v) if k == "rng" else v) for k, v in apply_kwargs.items()}
    kwargs = {k: (gpuarr.random.key(v) if k == "rng" else v) for k, v in apply_kwargs.items()}
    out = layer[1](params, x, **kwargs)
    out_ref = layer_ref[1](params_ref, x_ref, **kwargs_ref)
    _assert_trees_close(out, out_ref, rtol=2e-6, atol=2e-6)
    if jit:
        out_jit = gpuarr.jit(lambda p, v: layer[1](p, v, **kwargs))(params, x)
        _assert_trees_close(out_jit, out_ref, rtol=2e-6, atol=2e-6)
    return shape


LAYERS = [
    ("Dense", (4,), {}, (2, 3, 5)),
    ("Conv", (4, (3, 3)), {"strides": (2, 1), "padding": "SAME"}, (2, 5, 6, 3)),
    ("Conv", (2, (2, 3)), {}, (1, 4, 5, 2)),
    ("GeneralConv", (("NCHW", "OIHW", "NHWC"), 3, (3, 2)), {"padding": "SAME"}, (2, 2, 5, 4)),
    ("ConvTranspose", (3, (3, 3)), {"strides": (2, 2), "padding": "SAME"}, (1, 4, 3, 2)),
    ("ConvTranspose", (3, (3, 2)), {"strides": (2, 1)}, (1, 3, 4, 2)),
    ("Conv1DTranspose", (4, (3,)), {"strides": (2,), "padding": "SAME"}, (2, 5, 3)),
    ("BatchNorm", (), {}, (2, 3, 4, 3)),
    ("BatchNorm", (), {"axis": 0, "center": False}, (5, 3)),
    ("BatchNorm", (), {"axis": (0,), "scale": False}, (5, 3)),
    ("MaxPool", ((2, 2),), {}, (2, 5, 4, 3)),
    ("MaxPool", ((2, 3),), {"strides": (2, 2), "padding": "SAME"}, (1, 5, 5, 2)),
    ("SumPool", ((2,),), {"spec": "NCH"}, (2, 3, 5)),
    ("AvgPool", ((2, 3), (2, 2), "SAME"), {}, (2, 5, 5, 3)),
    ("AvgPool", ((3,), (2,), "SAME"), {"spec": "NCH"}, (2, 3, 5)),
    ("FanInConcat", (), {"axis": 1}, None),
]
ELEMENTWISE = ["Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu",
               "LeakyRelu", "Selu", "Gelu", "Flatten", "Identity"]


@pytest.mark.parametrize("name,args,kwargs,shape", LAYERS,
                         ids=[f"{n}-{i}" for i, (n, *_) in enumerate(LAYERS)])
def test_layer_matches_jax(name, args, kwargs, shape):
    layer = getattr(stax, name)(*args, **kwargs)
    layer_ref = getattr(stax_ref, name)(*args, **kwargs)
    if shape is None:  # fan-in layers take a list of inputs
        shapes = [(2, 3), (2, 4)]
        inputs = [np.ones(s, np.float32) * (i + 1) for i, s in enumerate(shapes)]
        _check_layer(layer, layer_ref, shapes, inputs)
    else:
        _check_layer(layer, layer_ref, shape)


def test_elementwise_layers_match_jax():
    for i, name in enumerate(ELEMENTWISE):
        _check_layer(getattr(stax, name), getattr(stax_ref, name), (2, 3, 4), jit=i % 4 == 0)


def test_shapes_with_unknown_batch_match_jax():
    # A batch size of -1 passes through (pooling gives 0 for it, as in JAX). The layers repeat
    # entries of LAYERS so that JAX's initializers are already compiled.
    for name, args, kwargs, shape in [LAYERS[i] for i in (0, 1, 4, 11, 13)]:
        shape = (-1,) + shape[1:]
        out, _ = getattr(stax, name)(*args, **kwargs)[0](gpuarr.random.key(0), shape)
        out_ref, _ = getattr(stax_ref, name)(*args, **kwargs)[0](jax.random.key(0), shape)
        assert tuple(out) == tuple(out_ref), name
    assert stax.Flatten[0](None, (-1, 3, 4))[0] == (-1, 12)


def test_dropout_matches_jax():
    _check_layer(stax.Dropout(0.7), stax_ref.Dropout(0.7), (4, 5), rng=3)
    _check_layer(stax.Dropout(0.7, mode="test"), stax_ref.Dropout(0.7, mode="test"), (4, 5), rng=3)
    with pytest.raises(ValueError, match="Dropout layer requires apply_fun to be called"):
        stax.Dropout(0.5)[1]((), jnp.ones(3))


def _net(lib):
    return lib.serial(
        lib.Dense(6), lib.FanOut(2),
        lib.parallel(lib.serial(lib.Dense(5), lib.Relu), lib.Dense(5)), lib.FanInSum,
        lib.shape_dependent(lambda shape: lib.Dense(shape[-1] - 2)), lib.Tanh,
        lib.FanOut(2), lib.parallel(lib.Identity, lib.Dropout(0.8)), lib.FanInConcat(),
        lib.LogSoftmax)


def test_combinators_match_jax():
    shape = _check_layer(_net(stax), _net(stax_ref), (3, 4), rng=7)
    assert tuple(shape) == (3, 6)


def _mlp_training(lib, opt_lib, np_mod, random_mod, grad, jit):
    init_fun, apply_fun = lib.serial(lib.Dense(8), lib.Relu, lib.Dense(3), lib.LogSoftmax)
    _, params = init_fun(random_mod.key(0), (-1, 4))
    x = np_mod.asarray(np.random.RandomState(2).randn(5, 4).astype(np.float32))
    labels = np_mod.asarray(np.eye(3, dtype=np.float32)[[0, 2, 1, 1, 0]])
    loss = lambda p: -np_mod.mean(np_mod.sum(apply_fun(p, x) * labels, axis=-1))
    opt_init, opt_update, get_params = opt_lib.adam(0.05)

    @jit
    def step(i, state):
        return opt_update(i, grad(loss)(get_params(state)), state)

    state = opt_init(params)
    for i in range(2):
        state = step(i, state)
    return get_params(state), loss(get_params(state))


def test_mlp_trained_with_adam_matches_jax():
    params, value = _mlp_training(stax, optimizers, jnp, gpuarr.random, gpuarr.grad, gpuarr.jit)
    params_ref, value_ref = _mlp_training(stax_ref, opt_ref, jnp_ref, jax.random, jax.grad,
                                          jax.jit)
    _assert_trees_close(params, params_ref)
    np.testing.assert_allclose(np.asarray(value), np.asarray(value_ref), rtol=1e-6)


def _cnn(lib):
    return lib.serial(lib.Conv(3, (3, 3), padding="SAME"), lib.BatchNorm(), lib.Relu,
                      lib.MaxPool((2, 2), (2, 2)), lib.ConvTranspose(2, (2, 2), (2, 2)),
                      lib.AvgPool((2, 2), padding="SAME"), lib.Flatten, lib.Dense(2), lib.Softplus)


def test_cnn_grad_and_vmap_match_jax():
    x = np.random.RandomState(3).randn(2, 4, 4, 2).astype(np.float32)
    init_fun, apply_fun = _cnn(stax)
    _, params = init_fun(gpuarr.random.key(0), x.shape)
    grads = gpuarr.jit(gpuarr.grad(lambda p, v: jnp.sum(apply_fun(p, v) ** 2)))(params, x)
    per_example = gpuarr.vmap(lambda v: apply_fun(params, v[None])[0])(jnp.asarray(x))

    init_ref, apply_ref = _cnn(stax_ref)
    _, params_ref = init_ref(jax.random.key(0), x.shape)
    grads_ref = jax.jit(jax.grad(lambda p, v: jnp_ref.sum(apply_ref(p, v) ** 2)))(params_ref, x)
    per_example_ref = jax.jit(jax.vmap(lambda v: apply_ref(params_ref, v[None])[0]))(x)
    _assert_trees_close(grads, grads_ref, rtol=2e-6, atol=2e-6)
    _assert_trees_close(per_example, per_example_ref, rtol=2e-6, atol=2e-6)
