"""Run the named programs (`_run_all.py optax_mlp flax_linen ...`) one after another in this
process and print {"jax": ..., "platform": ..., "programs": {name: {"results": ...} or
{"error": ...}}} as JSON: one process, one import of JAX (or gpuarr) and the libraries, for all
of them; "platform" is the default backend the programs ran on."""
import json
import runpy
import sys
import traceback
from pathlib import Path

import _report

HERE = Path(__file__).resolve().parent

programs = {}
for name in sys.argv[1:]:
    captured = []
    _report.sink = captured.append
    try:
        runpy.run_path(str(HERE / f"{name}.py"), run_name="__main__")
        programs[name] = {"results": captured[-1]} if captured else {"error": "reported nothing"}
    except Exception:  # noqa: BLE001 - reported per program, the others still run
        programs[name] = {"error": traceback.format_exc()}
import jax  # noqa: E402 - the programs import it first, through whichever switch is on

json.dump({"jax": jax.__name__, "platform": jax.default_backend(), "programs": programs},
          sys.stdout)
