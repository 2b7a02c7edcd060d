"""`jax._src.state.types`: the abstract value of mutable references."""
from gpuarr.refs import AbstractRef  # noqa: F401
