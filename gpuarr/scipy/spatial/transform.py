"""Rotations in three dimensions (jax.scipy.spatial.transform): Rotation and Slerp.

A Rotation holds unit quaternions in scalar-last order (x, y, z, w): one [4] (a single
rotation) or a stack [N, 4]. Both classes are NamedTuples, hence pytrees whose leaves are
their arrays, so they pass through jit, vmap and grad. Conversions are written on the last
axis with broadcasting over any leading ones; their formulas and the branches chosen near
singularities are SciPy's (and JAX's), so values agree.
"""
from __future__ import annotations

import re
import typing

import numpy as np

from gpuarr.numpy import creation, manipulation, products, reductions, sorting, ufuncs
from gpuarr.numpy import linalg as jnp_linalg

__all__ = ["Rotation", "Slerp"]


# ---------------------------------------------------------------- quaternion helpers


def _maybe(flag, fn, x, core_ndim: int):
    """fn(x) where `flag` holds, else x. `flag` is a Python bool or, as JAX allows (it passes
    through jnp.vectorize there), an array, possibly traced, broadcast against x's leading
    axes (x's last `core_ndim` axes are one value)."""
    if isinstance(flag, (bool, np.bool_)):
        return fn(x) if flag else x
    flag = creation.asarray(flag)
    return ufuncs.where(manipulation.reshape(flag, flag.shape + (1,) * core_ndim), fn(x), x)


def _xyz_w(quat):
    return quat[..., :3], quat[..., 3]


def _norm(v):
    return ufuncs.sqrt(reductions.sum(v * v, axis=-1))


def _normalize(quat):
    return quat / _norm(quat)[..., None]


def _compose(p, q):
    """The quaternion product p * q (apply q, then p)."""
    pv, pw = _xyz_w(p)
    qv, qw = _xyz_w(q)
    vec = pw[..., None] * qv + qw[..., None] * pv + products.cross(pv, qv)
    return manipulation.concatenate([vec, (pw * qw - reductions.sum(pv * qv, axis=-1))[..., None]], axis=-1)


def _inv(quat):
    return quat * creation.array([-1, -1, -1, 1], dtype=quat.dtype)


def _as_matrix(quat):
    x, y, z, w = (quat[..., i] for i in range(4))
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    rows = [[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
            [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
            [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]]
    return manipulation.stack([manipulation.stack(row, axis=-1) for row in rows], axis=-2)


def _from_matrix(matrix):
    """The unit quaternion of a rotation matrix, from whichever of the diagonal entries and
    the trace is largest (the numerically safest of four formulas)."""
    m = lambda i, j: matrix[..., i, j]
    trace = m(0, 0) + m(1, 1) + m(2, 2)
    choice = reductions.argmax(manipulation.stack([m(0, 0), m(1, 1), m(2, 2), trace], axis=-1), axis=-1)
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        q = [None] * 4
        q[i] = 1 - trace + 2 * m(i, i)
        q[j] = m(j, i) + m(i, j)
        q[k] = m(k, i) + m(i, k)
        q[3] = m(k, j) - m(j, k)
        candidates.append(manipulation.stack(q, axis=-1))
    candidates.append(manipulation.stack([m(2, 1) - m(1, 2), m(0, 2) - m(2, 0), m(1, 0) - m(0, 1),
                                          1 + trace], axis=-1))
    quat = candidates[3]
    for i in range(3):
        quat = ufuncs.where((choice == i)[..., None], candidates[i], quat)
    return _normalize(quat)


def _as_mrp(quat):
    vec, w = _xyz_w(quat)
    sign = ufuncs.where(w < 0, -1.0, 1.0)
    return sign[..., None] * vec / (1.0 + sign * w)[..., None]


def _from_mrp(mrp):
    squared_plus_1 = reductions.sum(mrp * mrp, axis=-1) + 1
    quat = manipulation.concatenate([2 * mrp[..., :3], (2 - squared_plus_1)[..., None]], axis=-1)
    return quat / squared_plus_1[..., None]


def _as_rotvec(quat, degrees: bool):
    quat = ufuncs.where((quat[..., 3] < 0)[..., None], -quat, quat)  # w >= 0: angle in [0, pi]
    vec, w = _xyz_w(quat)
    angle = 2.0 * ufuncs.arctan2(_norm(vec), w)
    angle2 = angle * angle
    # angle / sin(angle / 2), by its Taylor series near zero.
    small_scale = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
    large_scale = angle / ufuncs.sin(angle / 2)
    scale = ufuncs.where(angle <= 1e-3, small_scale, large_scale)
    scale = _maybe(degrees, ufuncs.rad2deg, scale, 0)
    return scale[..., None] * vec


def _from_rotvec(rotvec, degrees: bool):
    rotvec = _maybe(degrees, ufuncs.deg2rad, rotvec, 1)
    angle = _norm(rotvec)
    angle2 = angle * angle
    # sin(angle / 2) / angle, by its Taylor series near zero.
    small_scale = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
    large_scale = ufuncs.sin(angle / 2) / angle
    scale = ufuncs.where(angle <= 1e-3, small_scale, large_scale)
    return manipulation.concatenate([scale[..., None] * rotvec, ufuncs.cos(angle / 2)[..., None]], axis=-1)


def _magnitude(quat):
    vec, w = _xyz_w(quat)
    return 2.0 * ufuncs.arctan2(_norm(vec), ufuncs.abs(w))


def _make_canonical(quat):
    """The one of q and -q whose first nonzero entry of (w, x, y, z) is positive."""
    neg, zero = quat < 0, quat == 0
    flip = (neg[..., 3] | (zero[..., 3] & neg[..., 0]) | (zero[..., 3] & zero[..., 0] & neg[..., 1])
            | (zero[..., 3] & zero[..., 0] & zero[..., 1] & neg[..., 2]))
    return ufuncs.where(flip[..., None], -quat, quat)


def _apply(matrix, vectors, inverse: bool):
    matrix = _maybe(inverse, lambda m: manipulation.swapaxes(m, -1, -2), matrix, 2)
    return products.matmul(matrix, vectors[..., None])[..., 0]


# ---------------------------------------------------------------- Euler angles


_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}


def _parse_seq(seq: str, max_axes: int) -> tuple[bool, tuple[int, ...]]:
    """(intrinsic, axis indices) of an Euler sequence such as 'xyz' (extrinsic) or 'ZXZ'."""
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
    if not (intrinsic or extrinsic):
        raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', "
                         f"'Z'], got {seq}")
    if any(seq[i] == seq[i + 1] for i in range(max_axes - 1)):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return intrinsic, tuple(_AXIS_INDEX[a] for a in seq.lower())


