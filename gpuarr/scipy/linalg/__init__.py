"""gpuarr.scipy.linalg: jax.scipy.linalg's factorizations, solvers, matrix functions and
structured matrices, built on gpuarr.lax.linalg and gpuarr.numpy.linalg.

Not provided yet: schur, rsf2csf, hessenberg, sqrtm, funm, solve_sylvester and qr_multiply,
which need primitives gpuarr does not have (Schur, Hessenberg and Householder
factorizations), and the special matrices fiedler_companion, pascal, invpascal and
invhilbert.
"""
from gpuarr.scipy.linalg._decomp import (
    cho_factor,
    cho_solve,
    cholesky,
    det,
    eigh,
    eigh_tridiagonal,
    inv,
    lu,
    lu_factor,
    lu_solve,
    qr,
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
    hadamard,
    hankel,
    helmert,
    hilbert,
    leslie,
    toeplitz,
)

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
    "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet",
    "fiedler", "hadamard", "hankel", "helmert", "hilbert", "inv", "leslie", "lu", "lu_factor",
    "lu_solve", "polar", "qr", "solve", "solve_triangular", "svd", "toeplitz",
]
