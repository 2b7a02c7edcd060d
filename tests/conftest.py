"""Shared test setup: every test starts from the default configuration."""
import pytest

import gpuarr


@pytest.fixture(autouse=True)
def _restore_config():
    saved = dict(gpuarr.config._values)
    yield
    for name, value in saved.items():
        if gpuarr.config._values[name] != value:
            gpuarr.config.update(name, value)