def _elementary_quat(axis: int, angle):
    half = angle / 2.0
    zero = creation.zeros_like(half)
    parts = [ufuncs.sin(half) if a == axis else zero for a in range(3)] + [ufuncs.cos(half)]
    return manipulation.stack(parts, axis=-1)


def _from_euler(angles, axes, intrinsic: bool, degrees: bool):
    angles = _maybe(degrees, ufuncs.deg2rad, angles, 1)
    result = _elementary_quat(axes[0], angles[..., 0])
    for idx in range(1, len(axes)):
        quat = _elementary_quat(axes[idx], angles[..., idx])
        result = _compose(result, quat) if intrinsic else _compose(quat, result)
    return result


def _as_euler(quat, axes, extrinsic: bool, degrees: bool):
    """Euler angles of a quaternion by Bernardes and Viollet's direct method (as SciPy):
    the middle angle from the quaternion's entries, the outer two from their half sum and
    difference; in gimbal lock the third angle is set to zero."""
    if not extrinsic:
        axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2  # +1 for an even permutation of (0, 1, 2)
    q = lambda n: quat[..., n]
    if symmetric:
        a, b, c, d = q(3), q(i), q(j), q(k) * sign
    else:
        a, b, c, d = q(3) - q(j), q(i) + q(k) * sign, q(j) + q(3), q(k) * sign - q(i)
    eps = 1e-7
    middle = 2 * ufuncs.arctan2(ufuncs.hypot(c, d), ufuncs.hypot(a, b))
    case = ufuncs.where(ufuncs.abs(middle - np.pi) <= eps, 2, 0)
    case = ufuncs.where(ufuncs.abs(middle) <= eps, 1, case)
    half_sum = ufuncs.arctan2(b, a)
    half_diff = ufuncs.arctan2(d, c)
    regular = case == 0
    # In gimbal lock only the first angle is determined; the third stays zero.
    first = ufuncs.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    third = creation.zeros_like(first)
    if extrinsic:
        first = ufuncs.where(regular, half_sum - half_diff, first)
        third = ufuncs.where(regular, half_sum + half_diff, third)
    else:
        third = ufuncs.where(regular, half_sum - half_diff, third)
        first = ufuncs.where(regular, half_sum + half_diff, first)
    if not symmetric:
        if extrinsic:
            third = third * sign
        else:
            first = first * sign
        middle = middle - np.pi / 2
    angles = manipulation.stack([first, middle, third], axis=-1)
    angles = (angles + np.pi) % (2 * np.pi) - np.pi
    return _maybe(degrees, ufuncs.rad2deg, angles, 1)


# ---------------------------------------------------------------- the public classes


