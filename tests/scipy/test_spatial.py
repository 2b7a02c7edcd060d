"""gpuarr.scipy.spatial.transform against jax.scipy.spatial.transform (0.10.2, CPU) and SciPy:
values, shapes and dtypes, error classes and messages, and the same results under jit, vmap and
grad."""
import warnings
from functools import partial

import numpy as np
import pytest
from helpers import check_grads_x64, close, rand
from jax_compare import same_error, vs_jax_all

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.scipy import cluster, spatial
from gpuarr.scipy.spatial.transform import Rotation, Slerp

jax = pytest.importorskip("jax")
jsp = pytest.importorskip("jax.scipy")
pytest.importorskip("jax.scipy.spatial.transform")
scipy_transform = pytest.importorskip("scipy.spatial.transform")
JRotation = jsp.spatial.transform.Rotation
JSlerp = jsp.spatial.transform.Slerp


QUATS = rand((6, 4))
QUATS[0], QUATS[1] = [0, 0, 0, 1], [1, 0, 0, 0]
QUATS[2, 3] = -abs(QUATS[2, 3])


def test_rotation_conversions_match_jax():
    q = QUATS
    vec = rand((6, 3), seed=1)
    rv = rand((5, 3), seed=2)
    rv[0], rv[1] = 0, 1e-4
    mats = np.stack([np.eye(3), np.diag([1, -1, -1]), np.diag([-1, 1, -1]),
                     np.diag([-1, -1, 1])]).astype(np.float32)
    angles = rand((5, 3), low=-3, high=3, seed=3)
    # Gimbal lock (the middle angle at its limits): the third angle is set to zero.
    lock = np.array([[0.3, np.pi / 2, 0.2], [0.3, -np.pi / 2, 0.1]], np.float32)
    lock_xyz = np.asarray(Rotation.from_euler("XZY", lock).quat)
    lock_xzx = np.asarray(Rotation.from_euler("xzx", np.array([[0.3, 0.0, 0.1]], np.float32)).quat)
    cases = []

    def case(fn, *args):
        cases.append((partial(fn, Rotation), partial(fn, JRotation), args))

    case(lambda R, q: R.from_quat(q).quat, q)
    for name in ["as_matrix", "as_mrp", "as_rotvec", "magnitude"]:
        case(lambda R, q, name=name: getattr(R.from_quat(q), name)(), q)
    case(lambda R, q: R.from_quat(q).as_quat(canonical=True, scalar_first=True), q)
    case(lambda R, q: R.from_quat(q).as_euler("xzx", degrees=True), np.concatenate([q, lock_xzx]))
    case(lambda R, q: R.from_quat(q).as_euler("XZY"), np.concatenate([q, lock_xyz]))
    case(lambda R, a: R.from_euler("ZYX", a).quat, angles)
    case(lambda R, a: R.from_euler("x", a).quat, np.float32(0.5))
    case(lambda R, m: R.from_matrix(m).quat, mats)
    case(lambda R, r: R.from_rotvec(r, degrees=True).quat, rv * 10)
    case(lambda R, r: R.from_mrp(r).quat, rv)
    case(lambda R, q, v: R.from_quat(q).apply(v[0], inverse=True), q, vec)
    case(lambda R, q: (R.from_quat(q)[3] * R.from_quat(q)).quat, q)
    vs_jax_all(cases, tol=1e-4)
    close(Rotation.identity().quat, JRotation.identity().quat)
    assert len(Rotation.from_quat(q)) == 6 and Rotation.from_quat(q[0]).single


def _scipy_check(got, want, tol=1e-5):
    got = np.asarray(got)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=tol)


