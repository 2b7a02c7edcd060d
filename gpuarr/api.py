"""The user-facing API in one namespace: jit, make_jaxpr, eval_shape (jit_api); grad and friends
(ad_api); vmap (vmap_api); devices, processes and the environment (device_api); named scopes
and compile-time evaluation (naming_api). It only re-exports: implementation modules import
from those modules, never from here."""
from __future__ import annotations

from gpuarr.ad_api import (  # noqa: F401
    fwd_and_bwd,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    linear_transpose,
    linearize,
    value_and_grad,
    vjp,
)
from gpuarr.device_api import (  # noqa: F401
    block_until_ready,
    default_backend,
    default_device,
    device_count,
    device_get,
    device_put,
    devices,
    effects_barrier,
    host_count,
    host_id,
    host_ids,
    local_device_count,
    local_devices,
    print_environment_info,
    process_count,
    process_index,
    process_indices,
    typeof,
)
from gpuarr.jit_api import (  # noqa: F401
    PjitFunction,
    ShapeDtypeStruct,
    clear_caches,
    config_disable_passes,
    disable_jit,
    eval_shape,
    jit,
    jit_p,
    make_jaxpr,
)
from gpuarr.naming_api import ensure_compile_time_eval, named_call, named_scope  # noqa: F401
from gpuarr.vmap_api import vmap  # noqa: F401
