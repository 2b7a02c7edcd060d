"""`jax._src.checkify`: gpuarr's checkify (functionalised runtime checks)."""
from gpuarr.experimental.checkify import *  # noqa: F401, F403
from gpuarr.experimental.checkify import JaxException, checkify, user_checks  # noqa: F401