def test_rotation_against_scipy():
    q64 = QUATS.astype(np.float64)
    SR = scipy_transform.Rotation
    ours, theirs = Rotation.from_quat(QUATS), SR.from_quat(q64)
    vec = rand((6, 3), seed=1)
    for name in ["as_matrix", "as_mrp", "as_rotvec", "magnitude"]:
        _scipy_check(getattr(ours, name)(), getattr(theirs, name)())
    _scipy_check(ours.as_rotvec(degrees=True), theirs.as_rotvec(degrees=True), 1e-3)
    for kw in [{"canonical": True}, {"scalar_first": True},
               {"canonical": True, "scalar_first": True}]:
        _scipy_check(ours.as_quat(**kw), theirs.as_quat(**kw))
    angles = rand((5, 3), low=-3, high=3, seed=3)
    for seq in ["xyz", "ZYX", "xzx", "YXY", "XZY"]:
        # Angles of +-pi are the same angle: compare on the circle.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SciPy's gimbal lock warning for QUATS[1]
            diff = np.asarray(ours.as_euler(seq), np.float64) - theirs.as_euler(seq)
        np.testing.assert_allclose(np.angle(np.exp(1j * diff)), 0, atol=1e-4)
        _scipy_check(Rotation.from_euler(seq, angles).as_matrix(),
                     SR.from_euler(seq, angles.astype(np.float64)).as_matrix())
        _scipy_check(Rotation.from_euler(seq, angles * 30, degrees=True).as_matrix(),
                     SR.from_euler(seq, angles * 30.0, degrees=True).as_matrix())
    for seq in ["x", "Y", "xy", "ZX"]:
        _scipy_check(Rotation.from_euler(seq, angles[0, :len(seq)]).as_matrix(),
                     SR.from_euler(seq, angles[0, :len(seq)].astype(np.float64)).as_matrix())
    rv = rand((5, 3), seed=2)
    _scipy_check(Rotation.from_rotvec(rv).as_matrix(), SR.from_rotvec(rv.astype(float)).as_matrix())
    _scipy_check(Rotation.from_mrp(rv).as_matrix(), SR.from_mrp(rv.astype(float)).as_matrix())
    _scipy_check(Rotation.from_matrix(theirs.as_matrix().astype(np.float32)).as_quat(canonical=True),
                 theirs.as_quat(canonical=True))
    for inverse in [False, True]:
        _scipy_check(ours.apply(vec, inverse=inverse), theirs.apply(vec, inverse=inverse))
        _scipy_check(ours[2].apply(vec, inverse=inverse), theirs[2].apply(vec, inverse=inverse))
    _scipy_check((ours * ours[::-1]).as_matrix(), (theirs * theirs[::-1]).as_matrix())
    _scipy_check(ours.inv().as_matrix(), theirs.inv().as_matrix())
    _scipy_check(Rotation.concatenate([ours, ours[:2]]).as_matrix(),
                 SR.concatenate([theirs, theirs[:2]]).as_matrix())
    w = rand((4,), low=0.1, high=1.0, seed=4)
    for weights in [None, w]:
        # The eigenvector's sign is arbitrary: compare rotations, not quaternions.
        _scipy_check(Rotation.from_quat(QUATS[2:]).mean(weights).as_matrix(),
                     SR.from_quat(q64[2:]).mean(weights).as_matrix(), 1e-4)
    close(Rotation.from_quat(QUATS[2:]).mean(w).as_matrix(),
          jax.jit(lambda x: JRotation.from_quat(x).mean(w).as_matrix())(QUATS[2:]), 1e-4)


def test_slerp_matches_jax_and_scipy():
    times = np.array([0.0, 1.0, 3.0, 4.0], np.float32)
    t = np.array([0.0, 0.5, 1.0, 2.2, 3.9, 4.0], np.float32)

    def run(R, S, x, tt):
        slerp = S.init(times, R.from_quat(x))
        return slerp.times, slerp.timedelta, slerp.rotvecs, slerp(tt).quat, slerp(2.5).quat
    vs_jax_all([(partial(run, Rotation, Slerp), partial(run, JRotation, JSlerp), (QUATS[2:], t))])
    ours = Slerp.init(times, Rotation.from_quat(QUATS[2:]))
    assert ours(2.5).single and not ours(t).single
    want = scipy_transform.Slerp(times.astype(float), scipy_transform.Rotation.from_quat(
        QUATS[2:].astype(float)))(t.astype(float)).as_matrix()
    np.testing.assert_allclose(np.asarray(ours(t).as_matrix()), want, atol=1e-5)
    theirs = jax.jit(lambda x: JSlerp.init(times, JRotation.from_quat(x)))(QUATS[2:])
    assert str(gpuarr.tree_util.tree_flatten(ours)[1]) == str(jax.tree_util.tree_flatten(theirs)[1])


