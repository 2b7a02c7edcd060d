"""Gaussian kernel density estimation (jax.scipy.stats.gaussian_kde): a weighted sum of
normal densities centred on the data points, all sharing the data covariance scaled by a
bandwidth factor."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from gpuarr import dtypes
from gpuarr.numpy import creation, dtype_functions, manipulation, products, reductions, statistics, ufuncs
from gpuarr.numpy import linalg as jnp_linalg
from gpuarr.numpy.arguments import check_arraylike, ensure_array, promote_dtypes_inexact
from gpuarr.pytrees import register_pytree_node_class
from gpuarr.random import distributions, keys
from gpuarr.scipy import special
from gpuarr.scipy.linalg import _decomp as scipy_linalg_decomp
from gpuarr.vmap_api import vmap

BwMethod = None | str | Any | Callable[[Any], Any]


@register_pytree_node_class
@dataclass(frozen=True, init=False, slots=True)
class gaussian_kde:
    """A Gaussian KDE of `dataset` (shape (d, n): n points in d dimensions, or n scalars),
    with optional point `weights`. `bw_method` sets the bandwidth factor: 'scott' (the
    default, neff^(-1/(d+4))), 'silverman', a scalar, or a callable taking the KDE. The
    kernel covariance is the weighted data covariance times the factor squared. It is a
    pytree, so it can cross jit and vmap boundaries."""

    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset, bw_method: BwMethod = None, weights=None):
        check_arraylike("gaussian_kde", dataset)
        dataset = manipulation.atleast_2d(dataset)
        if dtypes.is_complex(dataset.dtype):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is not None:
            check_arraylike("gaussian_kde", weights)
            dataset, weights = (ensure_array(a) for a in promote_dtypes_inexact(dataset, weights))
            weights = manipulation.atleast_1d(weights)
            weights /= reductions.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        else:
            (dataset,) = promote_dtypes_inexact(dataset)
            weights = creation.full(n, 1.0 / n, dtype=dataset.dtype)
        self._setattr("dataset", dataset)
        self._setattr("weights", weights)
        neff = self._setattr("neff", 1 / reductions.sum(weights ** 2))
        factor = self._bandwidth_factor("scott" if bw_method is None else bw_method, neff, d)
        data_covariance = manipulation.atleast_2d(statistics.cov(dataset, rowvar=1, bias=False,
                                                                 aweights=weights))
        self._setattr("covariance", data_covariance * factor ** 2)
        self._setattr("inv_cov", jnp_linalg.inv(data_covariance) / factor ** 2)

    def _bandwidth_factor(self, bw_method, neff, d):
        if isinstance(bw_method, str) and bw_method == "scott":
            return ufuncs.power(neff, -1.0 / (d + 4))
        if isinstance(bw_method, str) and bw_method == "silverman":
            return ufuncs.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        if dtype_functions.isscalar(bw_method) and not isinstance(bw_method, str):
            return bw_method
        if callable(bw_method):
            return bw_method(self)  # sees dataset, weights and neff, as in JAX
        raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")

    def _setattr(self, name, value):
        # The dataclass is frozen; the constructor and unflattening set fields through here.
        object.__setattr__(self, name, value)
        return value

    def tree_flatten(self):
        return ((self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        del aux_data
        kde = cls.__new__(cls)
        for name, value in zip(("neff", "dataset", "weights", "covariance", "inv_cov"), children):
            kde._setattr(name, value)
        return kde

    @property
    def d(self):
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self):
        """The number of data points."""
        return self.dataset.shape[1]

    def evaluate(self, points):
        """The density at `points` (shape (d, m), or (m,) when d is 1, or (d,) for one
        point)."""
        check_arraylike("evaluate", points)
        points = self._reshape_points(points)
        return _gaussian_kernel_eval(False, self.dataset.T, self.weights[:, None], points.T,
                                     self.inv_cov)[:, 0]

    def __call__(self, points):
        return self.evaluate(points)

    def pdf(self, x):
        """The density at `x`, as evaluate."""
        return self.evaluate(x)

    def logpdf(self, x):
        """The log density at `x`, a log-sum-exp over the kernels, so it stays finite far
        from the data."""
        check_arraylike("logpdf", x)
        x = self._reshape_points(x)
        return _gaussian_kernel_eval(True, self.dataset.T, self.weights[:, None], x.T,
                                     self.inv_cov)[:, 0]

    def integrate_gaussian(self, mean, cov):
        """The integral of the density times the normal density N(mean, cov)."""
        mean = manipulation.atleast_1d(manipulation.squeeze(mean))
        cov = manipulation.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        chol, norm = _sum_factor(self.covariance + cov, self.d)
        return _gaussian_kernel_convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The mass of [low, high] (scalars) for a one-dimensional KDE."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = manipulation.squeeze(ufuncs.sqrt(self.covariance))
        low = manipulation.squeeze((low - self.dataset) / sigma)
        high = manipulation.squeeze((high - self.dataset) / sigma)
        return reductions.sum(self.weights * (special.ndtr(high) - special.ndtr(low)))

    def integrate_kde(self, other):
        """The integral of the product of this density and another KDE's."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol, norm = _sum_factor(self.covariance + other.covariance, self.d)
        sm, lg = (self, other) if self.n < other.n else (other, self)
        result = vmap(partial(_gaussian_kernel_convolve, chol, norm, lg.dataset, lg.weights),
                      in_axes=1)(sm.dataset)
        return reductions.sum(result * sm.weights)

    def resample(self, key, shape=()):
        """Random draws from the density, shape (d, *shape): a data point chosen by weight
        plus a normal draw with the kernel covariance (the same bits as JAX for the same key)."""
        ind_key, eps_key = keys.split(key)
        ind = distributions.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = distributions.multivariate_normal(eps_key, creation.zeros(self.d, self.covariance.dtype),
                                                self.covariance, shape=shape, dtype=self.dataset.dtype).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not supported: only integrate_box_1d is (NotImplementedError, as in JAX)."""
        del low_bounds, high_bounds, maxpts
        raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Not supported: the KDE is immutable (NotImplementedError, as in JAX)."""
        del bw_method
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def _reshape_points(self, points):
        if dtypes.is_complex(dtypes.dtype(points)):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = manipulation.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:  # one point given as a flat vector
                points = manipulation.reshape(points, (self.d, 1))
            else:
                raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points


