"""Host re-implementations of the LAPACK routines NumPy lacks, for the NumPy implementations
of lax.linalg's primitives (gpuarr/lax/linalg.py): LU with partial pivoting (getrf), the
tridiagonal solves (gtsv, and jaxlib's perturbed one after xLAGTF/xLAGTS), Householder
reflectors and their products (larfg, org2r, orm2r), Hessenberg reduction (gehd2),
column-pivoted QR (geqp3) and the real and complex Schur decompositions (gees).

Each works over a stack of matrices in NumPy loops (the batch in the arrays' leading axis),
or on one matrix where the algorithm is scalar and sequential (geqp3, gees); the callers
choose the working dtype and reshape.
"""
from __future__ import annotations

import cmath
import math

import numpy as np

# ---------------------------------------------------------------- LU (getrf)


def pivot_size(col):
    """LAPACK's pivot measure (i?amax): |x| for reals, |Re x| + |Im x| for complex numbers."""
    return np.abs(col.real) + np.abs(col.imag) if np.iscomplexobj(col) else np.abs(col)


def getrf(a):
    """LAPACK's getrf over a stack, in place: a is (count, m, n) and ends holding L (unit
    diagonal implied) below the diagonal and U on and above it. Returns the pivots
    (count, min(m, n)) and the row permutation (count, m)."""
    count, m, n = a.shape
    k = min(m, n)
    pivots = np.zeros((count, k), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (count, 1))
    rows = np.arange(count)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(k):
            p = j + np.argmax(pivot_size(a[:, j:, j]), axis=1)
            pivots[:, j] = p
            a[rows, j], a[rows, p] = a[rows, p], a[rows, j].copy()
            perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
            pivot = a[:, j, j, None]
            # LAPACK's getrf leaves a column alone when its pivot is zero.
            col = np.where(pivot != 0, a[:, j + 1:, j] / np.where(pivot != 0, pivot, 1),
                           a[:, j + 1:, j])
            a[:, j + 1:, j] = col
            a[:, j + 1:, j + 1:] -= col[:, :, None] * a[:, j, None, j + 1:]
    return pivots, perm


# ---------------------------------------------------------------- tridiagonal solves (gtsv)


def gtsv(dl, d, du, b):
    """LAPACK's gtsv over a stack: Gaussian elimination with partial pivoting (row swaps),
    then back substitution. dl, d, du are (count, m), b is (count, m, k). Returns x and a
    mask of the systems that met an exactly zero pivot (gtsv's info > 0)."""
    count, m = d.shape
    sub, diag, sup = dl[:, 1:].copy(), d.copy(), du[:, :-1].copy()
    sup2 = np.zeros((count, max(m - 2, 0)), d.dtype)  # fill-in from row swaps
    x = b.copy()
    failed = np.zeros(count, bool)
    for i in range(m - 1):
        keep = pivot_size(diag[:, i]) >= pivot_size(sub[:, i])
        failed |= keep & (diag[:, i] == 0)
        piv = np.where(keep, diag[:, i], sub[:, i])
        fact = np.where(keep, sub[:, i], diag[:, i]) / np.where(piv == 0, 1, piv)
        # Without a swap: row i+1 -= fact * row i. With one: rows i and i+1 trade places
        # first (the new row i+1 is the old row i minus fact times the old row i+1).
        d_next, s_i = diag[:, i + 1].copy(), sup[:, i].copy()
        diag[:, i] = piv
        diag[:, i + 1] = np.where(keep, d_next - fact * s_i, s_i - fact * d_next)
        sup[:, i] = np.where(keep, s_i, d_next)
        if i < m - 2:
            s_next = sup[:, i + 1].copy()
            sup2[:, i] = np.where(keep, 0, s_next)
            sup[:, i + 1] = np.where(keep, s_next, -fact * s_next)
        x_i, x_next = x[:, i].copy(), x[:, i + 1].copy()
        x[:, i] = np.where(keep[:, None], x_i, x_next)
        x[:, i + 1] = np.where(keep[:, None], x_next - fact[:, None] * x_i,
                               x_i - fact[:, None] * x_next)
    if m:
        failed |= diag[:, m - 1] == 0
    safe = np.where(diag == 0, 1, diag)[:, :, None]
    for i in reversed(range(m)):
        acc = x[:, i]
        if i + 1 < m:
            acc = acc - sup[:, i, None] * x[:, i + 1]
        if i + 2 < m:
            acc = acc - sup2[:, i, None] * x[:, i + 2]
        x[:, i] = acc / safe[:, i]
    return x, failed