def test_rotation_transformations():
    q, vec = QUATS, rand((6, 3), seed=1)
    angles = rand((5, 3), low=-3, high=3, seed=3)
    times = np.array([0.0, 1.0, 3.0, 4.0], np.float32)
    t = np.array([0.5, 2.2, 3.9], np.float32)
    slerp_g = Slerp.init(times, Rotation.from_quat(q[2:]))
    slerp_j = JSlerp.init(times, JRotation.from_quat(q[2:]))
    cases = [
        (lambda x: gpuarr.jit(lambda r: r.as_matrix())(Rotation(x)),
         lambda x: JRotation(x).as_matrix(), (q,)),
        (lambda x, v: gpuarr.jit(lambda r, v: r.apply(v))(Rotation.from_quat(x), v),
         lambda x, v: JRotation.from_quat(x).apply(v), (q, vec)),
        (gpuarr.vmap(lambda x: Rotation.from_quat(x).as_rotvec()),
         jax.vmap(lambda x: JRotation.from_quat(x).as_rotvec()), (q,)),
        (gpuarr.grad(lambda x: Rotation.from_quat(x).as_matrix().sum()),
         jax.grad(lambda x: JRotation.from_quat(x).as_matrix().sum()), (q,)),
        (lambda x: gpuarr.jit(lambda s, x: s(x).quat)(slerp_g, x), lambda x: slerp_j(x).quat, (t,)),
    ]
    vs_jax_all(cases, tol=1e-4)
    close(gpuarr.vmap(lambda r: r.as_euler("xyz"))(Rotation.from_quat(q)),
          Rotation.from_quat(q).as_euler("xyz"))
    # Flags may be traced (or per-rotation arrays), as JAX allows.
    close(gpuarr.jit(lambda x, v, inv: Rotation.from_quat(x).apply(v, inverse=inv))(q, vec, True),
          Rotation.from_quat(q).apply(vec, inverse=True))
    per_rotation = np.array([True, False] * 3)
    want = np.where(per_rotation[:, None], Rotation.from_quat(q).apply(vec, inverse=True),
                    Rotation.from_quat(q).apply(vec))
    close(Rotation.from_quat(q).apply(vec, inverse=per_rotation), want)
    close(gpuarr.jit(lambda x, d: Rotation.from_quat(x).as_euler("xyz", degrees=d))(q, True),
          Rotation.from_quat(q).as_euler("xyz", degrees=True), 1e-3)
    # Finite differences for the longer chains.
    check_grads_x64(lambda a: Rotation.from_euler("xyz", a).as_quat(), (angles.astype(np.float64),),
                order=1, modes=("rev",))
    check_grads_x64(lambda x: slerp_g(x).as_rotvec(), (np.float32(2.2),), order=1, modes=("rev",),
                atol=2e-2, rtol=2e-2)


def test_rotation_errors():
    q, times = QUATS, np.array([0.0, 1.0, 3.0, 4.0], np.float32)
    cases = [
        lambda R, S: R.from_euler("xyzx", np.ones(4)),
        lambda R, S: R.from_euler("xYz", np.ones(3)),
        lambda R, S: R.from_euler("xxz", np.ones(3)),
        lambda R, S: R.from_quat(q).as_euler("xy"),
        lambda R, S: R.from_quat(q).as_euler("xyy"),
        lambda R, S: R.from_quat(q[0])[0],
        lambda R, S: len(R.from_quat(q[0])),
        lambda R, S: R.from_quat(q).mean(np.ones((2, 2))),
        lambda R, S: R.from_quat(q).mean(np.ones(3)),
        lambda R, S: S.init(times, q),
        lambda R, S: S.init(times, R.from_quat(q[0])),
        lambda R, S: S.init(times[:3], R.from_quat(q[:4])),
        lambda R, S: S.init(times[None], R.from_quat(q[:4])),
        lambda R, S: S.init(times, R.from_quat(q[:4]))(np.ones((2, 2))),
        lambda R, S: R.identity(3),
        lambda R, S: R.random(None),
    ]
    for case in cases:
        same_error(partial(case, Rotation, Slerp), partial(case, JRotation, JSlerp))
    with pytest.raises(ValueError):
        Rotation.from_euler("xyz", np.ones(2))


def test_module_layout():
    assert spatial.transform.Rotation is Rotation
    assert cluster.vq.vq is not None
    assert isinstance(Rotation.from_quat(QUATS).quat, gpuarr.Array)
    assert jnp.allclose(Rotation.from_quat(QUATS).inv().inv().quat, Rotation.from_quat(QUATS).quat)
