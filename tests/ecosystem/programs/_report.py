"""Shared by the programs: print a pytree of results as JSON (leaves as nested lists with
their dtype and shape), the form the tests compare between gpuarr and JAX. Run by
`_run_all.py`, the results go to its `sink` instead."""
import json
import sys

import numpy as np

sink = None  # set by _run_all.py: a callable taking the results


def report(results: dict) -> None:
    import jax
    leaves, _ = jax.tree_util.tree_flatten_with_path(results)
    out = {}
    for path, leaf in leaves:
        a = np.asarray(leaf)
        out[jax.tree_util.keystr(path)] = {"dtype": str(a.dtype), "shape": list(a.shape),
                                           "value": a.astype(np.float64).ravel().tolist()}
    if sink is not None:
        sink(out)
    else:
        json.dump({"jax": jax.__name__, "results": out}, sys.stdout)