def _perturb_pivots(perturb, pivot, rhs):
    """jaxlib's MaybePerturbPivot (after LAPACK's xLAGTS), over a stack: nudge pivots with
    |pivot| < 1 until neither 1 / pivot nor rhs / pivot overflows. pivot is (count,), rhs
    (count, k); returns both, updated."""
    finfo = np.finfo(np.abs(pivot).dtype)
    small = 1 / finfo.max
    safemin = finfo.tiny if small < finfo.tiny else small * (1 + finfo.eps)
    bignum = 1 / safemin
    abs_pivot = np.abs(pivot)
    perturb = np.copysign(np.maximum(np.abs(perturb), safemin), pivot.real)
    max_factor = np.abs(rhs).max(axis=1) if rhs.shape[1] else np.zeros_like(abs_pivot)
    active = abs_pivot < 1
    while active.any():
        tiny = abs_pivot < safemin
        bump = active & np.where(tiny, (abs_pivot == 0) | (max_factor * safemin > abs_pivot),
                                 max_factor > abs_pivot * bignum)
        rescale = active & tiny & ~bump
        pivot = np.where(bump, pivot + perturb, np.where(rescale, pivot * bignum, pivot))
        perturb = np.where(bump, perturb * 2, perturb)
        rhs = np.where(rescale[:, None], rhs * bignum, rhs)
        abs_pivot = np.abs(pivot)
        active = bump & (abs_pivot < 1)
    return pivot, rhs


def gtsv_perturbed(dl, d, du, b):
    """jaxlib's tridiagonal solve with perturb_singular=True, over a stack: LAPACK's xLAGTF
    (LU with scaled partial pivoting) and xLAGTS (back substitution that perturbs tiny
    pivots by about eps * max|U| instead of failing)."""
    count, m = d.shape
    x = b.copy()
    if m == 0:
        return x
    eps = np.finfo(np.abs(d).dtype).eps
    if m == 1:
        p, row = _perturb_pivots(eps * np.abs(d[:, 0]), d[:, 0], x[:, 0])
        x[:, 0] = row / p[:, None]
        return x
    # Columns of U: its diagonal and two superdiagonals.
    u = np.zeros((count, m, 3), d.dtype)
    u[:, 0, 0], u[:, 0, 1] = d[:, 0], du[:, 0]
    max_u = np.maximum(np.abs(u[:, 0, 0]), np.abs(u[:, 0, 1]))
    scale1 = np.abs(u[:, 0, 0]) + np.abs(u[:, 0, 1])
    for k in range(m - 1):
        u[:, k + 1, 0] = d[:, k + 1]
        sub = dl[:, k + 1]
        scale2 = np.abs(sub) + np.abs(d[:, k + 1])
        if k < m - 2:
            scale2 = scale2 + np.abs(du[:, k + 1])
        piv1 = np.where(u[:, k, 0] == 0, 0, np.abs(u[:, k, 0]) / np.where(scale1 == 0, 1, scale1))
        piv2 = np.abs(sub) / np.where(scale2 == 0, 1, scale2)
        zero_sub = sub == 0
        swap = ~zero_sub & (piv2 > piv1)
        keep = ~zero_sub & ~swap
        u_k0, u_k1 = u[:, k, 0].copy(), u[:, k, 1].copy()
        du_next = du[:, k + 1] if k < m - 2 else np.zeros_like(sub)
        # No swap: eliminate with factor sub / u[k, 0] (nothing to do if sub is already zero).
        fact = np.where(keep, sub, 0) / np.where(keep, u_k0, 1)
        new_u0 = np.where(keep, d[:, k + 1] - fact * u_k1, d[:, k + 1])
        new_x = np.where(keep[:, None], x[:, k + 1] - fact[:, None] * x[:, k], x[:, k + 1])
        # Swap rows k and k+1, then eliminate with factor u[k, 0] / sub.
        sfact = np.where(swap, u_k0, 0) / np.where(swap, sub, 1)
        u[:, k, 0] = np.where(swap, sub, u_k0)
        u[:, k, 1] = np.where(swap, d[:, k + 1], u_k1)
        u[:, k, 2] = np.where(swap, du_next, 0)
        u[:, k + 1, 0] = np.where(swap, u_k1 - sfact * d[:, k + 1], new_u0)
        u[:, k + 1, 1] = np.where(swap, -sfact * du_next, du_next)
        x_k = x[:, k].copy()
        x[:, k + 1] = np.where(swap[:, None], x_k - sfact[:, None] * b[:, k + 1], new_x)
        x[:, k] = np.where(swap[:, None], b[:, k + 1], x_k)
        scale1 = np.where(swap, np.abs(u[:, k + 1, 0]) + np.abs(u[:, k + 1, 1]), scale2)
        if k < m - 2:  # jaxlib leaves row m - 2 out of max|U|
            max_u = np.maximum(max_u, np.abs(u[:, k]).max(axis=1))
    max_u = np.maximum(max_u, np.abs(u[:, m - 1, 0]))
    perturb = eps * max_u
    for k in reversed(range(m)):
        row = x[:, k]
        if k + 1 < m:
            row = row - u[:, k, 1, None] * x[:, k + 1]
        if k + 2 < m:
            row = row - u[:, k, 2, None] * x[:, k + 2]
        p, row = _perturb_pivots(perturb, u[:, k, 0], row)
        x[:, k] = row * (1 / p)[:, None]
    return x



