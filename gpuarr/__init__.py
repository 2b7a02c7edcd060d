"""gpuarr: JAX's programming model on a small, readable array compiler.

`import gpuarr as jax; import gpuarr.numpy as jnp` runs JAX programs: jit, grad, vmap,
pytrees, lax control flow, explicit random keys.
"""
from gpuarr.config import config  # noqa: F401
from gpuarr import dispatch as _dispatch  # noqa: F401  (installs the eager trace)
from gpuarr import lax  # noqa: F401
from gpuarr import numpy  # noqa: F401
from gpuarr import tree, tree_util  # noqa: F401
from gpuarr.array import Array  # noqa: F401
from gpuarr.jit_api import (  # noqa: F401
    ShapeDtypeStruct, clear_caches, disable_jit, eval_shape, jit, make_jaxpr,
)
from gpuarr.ad_api import fwd_and_bwd, grad, jvp, linearize, value_and_grad, vjp  # noqa: F401
from gpuarr.vmap_api import vmap  # noqa: F401
from gpuarr.device_api import (  # noqa: F401
    block_until_ready, default_backend, device_count, device_get, device_put, devices,
    local_devices, typeof,
)
from gpuarr.config import (  # noqa: F401
    check_tracer_leaks, checking_leaks, debug_infs, debug_nans, default_matmul_precision,
    enable_x64, explain_cache_misses, log_compiles, numpy_dtype_promotion, numpy_rank_promotion,
)
from gpuarr.config import (  # noqa: F401
    allow_f16_reductions, array_garbage_collection_guard, auto_pcast, debug_key_reuse,
    default_prng_impl, enable_checks, enable_custom_prng, jax2tf_associative_scan_reductions,
    legacy_prng_key, make_user_context, no_execution, no_tracing,
    remove_size_one_mesh_axis_from_type, softmax_custom_jvp, thread_guard,
    threefry_partitionable, transfer_guard, transfer_guard_device_to_device,
    transfer_guard_device_to_host, transfer_guard_host_to_device,
)
from gpuarr import errors  # noqa: F401
from gpuarr.tree_util import (  # noqa: F401
    tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten,
)

# Automatic differentiation: custom rules, checkpointing, Jacobians.
from gpuarr.ad_api import hessian, jacfwd, jacobian, jacrev, linear_transpose  # noqa: F401, E402
from gpuarr.custom_derivatives import (  # noqa: F401, E402
    closure_convert, custom_gradient, custom_jvp, custom_vjp,
)
from gpuarr.naming_api import ensure_compile_time_eval, named_call, named_scope  # noqa: F401, E402
from gpuarr.device_api import (  # noqa: F401, E402
    effects_barrier, host_count, host_id, host_ids, print_environment_info, process_count,
    process_index, process_indices,
)
from gpuarr.dtypes import float0  # noqa: F401, E402
from gpuarr.ad_checkpoint import checkpoint, checkpoint_policies, remat  # noqa: F401, E402
from gpuarr import custom_derivatives, ad_checkpoint  # noqa: F401, E402
from gpuarr import custom_batching  # noqa: F401, E402
from gpuarr.lax import stop_gradient  # noqa: F401, E402
from gpuarr import image, nn, scipy, test_util  # noqa: F401, E402

# Debugging and host callbacks.
from gpuarr import debug, distributed, experimental  # noqa: F401, E402
from gpuarr.callbacks import pure_callback  # noqa: F401, E402
# Mutable array references.
from gpuarr.refs import Ref, freeze, new_ref  # noqa: F401, E402

# Explicit-key random numbers (threefry2x32, JAX's streams).
from gpuarr import random  # noqa: F401, E402
# The NumPy backend: the host compiler the impls of loops and jit run (see gpuarr.impls).
from gpuarr.backends import numpy as _numpy_backend  # noqa: F401, E402

# Saving and reloading jitted functions.
from gpuarr import export  # noqa: F401, E402

# Devices, placement and interchange (cuda platform, DLPack).
from gpuarr.device_api import default_device, local_device_count  # noqa: F401, E402
from gpuarr.pmap_api import pmap  # noqa: F401, E402
from gpuarr.platforms import Device  # noqa: F401, E402
from gpuarr import dlpack  # noqa: F401, E402

# Kernel plans: what the compiler makes of a function; ahead-of-time stages (jit(f).lower);
# type annotations.
from gpuarr.compiler.explain import explain  # noqa: F401, E402
from gpuarr.compiler import hlo_text as _hlo_text  # noqa: F401, E402  (fills stages._hlo_module)
from gpuarr import monitoring, ops, profiler, stages, typing  # noqa: F401, E402
# The whole API in one namespace, as `gpuarr.api`.
from gpuarr import api  # noqa: F401, E402

# Live arrays, host copies and the version.
from gpuarr.array import copy_to_host_async, live_arrays  # noqa: F401, E402
from gpuarr import version  # noqa: F401, E402
from gpuarr.version import __version__, __version_info__  # noqa: F401, E402


# Shardings and shard_map on the one device (every mesh axis has size 1).
from gpuarr import sharding  # noqa: F401, E402
from gpuarr.sharding import (  # noqa: F401, E402
    NamedSharding, PartitionSpec as P, make_mesh, reshard, set_mesh,
)
from gpuarr.sharding.shard_map import shard_map, smap  # noqa: F401, E402
from gpuarr.array import Shard  # noqa: F401, E402
from gpuarr.array_assembly import (  # noqa: F401, E402
    make_array_from_callback, make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)
