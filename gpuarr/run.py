"""`python -m gpuarr.run script.py [args...]` runs a JAX script on gpuarr unchanged: `import jax`
in it (and in every library it uses) resolves to gpuarr. `-m module` runs a module instead, as
`python -m` would."""
from __future__ import annotations

import runpy
import sys

from gpuarr.jax_finder import install

USAGE = "usage: python -m gpuarr.run script.py [args...] | -m module [args...]"


def main(argv: list) -> None:
    """Run the script (or `-m module`) named by `argv` with `import jax` pointed at gpuarr."""
    if not argv or argv[0] in ("-h", "--help"):
        raise SystemExit(USAGE)
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            raise SystemExit(USAGE)
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