# ---------------------------------------------------------------- Householder reflectors


def org2r(v_all, tau, n):
    """LAPACK's org2r over a stack: the first n columns of Q = H_0 H_1 ... H_{k-1}, applied
    from the last reflector on; H_i = I - tau_i v_i v_i^H with v_i = (0, ..., 0, 1,
    v_all[i+1:, i]). v_all is (count, m, >= k), tau (count, k)."""
    count, m, _ = v_all.shape
    q = np.tile(np.eye(m, n, dtype=v_all.dtype), (count, 1, 1))
    for i in reversed(range(tau.shape[1])):
        v = v_all[:, i:, i].copy()
        v[:, 0] = 1
        w = np.einsum("cr,crj->cj", v.conj(), q[:, i:, :])
        q[:, i:, :] -= tau[:, i, None, None] * v[:, :, None] * w[:, None, :]
    return q


def orm2r(v_all, tau, out, left, transpose):
    """LAPACK's orm2r over a stack, in place on out (count, ., .): Q out, out Q or, when
    `transpose`, their adjoint versions, for Q = H_0 ... H_{k-1} stored as org2r takes it."""
    if transpose:  # Q^H = H_{k-1}^H ... H_0^H, H_i^H = I - conj(tau_i) v_i v_i^H
        tau = tau.conj()
    # Q c applies H_{k-1} first, c Q applies H_0 first; transposing reverses the order.
    k = tau.shape[1]
    order = reversed(range(k)) if left != transpose else range(k)
    for i in order:
        v = v_all[:, i:, i].copy()
        v[:, 0] = 1
        if left:  # rows i: of out
            w = np.einsum("cr,crj->cj", v.conj(), out[:, i:, :])
            out[:, i:, :] -= tau[:, i, None, None] * v[:, :, None] * w[:, None, :]
        else:  # columns i: of out
            w = np.einsum("crj,cj->cr", out[:, :, i:], v)
            out[:, :, i:] -= tau[:, i, None, None] * w[:, :, None] * v.conj()[:, None, :]
    return out


def larfg(alpha, x):
    """LAPACK's larfg over a stack: the reflector H = I - tau v v^H, v = (1, v_tail), with
    H^H (alpha, x) = (beta, 0, ..., 0) and beta real. alpha is (count,), x (count, r);
    returns beta, tau and v_tail. (larfg's rescaling of a beta below safmin / eps is left
    out: it only changes results for norms near the underflow threshold.)"""
    xnorm = np.linalg.norm(x, axis=1) if x.shape[1] else np.zeros(alpha.shape, x.real.dtype)
    alpha_r = alpha.real
    norm = np.hypot(np.hypot(alpha_r, alpha.imag), xnorm)
    # Real larfg leaves H = I when x is zero; the complex one also needs alpha to be real.
    trivial = (xnorm == 0) & (alpha.imag == 0)
    beta = np.where(np.signbit(alpha_r), norm, -norm)
    safe_beta = np.where(trivial, 1, beta)
    if np.iscomplexobj(alpha):
        tau = ((safe_beta - alpha_r) - 1j * alpha.imag) / safe_beta
    else:
        tau = (safe_beta - alpha_r) / safe_beta
    tau = np.where(trivial, 0, tau).astype(alpha.dtype)
    scale = 1 / np.where(trivial, 1, alpha - safe_beta)
    return np.where(trivial, alpha, beta).astype(alpha.dtype), tau, x * scale[:, None]


