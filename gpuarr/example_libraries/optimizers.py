"""First-order optimizers written as `(init_fun, update_fun, get_params)` triples, as JAX's
`jax.example_libraries.optimizers`.

Each optimizer is defined on one array by an `@optimizer`-decorated maker; the decorator lifts
the triple to pytrees of parameters. `init_fun(params)` builds an `OptimizerState`,
`update_fun(step, grads, state)` returns the next one and `get_params(state)` reads the
parameters back. Step sizes are numbers or schedules (functions of the step index); the
schedules, gradient clipping and (un)packing of states for serialization live here too.
Everything is gpuarr.numpy arithmetic, so an update step can be jitted, and formulas and
defaults follow JAX so that the same gradients give the same parameters.
"""
from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

from gpuarr import pytrees, tree
from gpuarr.numpy import creation, dtype_functions, manipulation, products, reductions, ufuncs

__all__ = [
    "JoinPoint", "Optimizer", "OptimizerState", "adagrad", "adam", "adamax", "clip_grads",
    "constant", "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule", "momentum",
    "nesterov", "optimizer", "pack_optimizer_state", "piecewise_constant", "polynomial_decay",
    "rmsprop", "rmsprop_momentum", "sgd", "sm3", "unpack_optimizer_state",
]

# The state is kept flat in two levels: one entry per parameter leaf (the outer tree), each
# holding the flattened per-array state that the single-array `init` built (the inner trees).
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
pytrees.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Array = Any
Params = Any
State = Any
Updates = Params
Step = int
Schedule = Callable[[Step], float]
InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
    """An `(init_fn, update_fn, params_fn)` triple."""

    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def _unzip2(pairs):
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return tuple(firsts), tuple(seconds)


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]) -> Callable[..., Optimizer]:
    """Decorator lifting a maker of single-array `(init, update, get_params)` functions to one
    whose functions take pytrees of parameters and gradients and keep an `OptimizerState`."""

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, treedef = tree.flatten(x0_tree)
            states_flat, subtrees = _unzip2(tree.flatten(init(x0)) for x0 in x0_flat)
            return OptimizerState(states_flat, treedef, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, treedef, subtrees = opt_state
            grad_flat, grad_treedef = tree.flatten(grad_tree)
            if grad_treedef != treedef:
                raise TypeError("optimizer update function was passed a gradient tree that did "
                                "not match the parameter tree structure with which it was "
                                f"initialized: parameter tree {treedef} and grad tree "
                                f"{grad_treedef}.")
            states = [tree.unflatten(s, f) for s, f in zip(subtrees, states_flat, strict=True)]
            new_states = [update(i, g, s) for g, s in zip(grad_flat, states, strict=True)]
            new_flat, new_subtrees = _unzip2(tree.flatten(s) for s in new_states)
            for old, new in zip(subtrees, new_subtrees, strict=True):
                if new != old:
                    raise TypeError("optimizer update function produced an output structure "
                                    "that did not match its input structure: input "
                                    f"{old} and output {new}.")
            return OptimizerState(new_flat, treedef, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, treedef, subtrees = opt_state
            states = [tree.unflatten(s, f) for s, f in zip(subtrees, states_flat, strict=True)]
            return tree.unflatten(treedef, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# ---------------------------------------------------------------- optimizers


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: `x - step_size(i) * g`. `step_size` is a scalar or a
    schedule."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x

    return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size: Schedule, mass: float):
    """SGD with heavy-ball momentum: the velocity is `mass * v + g` and the step follows it."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def nesterov(step_size: Schedule, mass: float):
    """SGD with Nesterov momentum: like `momentum`, stepping along `mass * v + g` with the
    updated velocity."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi et al., 2011) with momentum: gradients scaled by the inverse root of
    their accumulated squares (zero where nothing has accumulated), then averaged with
    `momentum`."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0), creation.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq += ufuncs.square(g)
        g_sq_inv_sqrt = ufuncs.where(g_sq > 0, 1. / ufuncs.sqrt(g_sq), 0.0)
        m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: gradients divided by the root of a `gamma`-decayed mean of their squares plus
    `eps`."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + ufuncs.square(g) * (1. - gamma)
        return x - step_size(i) * g / ufuncs.sqrt(avg_sq_grad + eps), avg_sq_grad

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp whose scaled steps are accumulated with `momentum` before being applied."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0), creation.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + ufuncs.square(g) * (1. - gamma)
        mom = momentum * mom + step_size(i) * g / ufuncs.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba, 2015): bias-corrected first and second moment estimates with decay
    rates `b1` and `b2`, the step `mhat / (sqrt(vhat) + eps)`."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0), creation.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * ufuncs.square(g) + b2 * v
        # The bias corrections are computed in the state's dtype, as the moments are.
        mhat = m / (1 - creation.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - creation.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (ufuncs.sqrt(vhat) + eps), m, v

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax, Adam's infinity-norm variant: the second moment is replaced by the decayed
    maximum `max(b2 * u, |g|)`."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0), creation.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = ufuncs.maximum(b2 * u, ufuncs.abs(g))
        x = x - (step_size(i) / (1 - creation.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    def get_params(state):
        return state[0]

    return init, update, get_params


def _splice(seq, i, x):
    """`seq` as a list with its element `i` replaced by the elements of `x`."""
    out = list(seq)
    out[i:i + 1] = x
    return out


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al., 2019): Adagrad whose accumulator is covered by one vector per axis,
    each holding the maximum over the other axes; with `momentum`."""
    step_size = make_schedule(step_size)

    def broadcast_into(ndim, v, axis):
        return v[tuple(_splice([None] * ndim, axis, [slice(None)]))]

    def init(x0):
        x_shape = x0.shape
        x0 = manipulation.atleast_1d(x0)
        vs = [creation.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, creation.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        vs = [broadcast_into(g.ndim, v, axis) for axis, v in enumerate(vs)]
        accum = functools.reduce(ufuncs.minimum, vs) + ufuncs.square(g)
        accum_inv_sqrt = ufuncs.where(accum > 0, 1. / ufuncs.sqrt(accum), 0)
        m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [accum.max(_splice(range(x.ndim), axis, [])) for axis in range(x.ndim)]
        return x, m, vs, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return x.reshape(x_shape)

    return init, update, get_params


# ---------------------------------------------------------------- step-size schedules


def constant(step_size) -> Schedule:
    """The schedule that is `step_size` at every step."""
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
    """`step_size * decay_rate ** (i / decay_steps)`."""
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """`step_size / (1 + decay_rate * i / decay_steps)`, with `i / decay_steps` floored when
    `staircase`."""
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * ufuncs.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From `step_size` down to `final_step_size` along `(1 - i / decay_steps) ** power`,
    then constant after `decay_steps`."""
    def schedule(step_num):
        step_num = ufuncs.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any):
    """`values[k]` where `k` is the number of `boundaries` the step is past; `values` has one
    more entry than `boundaries`."""
    boundaries = creation.array(boundaries)
    values = creation.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i):
        return values[reductions.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    """A schedule from a callable (returned as is) or a scalar (a constant schedule); anything
    else raises TypeError."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if dtype_functions.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# ---------------------------------------------------------------- utilities


def l2_norm(tree):
    """The l2 norm of all the leaves of a pytree taken together."""
    leaves = pytrees.tree_leaves(tree)
    return ufuncs.sqrt(sum(products.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """`grad_tree` scaled down so that its `l2_norm` is at most `max_norm`."""
    norm = l2_norm(grad_tree)
    return tree.map(lambda g: ufuncs.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


# ---------------------------------------------------------------- serialization


class JoinPoint:
    """A leaf of the outer tree of an unpacked optimizer state, holding that parameter's inner
    state tree."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        # Iterable like a container, for serializers that walk nested sequences.
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """An `OptimizerState` as a pytree of the parameters' structure whose leaves are
    `JoinPoint`s holding each parameter's state, for serialization."""
    states_flat, treedef, subtree_defs = opt_state
    subtrees = [tree.unflatten(s, f) for s, f in zip(subtree_defs, states_flat, strict=True)]
    return tree.unflatten(treedef, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
    """The `OptimizerState` that `unpack_optimizer_state` turned into `marked_pytree`."""
    sentinels, treedef = tree.flatten(marked_pytree)
    assert all(isinstance(s, JoinPoint) for s in sentinels)
    states_flat, subtree_defs = _unzip2(tree.flatten(s.subtree) for s in sentinels)
    return OptimizerState(states_flat, treedef, subtree_defs)
