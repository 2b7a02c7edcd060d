"""Build hook: the package metadata is in pyproject.toml. This only adds gpuarr_as_jax.pth to
the installed files (site-packages), by a wheel install and by an editable one (`pip install
-e .`) alike, so that GPUARR_AS_JAX=1 makes `import jax` resolve to gpuarr in any process; with
the variable unset the hook imports nothing."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "gpuarr_as_jax.pth"
SOURCE = Path(__file__).parent / "gpuarr" / PTH  # kept in the package's folder, installed at the root


class build_py_with_pth(build_py):
    """build_py that also places the .pth file at the root of the built tree."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            # An editable wheel installs no build tree: setuptools' editable_wheel packs the
            # folder it gives `install` as install_lib, the wheel's root (site-packages).
            root = self.get_finalized_command("install").install_lib
        else:
            root = self.build_lib
        target = Path(root) / PTH
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOURCE, target)

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [str(Path(self.build_lib) / PTH)]

    def get_output_mapping(self):
        mapping = super().get_output_mapping()
        mapping[str(Path(self.build_lib) / PTH)] = str(SOURCE)
        return mapping


setup(cmdclass={"build_py": build_py_with_pth})