def gehd2(h):
    """LAPACK's gehd2 over a stack, in place on h (count, n, n): H_i zeroes column i below
    the subdiagonal, A <- H_i^H A H_i, and v_i is stored where it made the zeros. Returns
    the taus (count, n - 1)."""
    count, n, _ = h.shape
    taus = np.zeros((count, max(n - 1, 0)), h.dtype)
    for i in range(n - 1):
        beta, tau, v_tail = larfg(h[:, i + 1, i], h[:, i + 2:, i])
        taus[:, i] = tau
        v = np.concatenate([np.ones((count, 1), h.dtype), v_tail], axis=1)
        right = h[:, :, i + 1:]
        aw = np.einsum("crj,cj->cr", right, v)
        h[:, :, i + 1:] = right - tau[:, None, None] * aw[:, :, None] * v.conj()[:, None, :]
        left = h[:, i + 1:, i + 1:]
        wa = np.einsum("cr,crj->cj", v.conj(), left)
        h[:, i + 1:, i + 1:] = left - tau.conj()[:, None, None] * v[:, :, None] * wa[:, None, :]
        h[:, i + 1, i] = beta
        h[:, i + 2:, i] = v_tail
    return taus


# ---------------------------------------------------------------- column-pivoted QR (geqp3)


def _fix_columns(h, perm, fixed):
    """geqp3's first pass: move the columns marked in `fixed` to the front, in place, by
    LAPACK's swaps (free columns may change order); returns how many were fixed."""
    nfxd = 0
    for j in np.flatnonzero(fixed):
        if j != nfxd:
            h[:, [nfxd, j]] = h[:, [j, nfxd]]
            perm[[nfxd, j]] = perm[[j, nfxd]]
        nfxd += 1
    return nfxd


def _reflect_column(h, taus, i):
    """Step i of Householder QR (geqr2): zero h[i+1:, i] and apply the reflector's adjoint
    to the columns on its right."""
    beta, tau, tail = larfg(h[i:i + 1, i], h[None, i + 1:, i])
    v = np.concatenate([[1], tail[0]]).astype(h.dtype)
    h[i:, i + 1:] -= np.conj(tau[0]) * np.outer(v, v.conj() @ h[i:, i + 1:])
    h[i, i], h[i + 1:, i], taus[i] = beta[0], tail[0], tau[0]


def geqp3(h, fixed):
    """LAPACK's geqp3 over a stack, in place on h (count, m, n); `fixed` (count, n) marks the
    columns to keep at the front. Returns the 0-based permutations and the taus."""
    count, m, n = h.shape
    perms = np.zeros((count, n), np.int64)
    taus = np.zeros((count, min(m, n)), h.dtype)
    for c in range(count):
        perms[c], taus[c] = _geqp3_one(h[c], fixed[c])
    return perms, taus


def pivoted_qr(c, full_matrices):
    """Q, R and the 0-based column permutation of column-pivoted QR over a batch (c is
    [..., m, n]), as JAX forms them: geqp3, then orgqr on the packed matrix."""
    *batch, m, n = c.shape
    h = c.reshape((math.prod(batch), m, n)).copy()
    perm, taus = geqp3(h, np.zeros(h.shape[::2], bool))
    if m < n:
        q = org2r(h[:, :m, :m], taus, m)
    elif full_matrices:
        q = org2r(np.pad(h, ((0, 0), (0, 0), (0, m - n))), taus, m)
    else:
        q, h = org2r(h, taus, n), h[:, :n, :n]
    batched = lambda x: x.reshape(tuple(batch) + x.shape[1:])
    return batched(q), batched(np.triu(h)), batched(perm.astype(np.int32))


