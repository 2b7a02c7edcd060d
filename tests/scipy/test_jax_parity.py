"""The public names of gpuarr.scipy's integrate, interpolate, ndimage, cluster.vq and
spatial.transform, and their signatures, against jax.scipy's."""
import inspect

import pytest
from jax_compare import check_signatures

from gpuarr.scipy import cluster, integrate, interpolate, ndimage, spatial
from gpuarr.scipy.spatial.transform import Rotation, Slerp

jax = pytest.importorskip("jax")
jsp = pytest.importorskip("jax.scipy")
pytest.importorskip("jax.scipy.cluster.vq")
pytest.importorskip("jax.scipy.interpolate")
pytest.importorskip("jax.scipy.spatial.transform")
JRotation = jsp.spatial.transform.Rotation
JSlerp = jsp.spatial.transform.Slerp


def test_public_names_and_signatures():
    modules = [(integrate, jsp.integrate), (interpolate, jsp.interpolate), (ndimage, jsp.ndimage),
               (cluster.vq, jsp.cluster.vq), (spatial.transform, jsp.spatial.transform)]
    for ours, theirs in modules:
        names = sorted(n for n in dir(theirs) if not n.startswith("_"))
        assert sorted(ours.__all__) == names
        check_signatures(ours, theirs, [n for n in names if not inspect.isclass(getattr(ours, n))])
    check_signatures(interpolate.RegularGridInterpolator, jsp.interpolate.RegularGridInterpolator,
                     ["__init__", "__call__"])
    methods = [n for n in dir(JRotation) if not n.startswith("_") and callable(getattr(JRotation, n))]
    check_signatures(Rotation, JRotation, methods + ["__getitem__", "__mul__"])
    check_signatures(Slerp, JSlerp, ["init", "__call__"])