class Rotation(typing.NamedTuple):
    """Rotations in 3 dimensions (jax.scipy.spatial.transform.Rotation), stored as unit
    quaternions `quat` in scalar-last order: [4] for one rotation, [N, 4] for N."""

    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence):
        """One Rotation holding all of `rotations` in order."""
        return cls(manipulation.concatenate([rotation.quat for rotation in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False):
        """Rotations from Euler angles about the axes of `seq`: up to 3 of 'xyz' (extrinsic,
        fixed axes) or 'XYZ' (intrinsic, rotating axes); `angles` [..., len(seq)]."""
        num_axes = len(seq)
        if num_axes < 1 or num_axes > 3:
            raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                             f"characters, got {seq}")
        intrinsic, axes = _parse_seq(seq, num_axes)
        angles = manipulation.atleast_1d(angles)
        if angles.shape[-1] != num_axes:
            raise ValueError(f"Expected angles of shape (..., {num_axes}) for seq={seq!r}, got "
                             f"shape {angles.shape}.")
        return cls(_from_euler(angles, axes, intrinsic, degrees))

    @classmethod
    def from_matrix(cls, matrix):
        """Rotations from rotation matrices [..., 3, 3]."""
        return cls(_from_matrix(creation.asarray(matrix)))

    @classmethod
    def from_mrp(cls, mrp):
        """Rotations from Modified Rodrigues Parameters [..., 3]."""
        return cls(_from_mrp(creation.asarray(mrp)))

    @classmethod
    def from_quat(cls, quat):
        """Rotations from (not necessarily unit) scalar-last quaternions [..., 4]."""
        return cls(_normalize(creation.asarray(quat)))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False):
        """Rotations from rotation vectors [..., 3] (axis times angle)."""
        return cls(_from_rotvec(creation.asarray(rotvec), degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float):
        """The identity rotation (only a single one, `num` None, as in JAX)."""
        assert num is None
        return cls(creation.array([0.0, 0.0, 0.0, 1.0], dtype=dtype))

    @classmethod
    def random(cls, random_key, num: int | None = None):
        """Not implemented (as in JAX)."""
        raise NotImplementedError()

    def __getitem__(self, indexer):
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other) -> Rotation:
        """The composition: apply `other`, then `self`."""
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors, inverse: bool = False):
        """The rotated `vectors` [..., 3] (rotated by the inverse when `inverse`)."""
        return _apply(self.as_matrix(), creation.asarray(vectors), inverse)

    def as_euler(self, seq: str, degrees: bool = False):
        """Euler angles [..., 3] about the three axes of `seq` (see from_euler)."""
        if len(seq) != 3:
            raise ValueError(f"Expected 3 axes, got {seq}.")
        intrinsic, axes = _parse_seq(seq, 3)
        return _as_euler(self.quat, axes, not intrinsic, degrees)

    def as_matrix(self):
        """Rotation matrices [..., 3, 3]."""
        return _as_matrix(self.quat)

    def as_mrp(self):
        """Modified Rodrigues Parameters [..., 3] (of the quaternion with w >= 0)."""
        return _as_mrp(self.quat)

    def as_rotvec(self, degrees: bool = False):
        """Rotation vectors [..., 3], of angle in [0, pi] (degrees when `degrees`)."""
        return _as_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """The quaternions [..., 4]; `canonical` picks w >= 0 (first nonzero entry positive),
        `scalar_first` returns (w, x, y, z)."""
        quat = _make_canonical(self.quat) if canonical else self.quat
        return manipulation.roll(quat, shift=1, axis=-1) if scalar_first else quat

    def inv(self):
        """The inverse rotations."""
        return Rotation(_inv(self.quat))

    def magnitude(self):
        """The rotation angles in radians, in [0, pi]."""
        return _magnitude(self.quat)

    def mean(self, weights=None):
        """The (weighted) mean rotation: the eigenvector of the largest eigenvalue of
        sum_i w_i q_i q_i^T (Markley et al., 2007)."""
        quat = self.quat
        if weights is None:
            w = creation.ones(quat.shape[0], dtype=quat.dtype)
        else:
            w = creation.asarray(weights, dtype=quat.dtype)
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise ValueError("Expected `weights` to have number of values equal to number of "
                             f"rotations, got {w.shape[0]} values and {len(self)} rotations.")
        k = products.dot(w[None, :] * quat.T, quat)
        _, v = jnp_linalg.eigh(k)
        return Rotation(v[:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (quat of shape [4])."""
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation of rotations (jax.scipy.spatial.transform.Slerp): build
    it with Slerp.init(times, rotations) and call it on times within [times[0], times[-1]]."""

    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any

    @classmethod
    def init(cls, times, rotations: Rotation):
        """The interpolator through `rotations` (at least 2) at increasing key `times`."""
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = creation.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of timestamps "
                             f"given, got {len(rotations)} rotations and {times.shape[0]} "
                             "timestamps.")
        # Strictly increasing times cannot be checked here: they may be traced.
        quat = rotations.as_quat()
        starts = Rotation(quat[:-1])
        return cls(times=times, timedelta=manipulation.diff(times), rotations=starts,
                   rotvecs=(starts.inv() * Rotation(quat[1:])).as_rotvec())

    def __call__(self, times):
        """The interpolated rotations at `times` (a scalar gives a single rotation)."""
        compute_times = creation.asarray(times, dtype=self.times.dtype)
        if compute_times.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        single_time = compute_times.ndim == 0
        compute_times = manipulation.atleast_1d(compute_times)
        ind = ufuncs.maximum(sorting.searchsorted(self.times, compute_times) - 1, 0)
        alpha = (compute_times - self.times[ind]) / self.timedelta[ind]
        result = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
        return result[0] if single_time else result