def _geqp3_one(h, fixed):
    """LAPACK's geqp3 on one matrix, in place: fixed columns first, unpivoted, then laqp2's
    pivoting (largest partial column norm, first on ties) with Drmac and Bujanovic's norm
    downdating, recomputing a norm once cancellation makes the downdated one unreliable.
    Returns the 0-based permutation and the taus. (For large matrices LAPACK switches to
    the blocked laqps, which downdates the same norms but in blocks.)"""
    m, n = h.shape
    k = min(m, n)
    perm, taus = np.arange(n), np.zeros(k, h.dtype)
    nfxd = _fix_columns(h, perm, fixed)
    for i in range(min(nfxd, k)):
        _reflect_column(h, taus, i)
    if nfxd >= k:
        return perm, taus
    tol3z = math.sqrt(np.finfo(h.dtype).eps / 2)  # sqrt of LAPACK's lamch('Epsilon')
    vn1 = np.zeros(n, h.real.dtype)
    vn1[nfxd:] = np.linalg.norm(h[nfxd:, nfxd:], axis=0)
    vn2 = vn1.copy()
    for i in range(nfxd, k):
        pvt = i + int(np.argmax(vn1[i:]))
        if pvt != i:
            h[:, [i, pvt]] = h[:, [pvt, i]]
            perm[[i, pvt]] = perm[[pvt, i]]
            vn1[pvt], vn2[pvt] = vn1[i], vn2[i]
        _reflect_column(h, taus, i)
        _downdate_norms(h, vn1, vn2, i, tol3z)
    return perm, taus


def _downdate_norms(h, vn1, vn2, i, tol3z):
    """laqp2's update of the partial norms of columns i+1: once row i is factored out."""
    j = i + 1 + np.flatnonzero(vn1[i + 1:] != 0)
    if not j.size:
        return
    temp = np.maximum(1 - (np.abs(h[i, j]) / vn1[j]) ** 2, 0)
    recompute = temp * (vn1[j] / vn2[j]) ** 2 <= tol3z
    vn1[j] = np.where(recompute, 0, vn1[j] * np.sqrt(temp))
    redo = j[recompute]
    if i + 1 < h.shape[0] and redo.size:
        vn1[redo] = np.linalg.norm(h[i + 1:, redo], axis=0)
    vn2[redo] = vn1[redo]



# ---------------------------------------------------------------- Schur (gees)
# LAPACK's gees, one matrix at a time in double precision: a permutation that isolates
# eigenvalues (gebal with job 'P'), Householder reduction of the rest to Hessenberg form
# (gehrd), then the implicitly shifted QR algorithm of lahqr, which dhseqr uses for small
# matrices: Francis double shifts for real input, whose complex pairs stay in 2x2 blocks
# standardized as lanv2 does, and Wilkinson single shifts for complex input. Rescaling near
# the overflow and underflow thresholds (gees' and lanv2's) is left out.

_EXCEPTIONAL_EVERY = 10  # lahqr's KEXSH: an exceptional shift after this many failed sweeps


def _cabs1(x):
    """|re| + |im|, LAPACK's cheap modulus."""
    return abs(x.real) + abs(x.imag)


def _gebal_permute(a):
    """gebal's permutation step on one matrix: rows that are zero off the diagonal (within
    the active columns) go to the bottom, then such columns to the left, which isolates their
    eigenvalues. Returns the permuted matrix, the order `perm` (a[perm][:, perm]) and the
    active block lo..hi."""
    a, n = a.copy(), a.shape[0]
    perm = np.arange(n)

    def swap(i, j):
        a[[i, j]] = a[[j, i]]
        a[:, [i, j]] = a[:, [j, i]]
        perm[[i, j]] = perm[[j, i]]

    lo, hi = 0, n - 1
    moved = True
    while moved:  # as current LAPACK: a pass visits each row once, then passes repeat
        moved = False
        for i in range(hi, -1, -1):
            if not np.any(np.delete(a[i, :hi + 1], i)):
                swap(i, hi)
                moved = True
                if hi == 0:
                    return a, perm, 0, 0
                hi -= 1
    moved = True
    while moved:
        moved = False
        for j in range(lo, hi + 1):
            if not np.any(np.delete(a[lo:hi + 1, j], j - lo)):
                swap(j, lo)
                moved = True
                lo += 1
    return a, perm, lo, hi


def _reflect(h, z, k, v, tau, last):
    """H <- P^H H P and Z <- Z P for P = I - tau v v^H acting on indices k..k+len(v)-1; the
    rows are updated from column k on and the columns up to row `last` (beyond lie zeros)."""
    r = slice(k, k + len(v))
    h[r, k:] -= np.outer(np.conj(tau) * v, v.conj() @ h[r, k:])
    h[:last + 1, r] -= np.outer(h[:last + 1, r] @ v, tau * v.conj())
    z[:, r] -= np.outer(z[:, r] @ v, tau * v.conj())


def _householder(x):
    """larfg on the vector x: (beta, v, tau) with (I - tau v v^H)^H x = (beta, 0, ...)."""
    beta, tau, tail = larfg(x[:1], x[None, 1:])
    return beta[0], np.concatenate([[1], tail[0]]).astype(x.dtype), tau[0]


