"""The one-line switch (`import gpuarr.as_jax`, `python -m gpuarr.run`, GPUARR_AS_JAX=1):
`import jax` and every `jax.*` module resolve to gpuarr's modules (the same objects), the real
jax is refused once imported, and `jax.__version__` is the JAX version gpuarr follows. The real
jax is installed here (other tests compare with it), so every check runs in a fresh process
that never imports it."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# gpuarr first, then what the run was given (the CuPy stand-in, under GPUARR_CUDA_STANDIN=1)
SEARCH_PATH = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


def run(code: str, *args, env_extra=None, module_run=False, tmp_path=None):
    env = dict(os.environ, PYTHONPATH=SEARCH_PATH)
    env.pop("GPUARR_AS_JAX", None)
    env.update(env_extra or {})
    if module_run:
        script = tmp_path / "script.py"
        script.write_text(textwrap.dedent(code))
        cmd = [sys.executable, "-m", "gpuarr.run", str(script), *args]
    else:
        cmd = [sys.executable, "-c", textwrap.dedent(code), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def test_import_jax_resolves_to_gpuarr():
    proc = run("""
        import gpuarr.as_jax
        import importlib, sys
        import jax, jax.numpy as jnp, jax.scipy.special
        from jax import grad, jit, lax, vmap
        from jax.numpy import linalg
        import gpuarr, gpuarr.numpy, gpuarr.scipy.special, gpuarr.lax, gpuarr.numpy.linalg
        assert jnp is gpuarr.numpy and lax is gpuarr.lax and linalg is gpuarr.numpy.linalg
        assert importlib.import_module("jax.scipy.special") is gpuarr.scipy.special
        assert jit is gpuarr.jit and jax.Array is gpuarr.Array and jax.jit is gpuarr.jit
        assert jax.__version__ == "0.10.2" and jax.__version_info__ == (0, 10, 2)
        assert jax.version.__version__ == "0.10.2"
        assert gpuarr.__version__ == "0.1.0"
        assert not any(m.partition(".")[0] in ("jaxlib",) for m in sys.modules)
        assert type(jax.interpreters.xla.pytype_aval_mappings) is dict  # loaded with jax
        print(float(jit(grad(lambda x: jnp.sin(x) * 2.0))(0.5)))
    """)
    assert proc.returncode == 0, proc.stderr
    assert abs(float(proc.stdout) - 2 * 0.8775825618903728) < 1e-6


def test_unknown_submodule_is_a_clear_module_not_found_error():
    proc = run("""
        import gpuarr.as_jax
        try:
            import jax.no_such_module
        except ModuleNotFoundError as e:
            print(e.name, "|", e)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("jax.no_such_module |")
    assert "gpuarr" in proc.stdout


def test_refuses_when_the_real_jax_is_already_imported():
    proc = run("""
        import jax
        try:
            import gpuarr.as_jax
        except ImportError as e:
            print(type(e).__name__, "|", e)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ImportError |")
    assert "already imported" in proc.stdout and "before anything that imports jax" in proc.stdout


def test_module_runner_runs_a_script_with_its_arguments(tmp_path):
    proc = run("""
        import sys
        import jax, jax.numpy as jnp
        print(jax.numpy.__name__, sys.argv[1:], float(jnp.sum(jnp.arange(4.0))))
        assert __name__ == "__main__"
    """, "a", "--b", module_run=True, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["gpuarr.numpy", "['a',", "'--b']", "6.0"]


def test_module_runner_without_a_script_prints_its_usage():
    proc = subprocess.run([sys.executable, "-m", "gpuarr.run"], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=SEARCH_PATH), timeout=120)
    assert proc.returncode == 1 and "usage: python -m gpuarr.run" in proc.stderr


def test_environment_variable_hook(tmp_path):
    # The hook pip installs (gpuarr_as_jax.pth) runs this line at startup; run it from a .pth
    # in a site directory made here, as site.py does for site-packages. It imports nothing of
    # gpuarr until the first `import jax`.
    pth = (ROOT / "gpuarr" / "gpuarr_as_jax.pth").read_text()
    (tmp_path / "gpuarr_as_jax.pth").write_text(pth)
    code = """
        import site, sys
        site.addsitedir(sys.argv[1])
        assert "gpuarr" not in sys.modules
        import jax
        print(jax.numpy.__name__)
    """
    on = run(code, str(tmp_path), env_extra={"GPUARR_AS_JAX": "1"})
    assert on.returncode == 0, on.stderr
    assert on.stdout.strip() == "gpuarr.numpy"
    off = run(textwrap.dedent(code) + "assert 'gpuarr' not in sys.modules\n", str(tmp_path))
    assert off.returncode == 0, off.stderr
    assert off.stdout.strip() == "jax.numpy"


def test_the_build_installs_the_hook(tmp_path):
    """setup.py's build_py puts gpuarr_as_jax.pth (and the module it runs) at the root of the
    built tree, which a wheel installs into site-packages."""
    pytest.importorskip("setuptools", reason="building needs setuptools")
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "gpuarr_as_jax.pth").read_text() == (ROOT / "gpuarr" / "gpuarr_as_jax.pth").read_text()
    assert (tmp_path / "gpuarr_as_jax.py").exists()
    assert (tmp_path / "gpuarr" / "as_jax.py").exists()


@pytest.mark.slow
def test_an_editable_install_installs_the_hook(tmp_path):
    """`pip install -e .` into a virtual environment over this one's site-packages (where
    NumPy lives, a site directory added after the environment's own, whose .pth files run
    first): GPUARR_AS_JAX=1 then points `import jax` at this checkout's gpuarr."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True,
                   timeout=300)
    python = venv / "bin" / "python"
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps",
                           "--no-build-isolation", "-e", str(ROOT)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    code = "import jax, gpuarr; print(jax.numpy.__name__, gpuarr.__file__)"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUARR_AS_JAX")}
    on = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=tmp_path,
                        env=dict(env, GPUARR_AS_JAX="1"), timeout=300)
    assert on.returncode == 0, on.stderr
    assert on.stdout.split() == ["gpuarr.numpy", str(ROOT / "gpuarr" / "__init__.py")]
    off = subprocess.run([str(python), "-c", "import jax; print(jax.numpy.__name__)"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert off.returncode == 0, off.stderr
    assert off.stdout.strip() == "jax.numpy"


def test_a_library_can_refuse_compilation_through_jax_src_compiler():
    """chex's restrict_backends wraps `jax._src.compiler.backend_compile_and_load` by setattr:
    every jit compilation (and `lower().compile()`) goes through the wrapped function, which
    sees the backend's `.platform`."""
    proc = run("""
        import gpuarr.as_jax
        import functools
        import jax, jax.numpy as jnp
        from jax._src import compiler
        inner = compiler.backend_compile_and_load
        seen = []

        @functools.wraps(inner)
        def refuse_cpu(backend, *args, **kwargs):
            seen.append(backend.platform)
            if backend.platform == "cpu":
                raise RuntimeError("compiling for cpu is forbidden")
            return inner(backend, *args, **kwargs)

        setattr(compiler, "backend_compile_and_load", refuse_cpu)
        for compile_ in (lambda f: f(3.0), lambda f: f.lower(3.0).compile()):
            try:
                compile_(jax.jit(lambda x: jnp.sin(x) * x))
            except RuntimeError as e:
                print(e)
        setattr(compiler, "backend_compile_and_load", inner)
        print(float(jax.jit(lambda x: x * 2.0)(3.0)), seen)
    """, env_extra={"GPUARR_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["compiling for cpu is forbidden"] * 2 + ["6.0 ['cpu', 'cpu']"]