def _sum_factor(cov, d):
    """The Cholesky factor of `cov` (as cho_factor) and 1 / sqrt((2 pi)^d det cov)."""
    chol = scipy_linalg_decomp.cho_factor(cov)
    norm = ufuncs.sqrt(2 * np.pi) ** d * reductions.prod(creation.diag(chol[0]))
    return chol, 1.0 / norm


def _gaussian_kernel_convolve(chol, norm, target, weights, mean):
    """norm * sum_i weights_i exp(-(t_i - mean)' C^-1 (t_i - mean) / 2), C given by `chol`."""
    diff = target - mean[:, None]
    alpha = scipy_linalg_decomp.cho_solve(chol, diff)
    arg = 0.5 * reductions.sum(diff * alpha, axis=0)
    return norm * reductions.sum(ufuncs.exp(-arg) * weights)


def _gaussian_kernel_eval(in_log, points, values, xi, precision):
    """sum_j values_j N(xi_i; points_j, precision^-1) for each row xi_i (its log by
    log-sum-exp if `in_log`); points (n, d), values (n, k), xi (m, d), result (m, k)."""
    points, values, xi, precision = promote_dtypes_inexact(points, values, xi, precision)
    d = points.shape[1]
    if xi.shape[1] != d:
        raise ValueError("points and xi must have same trailing dim")
    if precision.shape != (d, d):
        raise ValueError("precision matrix must match data dims")
    # With W W' = precision, the Mahalanobis distance is the Euclidean one after x -> x W.
    whitening = scipy_linalg_decomp.cholesky(precision, lower=True)
    points = products.dot(points, whitening)
    xi = products.dot(xi, whitening)
    log_norm = reductions.sum(ufuncs.log(creation.diag(whitening))) - 0.5 * d * ufuncs.log(2 * np.pi)
    sq_dist = reductions.sum(ufuncs.square(points[None, :, :] - xi[:, None, :]), axis=-1)  # (m, n)
    arg = (log_norm - 0.5 * sq_dist)[:, :, None]  # (m, n, 1)
    if in_log:
        return special.logsumexp(ufuncs.log(values)[None] + arg, axis=1)
    return reductions.sum(values[None] * ufuncs.exp(arg), axis=1)