def _gehrd(h, z, lo, hi):
    """Reduce h[lo:hi+1, lo:hi+1] to Hessenberg form in place, accumulating z. The last
    reflector has length one: for complex input it makes the last subdiagonal entry real."""
    for i in range(lo, hi):
        beta, v, tau = _householder(h[i + 1:hi + 1, i].copy())
        _reflect(h, z, i + 1, v, tau, hi)
        h[i + 1, i], h[i + 2:hi + 1, i] = beta, 0


def _deflation_point(h, l, i, lo, hi, ulp, smlnum):
    """lahqr's search for a negligible subdiagonal h[k, k-1], l < k <= i (Ahues and
    Tisseur's criterion, which compares it with its neighbours); l when there is none."""
    for k in range(i, l, -1):
        sub = _cabs1(h[k, k - 1])
        if sub <= smlnum:
            return k
        tst = _cabs1(h[k - 1, k - 1]) + _cabs1(h[k, k])
        if tst == 0:
            tst += (abs(h[k - 1, k - 2].real) if k - 2 >= lo else 0) + (
                abs(h[k + 1, k].real) if k + 1 <= hi else 0)
        if abs(h[k, k - 1].real) <= ulp * tst:
            ab, ba = sorted((sub, _cabs1(h[k - 1, k])), reverse=True)
            aa, bb = sorted((_cabs1(h[k, k]), _cabs1(h[k - 1, k - 1] - h[k, k])), reverse=True)
            s = aa + ab
            if ba * (ab / s) <= max(smlnum, ulp * (bb * (aa / s))):
                return k
    return l


def _lanv2(a, b, c, d):
    """LAPACK's lanv2: the rotation (cs, sn) that brings [[a, b], [c, d]] to standard form,
    upper triangular for real eigenvalues, else equal diagonal entries and off-diagonal
    entries of opposite signs. Returns the new a, b, c, d and cs, sn."""
    sign = math.copysign
    if c == 0:
        return a, b, c, d, 1.0, 0.0
    if b == 0:  # swap rows and columns
        return d, -c, 0.0, a, 0.0, 1.0
    if a - d == 0 and sign(1, b) != sign(1, c):
        return a, b, c, d, 1.0, 0.0
    temp = a - d
    p = temp / 2
    bcmax = max(abs(b), abs(c))
    bcmis = min(abs(b), abs(c)) * sign(1, b) * sign(1, c)
    scale = max(abs(p), bcmax)
    zz = (p / scale) * p + (bcmax / scale) * bcmis
    if zz >= 4 * np.finfo(np.float64).eps:  # real eigenvalues: make it upper triangular
        zz = p + sign(math.sqrt(scale) * math.sqrt(zz), p)
        tau = math.hypot(c, zz)
        return d + zz, b - c, 0.0, d - (bcmax / zz) * bcmis, zz / tau, c / tau
    # Complex or nearly equal real eigenvalues: make the diagonal entries equal.
    sigma = b + c
    tau = math.hypot(sigma, temp)
    cs = math.sqrt((1 + abs(sigma) / tau) / 2)
    sn = -(p / (tau * cs)) * sign(1, sigma)
    aa, bb, cc, dd = a * cs + b * sn, -a * sn + b * cs, c * cs + d * sn, -c * sn + d * cs
    b, c = bb * cs + dd * sn, -aa * sn + cc * cs
    a = d = ((aa * cs + cc * sn) + (-bb * sn + dd * cs)) / 2
    if c != 0 and b != 0 and sign(1, b) == sign(1, c):  # real after all: split them
        sab, sac = math.sqrt(abs(b)), math.sqrt(abs(c))
        p, tau = sign(sab * sac, c), 1 / math.sqrt(abs(b + c))
        cs1, sn1 = sab * tau, sac * tau
        cs, sn = cs * cs1 - sn * sn1, cs * sn1 + sn * cs1
        return a + p, b - c, 0.0, d - p, cs, sn
    if c != 0 and b == 0:
        return a, -c, 0.0, d, -sn, cs
    return a, b, c, d, cs, sn


def _exceptional(kdefl):
    """Which exceptional shift lahqr takes after `kdefl` sweeps without deflation."""
    if kdefl % (2 * _EXCEPTIONAL_EVERY) == 0:
        return "bottom"
    return "top" if kdefl % _EXCEPTIONAL_EVERY == 0 else None


