"""Fixtures shared by the platform tests."""
import pytest

from gpuarr.backends import native
from gpuarr.platforms import get_platform


@pytest.fixture
def native_platform():
    """The native platform, or a skip where no C compiler is found."""
    if not native.available():
        pytest.skip("no C compiler (gcc or clang) on this machine")
    return get_platform("native")
