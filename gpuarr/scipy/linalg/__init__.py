"""gpuarr.scipy.linalg: jax.scipy.linalg's factorizations, solvers, matrix functions and
structured matrices, built on gpuarr.lax.linalg and gpuarr.numpy.linalg. The Schur
decomposition and what is built on it (rsf2csf, sqrtm, funm, solve_sylvester) run
lax.linalg.schur on the host.
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
from gpuarr.scipy.linalg._schur import funm, rsf2csf, schur, solve_sylvester, sqrtm
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
    "fiedler", "fiedler_companion", "funm", "hadamard", "hankel", "helmert", "hessenberg",
    "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve",
    "pascal", "polar", "qr", "qr_multiply", "rsf2csf", "schur", "solve", "solve_sylvester",
    "solve_triangular", "sqrtm", "svd", "toeplitz",
]