def _double_shifts(h, l, i, kdefl):
    """dlahqr's shifts: the eigenvalues of the trailing 2x2 block (one of them twice when
    both are real), or an exceptional pair. Returns (rt1r, rt1i, rt2r, rt2i)."""
    where = _exceptional(kdefl)
    if where:  # a made-up block from the sizes of two subdiagonals at the bottom or the top
        if where == "bottom":
            s, corner = abs(h[i, i - 1]) + abs(h[i - 1, i - 2]), h[i, i]
        else:
            s, corner = abs(h[l + 1, l]) + abs(h[l + 2, l + 1]), h[l, l]
        h11 = 0.75 * s + corner
        h12, h21, h22 = -0.4375 * s, s, h11
    else:
        h11, h12, h21, h22 = h[i - 1, i - 1], h[i - 1, i], h[i, i - 1], h[i, i]
    s = abs(h11) + abs(h12) + abs(h21) + abs(h22)
    if s == 0:
        return 0.0, 0.0, 0.0, 0.0
    h11, h12, h21, h22 = h11 / s, h12 / s, h21 / s, h22 / s
    tr = (h11 + h22) / 2
    det = (h11 - tr) * (h22 - tr) - h12 * h21
    rtdisc = math.sqrt(abs(det))
    if det >= 0:  # a complex conjugate pair
        return tr * s, rtdisc * s, tr * s, -rtdisc * s
    # Two real shifts: use the one closer to h22 twice.
    rt = tr + rtdisc if abs(tr + rtdisc - h22) <= abs(tr - rtdisc - h22) else tr - rtdisc
    return rt * s, 0.0, rt * s, 0.0


def _lahqr_real(h, z, lo, hi, ulp, smlnum):
    """dlahqr: the real Schur form of the Hessenberg block lo..hi of h, in place, with the
    transformations accumulated in z. Returns False if the iteration does not converge."""
    itmax, kdefl, i = 30 * max(10, hi - lo + 1), 0, hi
    while i >= lo:
        l = lo
        for _ in range(itmax + 1):
            l = _deflation_point(h, l, i, lo, hi, ulp, smlnum)
            if l > lo:
                h[l, l - 1] = 0
            if l >= i - 1:  # a 1x1 or 2x2 block split off
                break
            kdefl += 1
            rt1r, rt1i, rt2r, rt2i = _double_shifts(h, l, i, kdefl)
            # Start the bulge at row m, below two consecutive small subdiagonals if any.
            for m in range(i - 2, l - 1, -1):
                s = abs(h[m, m] - rt2r) + abs(rt2i) + abs(h[m + 1, m])
                h21s = h[m + 1, m] / s
                v = np.array([h21s * h[m, m + 1] + (h[m, m] - rt1r) * ((h[m, m] - rt2r) / s)
                              - rt1i * (rt2i / s),
                              h21s * (h[m, m] + h[m + 1, m + 1] - rt1r - rt2r),
                              h21s * h[m + 2, m + 1]])
                v /= np.abs(v).sum()
                if m == l or abs(h[m, m - 1]) * (abs(v[1]) + abs(v[2])) <= ulp * abs(v[0]) * (
                        abs(h[m - 1, m - 1]) + abs(h[m, m]) + abs(h[m + 1, m + 1])):
                    break
            for k in range(m, i):  # chase the bulge down
                nr = min(3, i - k + 1)
                if k > m:
                    v = h[k:k + nr, k - 1].copy()
                beta, w, tau = _householder(v[:nr])
                if k > m:
                    h[k, k - 1], h[k + 1:k + nr, k - 1] = beta, 0
                elif m > l:
                    h[k, k - 1] *= 1 - tau
                _reflect(h, z, k, w, tau, min(k + 3, i))
        else:
            return False
        if l == i - 1:  # standardize the 2x2 block and apply its rotation to the rest
            a, b, c, d, cs, sn = _lanv2(h[i - 1, i - 1], h[i - 1, i], h[i, i - 1], h[i, i])
            h[i - 1:i + 1, i - 1:i + 1] = [[a, b], [c, d]]
            rot = np.array([[cs, sn], [-sn, cs]])
            h[i - 1:i + 1, i + 1:] = rot @ h[i - 1:i + 1, i + 1:]
            h[:i - 1, i - 1:i + 1] = h[:i - 1, i - 1:i + 1] @ rot.T
            z[:, i - 1:i + 1] = z[:, i - 1:i + 1] @ rot.T
        kdefl, i = 0, l - 1
    return True


