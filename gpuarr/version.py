"""gpuarr's version (`gpuarr.version.__version__`, as `jax.version`); pyproject.toml holds the
same string."""
from __future__ import annotations

_version: str = "0.1.0"


def _version_as_tuple(version_str: str) -> tuple[int, ...]:
    return tuple(int(i) for i in version_str.split(".") if i.isdigit())


__version__: str = _version
__version_info__: tuple[int, ...] = _version_as_tuple(__version__)

# The JAX release whose behaviour gpuarr follows: `jax.__version__` under `gpuarr.as_jax`, which
# libraries read to pick code paths.
jax_version: str = "0.10.2"
