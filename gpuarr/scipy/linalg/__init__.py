"""gpuarr.scipy.linalg: jax.scipy.linalg's factorizations, solvers, matrix functions and
structured matrices, built on gpuarr.lax.linalg and gpuarr.numpy.linalg.

Not provided yet: schur, rsf2csf, sqrtm, funm and solve_sylvester, which need a Schur
decomposition gpuarr does not have.
"""
from gpuarr.scipy.linalg._decomp import (
    cho_factor,
    cho_solve,
    cholesky,
    det,
    eigh,
    eigh_tridiagonal,
    hessenberg,
    inv,
    lu,
    lu_factor,
    lu_solve,
    qr,
    qr_multiply,
    solve,
    solve_triangular,
    svd,
)
from gpuarr.scipy.linalg._matfuncs import expm, expm_frechet, polar
from gpuarr.scipy.linalg._special import (
    block_diag,
    circulant,
    companion,
    convolution_matrix,
    dft,
    fiedler,
    fiedler_companion,
    hadamard,
    hankel,
    helmert,
    hilbert,
    invhilbert,
    invpascal,
    leslie,
    pascal,
    toeplitz,
)

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
    "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet",
    "fiedler", "fiedler_companion", "hadamard", "hankel", "helmert", "hessenberg", "hilbert",
    "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve", "pascal", "polar",
    "qr", "qr_multiply", "solve", "solve_triangular", "svd", "toeplitz",
]