def _scale_index(h, z, j, c):
    """Similarity by a unit c at index j, the diagonal entry and the subdiagonal left as
    they are: row j right of the diagonal times conj(c), column j above it and z's column j
    times c."""
    h[j, j + 1:] *= np.conj(c)
    h[:j, j] *= c
    z[:, j] *= c


def _lahqr_complex(h, z, lo, hi, ulp, smlnum):
    """zlahqr: the complex Schur form of the Hessenberg block lo..hi of h, in place, with the
    transformations accumulated in z; the subdiagonal is kept real throughout. Returns False
    if the iteration does not converge."""
    for j in range(lo + 1, hi + 1):  # make the subdiagonal real
        if h[j, j - 1].imag != 0:
            c = h[j, j - 1] / abs(h[j, j - 1])
            h[j, j - 1] = abs(h[j, j - 1])
            _scale_index(h, z, j, c)
            if j < hi:
                h[j + 1, j] *= c
    itmax, kdefl, i = 30 * max(10, hi - lo + 1), 0, hi
    while i >= lo:
        l = lo
        for _ in range(itmax + 1):
            l = _deflation_point(h, l, i, lo, hi, ulp, smlnum)
            if l > lo:
                h[l, l - 1] = 0
            if l >= i:
                break
            kdefl += 1
            where = _exceptional(kdefl)
            if where == "bottom":
                shift = 0.75 * abs(h[i, i - 1].real) + h[i, i]
            elif where == "top":
                shift = 0.75 * abs(h[l + 1, l].real) + h[l, l]
            else:  # Wilkinson's shift: the eigenvalue of the trailing 2x2 block nearer h[i, i]
                shift = complex(h[i, i])
                u = cmath.sqrt(h[i - 1, i]) * cmath.sqrt(h[i, i - 1])
                if _cabs1(u) != 0:
                    x = (h[i - 1, i - 1] - shift) / 2
                    sx = _cabs1(x)
                    s = max(_cabs1(u), sx)
                    y = s * cmath.sqrt((x / s) ** 2 + (u / s) ** 2)
                    if sx > 0 and ((x / sx).real * y.real + (x / sx).imag * y.imag) < 0:
                        y = -y
                    shift -= u * (u / (x + y))
            for m in range(i - 1, l - 1, -1):  # below two consecutive small subdiagonals
                h11s = h[m, m] - shift
                s = _cabs1(h11s) + abs(h[m + 1, m].real)
                v = np.array([h11s / s, h[m + 1, m].real / s])
                if m == l or abs(h[m, m - 1].real) * abs(v[1].real) <= ulp * (
                        _cabs1(v[0]) * (_cabs1(h[m, m]) + _cabs1(h[m + 1, m + 1]))):
                    break
            for k in range(m, i):  # chase the bulge down
                if k > m:
                    v = h[k:k + 2, k - 1].copy()
                beta, w, tau = _householder(v.astype(h.dtype))
                if k > m:
                    h[k, k - 1], h[k + 1, k - 1] = beta, 0
                _reflect(h, z, k, w, tau, min(k + 2, i))
                if k == m and m > l:  # the step skipped h[m, m-1]: rescale to keep it real
                    c = (1 - tau) / abs(1 - tau)
                    h[m + 1, m] *= np.conj(c)
                    if m + 2 <= i:
                        h[m + 2, m + 1] *= c
                    for j in range(m, i + 1):
                        if j != m + 1:
                            _scale_index(h, z, j, np.conj(c))
            if h[i, i - 1].imag != 0:  # keep h[i, i-1] real
                c = h[i, i - 1] / abs(h[i, i - 1])
                h[i, i - 1] = abs(h[i, i - 1])
                _scale_index(h, z, i, c)
        else:
            return False
        kdefl, i = 0, l - 1
    return True


def gees(a):
    """(T, Z, converged) for one float64 or complex128 matrix."""
    n = a.shape[0]
    h, perm, lo, hi = _gebal_permute(a)
    z = np.eye(n, dtype=a.dtype)
    _gehrd(h, z, lo, hi)
    ulp = np.finfo(np.float64).eps
    smlnum = np.finfo(np.float64).tiny * ((hi - lo + 1) / ulp)
    qr = _lahqr_complex if np.iscomplexobj(a) else _lahqr_real
    converged = qr(h, z, lo, hi, ulp, smlnum)
    z[perm] = z.copy()  # undo the permutation: A = (P Z) T (P Z)^H
    return h, z, converged

