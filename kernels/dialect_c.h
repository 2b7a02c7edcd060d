/* dialect_c.h: the C11 spelling of the names every gpuarr kernel template uses, for the
 * native platform (the system C compiler builds the kernels into a shared object).
 *
 * The counterpart of dialect_cuda.h and dialect_opencl.h. A launch is a range of work items:
 * the host calls `<entry>_run(args, begin, end)` (written by the renderer) from each worker
 * thread with its own [begin, end), and the loop macros below walk that range. Work items are
 * independent on every dialect (no template synchronises blocks with each other), so any
 * split of the range is correct. Blocks have one thread here (the renderer picks a block size
 * of 1 for this dialect), so shared memory is a local array and barriers are no-ops.
 *
 * Compiled with -fwrapv (integer overflow wraps, as XLA and NumPy), -ffp-contract=off (no fused
 * multiply-add: each operation rounds as NumPy's does) and without -ffast-math, so NaN,
 * infinities, signed zeros and subnormals behave as on the NumPy backend.
 */
#define GPUARR_DIALECT_C 1
#include <math.h>
#include <stddef.h>
#include <string.h>

/* Vector variants of the C library's float32 transcendentals (glibc's libmvec, which the
 * compiler calls from an `omp simd` loop once they are declared `simd`): a vectorised loop
 * calls them for 8 or 16 lanes at once. They handle NaN, infinities, signed zeros and
 * subnormals as the scalar functions do and stay within 4 ulp of the exact result (float64
 * keeps the scalar C library: its tests allow an ulp or two). Declared only when the host
 * links -lmvec (GPUARR_LIBMVEC, set by the native backend's probe); before <tgmath.h>, whose
 * type-generic macros would rename them. */
#if defined(GPUARR_LIBMVEC) && defined(__x86_64__) && defined(__GLIBC__)
#define GPUARR_SIMD_1(name) extern float name##f(float) __attribute__((simd("notinbranch")));
#define GPUARR_SIMD_2(name) \
  extern float name##f(float, float) __attribute__((simd("notinbranch")));
GPUARR_SIMD_1(exp) GPUARR_SIMD_1(log) GPUARR_SIMD_1(sin) GPUARR_SIMD_1(cos) GPUARR_SIMD_2(pow)
#if __GLIBC_PREREQ(2, 35)
GPUARR_SIMD_1(exp2) GPUARR_SIMD_1(expm1) GPUARR_SIMD_1(log1p) GPUARR_SIMD_1(tan)
GPUARR_SIMD_1(asin) GPUARR_SIMD_1(acos) GPUARR_SIMD_1(atan) GPUARR_SIMD_1(sinh)
GPUARR_SIMD_1(cosh) GPUARR_SIMD_1(tanh) GPUARR_SIMD_1(asinh) GPUARR_SIMD_1(acosh)
GPUARR_SIMD_1(atanh) GPUARR_SIMD_1(cbrt) GPUARR_SIMD_2(atan2)
#endif
#undef GPUARR_SIMD_1
#undef GPUARR_SIMD_2
#endif

#include <tgmath.h>

/* Qualifiers and address spaces. */
#define KERNEL static inline
#define GLOBAL
#define SHARED
#define INLINE static inline
#define BARRIER() ((void)0)
/* Exported and never inlined into the generated `gpuarr_program`, which calls each entry point
 * once: a copy there would only double the compiler's work. */
#define GPUARR_EXPORT __attribute__((visibility("default"), noinline))

typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
typedef float f32;
typedef double f64;

/* XLA's float environment (subnormals flushed: MXCSR FTZ and DAZ, 0x8040), set by each entry
 * point around its kernel and restored after, so a launch costs the host no call to set it. */
#if defined(__x86_64__) && defined(__linux__) /* where float_env.py flushes */
#define GPUARR_FLUSH_BEGIN \
  const unsigned gpuarr_csr = __builtin_ia32_stmxcsr(); __builtin_ia32_ldmxcsr(gpuarr_csr | 0x8040u);
#define GPUARR_FLUSH_END __builtin_ia32_ldmxcsr(gpuarr_csr);
/* max and min pick an operand without arithmetic, so DAZ alone leaves a subnormal operand as
 * it is; XLA's maxps/minps return it as a zero of its sign (maximum(-2e-39, -1e-39) is -0). */
#define SELECTED_FLOAT(F, x) (fabs(x) < (F)(sizeof(F) == 4 ? 1.17549435e-38 : 2.2250738585072014e-308) \
                              ? copysign((F)0, x) : (x))
#else /* the NumPy backend keeps subnormals here too (gpuarr/backends/float_env.py) */
#define GPUARR_SUBNORMALS_SURVIVE 1
#define GPUARR_FLUSH_BEGIN
#define GPUARR_FLUSH_END
#endif

/* float32 tanh as XLA's CPU code computes it (its rational approximation, evaluated with fused
 * multiply-adds, clamped to +-7.99881172 and exact for |x| < 0.0004, as in XLA's
 * codegen/intrinsic tanh): bit for bit JAX's on the cpu platform, and a few multiply-adds per
 * lane where the C library's tanhf is a call. fma() is explicit, so -ffp-contract=off leaves it.
 * Written for the vectoriser, with two selects on |x| and nothing else: XLA picks the clamp so
 * that the rational function there is exactly +-1, so past it the result is copysign(1, x)
 * (infinities included) and the operand needs no clamping (a NaN fails both tests and
 * propagates through the polynomials); a subnormal x takes the |x| < 0.0004 arm and is
 * returned as it is, so common.h leaves out its bit test (TANH_KEEPS_TINY_f32). A clamp as
 * nested selects compiled to seven compare-and-blend instructions per vector, and gcc does not
 * turn a vectorised select into maxps / minps. Checked bit for bit against XLA's clamped form
 * over all 2^32 inputs, with and without flushed subnormals, on AVX-512, AVX2 and scalar code. */
INLINE f32 xla_tanh_f32(f32 x) {
  const f32 clamp = 7.99881172180175781f;
  const f32 ax = fabsf(x);
  const f32 x2 = x * x;
  f32 num = -2.76076847742355e-16f;
  num = fmaf(num, x2, 2.00018790482477e-13f);
  num = fmaf(num, x2, -8.60467152213735e-11f);
  num = fmaf(num, x2, 5.12229709037114e-08f);
  num = fmaf(num, x2, 1.48572235717979e-05f);
  num = fmaf(num, x2, 6.37261928875436e-04f);
  num = fmaf(num, x2, 4.89352455891786e-03f);
  f32 den = 1.19825839466702e-06f;
  den = fmaf(den, x2, 1.18534705686654e-04f);
  den = fmaf(den, x2, 2.26843463243900e-03f);
  den = fmaf(den, x2, 4.89352518554385e-03f);
  const f32 poly = (x * num) / den;
  const f32 saturated = ax > clamp ? copysignf(1.0f, x) : poly;
  return ax < 0.0004f ? x : saturated;
}
#define TANH_OF_f32(x, one) xla_tanh_f32(x)
#define TANH_KEEPS_TINY_f32 1

/* The work items this thread runs, set by the entry point before it calls the kernel. */
static _Thread_local i64 gpuarr_begin, gpuarr_end;

/* One thread per block: a block's thread id is 0. */
#define LOCAL_ID() 0
#define LOCAL_SIZE() 1

/* The grid-stride loop of the GPU dialects becomes a walk over this thread's range, clipped to
 * n; `omp simd` (-fopenmp-simd, no OpenMP runtime) lets the compiler run the independent items
 * in vector lanes. The outer one-trip loop only declares the end, as a `for` can declare one
 * type of variable and `omp simd` wants the loop's own test to be `i < end`. */
#define GPUARR_RANGE_END(T, i, n) \
  (T)((i64)(n) < gpuarr_end ? (i64)(n) : gpuarr_end)
#define GRID_STRIDE_LOOP(T, i, n)                                                      \
  for (T i##_end = GPUARR_RANGE_END(T, i, n), i##_once = 1; i##_once; i##_once = 0)     \
    _Pragma("omp simd") for (T i = (T)gpuarr_begin; i < i##_end; ++i)
/* Tiles of this thread's range, `tile` items at a time (the last one shorter): `o0` is a
 * tile's first item and `n` its length. */
#define TILE_LOOP(T, o0, n, size, tile)                                                \
  for (T o0##_end = GPUARR_RANGE_END(T, o0, size), o0 = (T)gpuarr_begin, n = 0;          \
       n = o0##_end - o0 < (tile) ? o0##_end - o0 : (tile), o0 < o0##_end; o0 += (tile))
/* A loop whose iterations are independent: run them in vector lanes. */
#define VECTOR_LOOP _Pragma("omp simd")
/* The block loop: one item per block, in order; a block's body is sequential code. */
#define GROUP_STRIDE_LOOP(T, o, n)                                                     \
  for (T o##_end = GPUARR_RANGE_END(T, o, n), o = (T)gpuarr_begin; o < o##_end; ++o)

/* Non-temporal (streaming) stores of an elementwise kernel's contiguous outputs, chosen by the
 * renderer for launches too large for the last-level cache (render.STREAM_MIN_BYTES): an
 * ordinary store to a line not in the cache first reads it (read for ownership), so a
 * streamed output moves half the bytes. The compiler cannot vectorise a streaming store of
 * one element (gcc has no __builtin_nontemporal_store and ignores `omp simd nontemporal`),
 * so this thread's range is walked in tiles of GPUARR_STREAM_TILE items: inside a tile the
 * kernel's own loop runs unchanged (`gpuarr_begin`/`gpuarr_end` shadowed by the tile's
 * bounds) and writes each streamed output through a pointer of the same name shadowed to
 * point into a local tile, which is then copied out with full-width streaming stores. A
 * tile of 128 float32 items (512 bytes) stays in L1; longer bursts of streaming stores stall
 * the loads. Builtins, not <immintrin.h>, whose parsing costs gcc 0.15 s per program. */
#define GPUARR_STREAM_TILE 128
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#if defined(__AVX512F__)
typedef long long gpuarr_stream_v64 __attribute__((vector_size(64)));
#define GPUARR_STREAM_PUT64(p, v) __builtin_ia32_movntdq512((gpuarr_stream_v64 *)(p), v)
#endif
#if defined(__AVX__)
typedef long long gpuarr_stream_v32 __attribute__((vector_size(32)));
#define GPUARR_STREAM_PUT32(p, v) __builtin_ia32_movntdq256((gpuarr_stream_v32 *)(p), v)
#endif
#if defined(__SSE2__)
typedef long long gpuarr_stream_v16 __attribute__((vector_size(16)));
#define GPUARR_STREAM_PUT16(p, v) __builtin_ia32_movntdq((gpuarr_stream_v16 *)(p), v)
#endif
#elif defined(__clang__) && defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store)
typedef long long gpuarr_stream_v16 __attribute__((vector_size(16)));
#define GPUARR_STREAM_PUT16(p, v) __builtin_nontemporal_store(v, (gpuarr_stream_v16 *)(p))
#endif
#endif
/* Streaming stores are weakly ordered: fence them before the launch's threads are joined. */
#if defined(GPUARR_STREAM_PUT16) && defined(__x86_64__)
#define STREAM_FENCE() __builtin_ia32_sfence()
#else
#define STREAM_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif
/* Stream whole W-byte vectors of the tile while `d` is aligned to W (after a wider loop it
 * still is, with fewer than the wider width's bytes left). */
#define GPUARR_STREAM_RUN(W)                                                             \
  if (((__UINTPTR_TYPE__)d & (W - 1)) == 0)                                              \
    for (; bytes >= W; bytes -= W, d += W, s += W) {                                     \
      gpuarr_stream_v##W v;                                                              \
      memcpy(&v, s, W);                                                                  \
      GPUARR_STREAM_PUT##W(d, v);                                                        \
    }
/* Copy `bytes` of a tile to `dst`: whole vectors streamed, as wide as the host's vectors and
 * `dst`'s alignment allow (the native backend allocates large outputs 64-byte aligned, NumPy
 * 32 bytes past a 64-byte boundary; tiles start on multiples of GPUARR_STREAM_TILE items, so
 * every tile of an output has its first tile's alignment), the rest (a range's last partial vector, or a buffer aligned to
 * less than 16 bytes) with ordinary stores. */
INLINE void gpuarr_stream_copy(void *dst, const void *tile, i64 bytes) {
  char *d = (char *)dst;
  const char *s = (const char *)tile;
#if defined(GPUARR_STREAM_PUT64)
  GPUARR_STREAM_RUN(64)
#endif
#if defined(GPUARR_STREAM_PUT32)
  GPUARR_STREAM_RUN(32)
#endif
#if defined(GPUARR_STREAM_PUT16)
  GPUARR_STREAM_RUN(16)
#endif
  memcpy(d, s, (size_t)bytes);
}
/* The tiles of this thread's range, clipped to n, each a block in which `gpuarr_begin` and
 * `gpuarr_end` are the tile's bounds. */
#define STREAM_TILES(n)                                                                  \
  for (i64 gpuarr_t0 = gpuarr_begin, gpuarr_tend = (i64)(n) < gpuarr_end ? (i64)(n) : gpuarr_end; \
       gpuarr_t0 < gpuarr_tend; gpuarr_t0 += GPUARR_STREAM_TILE)
#define STREAM_RANGE()                                                                   \
  const i64 gpuarr_begin = gpuarr_t0;                                                    \
  const i64 gpuarr_end = gpuarr_tend - gpuarr_t0 < GPUARR_STREAM_TILE ? gpuarr_tend      \
                                                                      : gpuarr_t0 + GPUARR_STREAM_TILE;
/* Output `a` of element type T written into a tile: `a` itself is shadowed by a pointer that
 * places the tile's items at their own indices (formed through an integer, as it points
 * before the tile), and a##_dst keeps the real buffer. */
#define STREAM_TILE(T, a)                                                                \
  T a##_tile[GPUARR_STREAM_TILE] __attribute__((aligned(64)));                           \
  T *const a##_dst = a;                                                                  \
  T *const a = (T *)((__UINTPTR_TYPE__)a##_tile - (__UINTPTR_TYPE__)(gpuarr_begin * (i64)sizeof(T)));
#define STREAM_FLUSH(a)                                                                  \
  gpuarr_stream_copy(a##_dst + gpuarr_begin, a##_tile,                                   \
                     (gpuarr_end - gpuarr_begin) * (i64)sizeof(a##_tile[0]));

/* No warp shuffles; the shared-memory tree of a one-thread block is empty. */
#define HAS_WARP_SHUFFLE 0
#define WARP_SIZE 1
#define TREE_MIN_STRIDE 1

/* 4-wide vectors, for templates that move contiguous 32-bit operands four at a time (the
 * renderer keeps this dialect on the scalar loop, which the compiler vectorises itself). */
typedef struct { f32 x, y, z, w; } f32x4;
typedef struct { i32 x, y, z, w; } i32x4;
typedef struct { u32 x, y, z, w; } u32x4;
#define MAKE_f32x4(a, b, c, d) ((f32x4){(a), (b), (c), (d)})
#define MAKE_i32x4(a, b, c, d) ((i32x4){(a), (b), (c), (d)})
#define MAKE_u32x4(a, b, c, d) ((u32x4){(a), (b), (c), (d)})
/* complex64: real in .x, imaginary in .y, laid out as NumPy's complex64. */
typedef struct { f32 x, y; } c64;
#define MAKE_c64(re, im) ((c64){(re), (im)})

#define LOAD4(T4, p, q) (((const GLOBAL T4 *)(p))[q])
#define STORE4(T4, p, q, v) (((GLOBAL T4 *)(p))[q] = (v))

/* Bit casts (memcpy compiles to a register move). */
INLINE u32 gpuarr_bits_f32(f32 x) { u32 u; memcpy(&u, &x, 4); return u; }
INLINE f32 gpuarr_f32_bits(u32 u) { f32 x; memcpy(&x, &u, 4); return x; }
INLINE u64 gpuarr_bits_f64(f64 x) { u64 u; memcpy(&u, &x, 8); return u; }
INLINE f64 gpuarr_f64_bits(u64 u) { f64 x; memcpy(&x, &u, 8); return x; }
#define BITS_F32(x) gpuarr_bits_f32(x)
#define F32_BITS(x) gpuarr_f32_bits((u32)(x))
#define BITS_F64(x) gpuarr_bits_f64(x)
#define F64_BITS(x) gpuarr_f64_bits((u64)(x))

/* float32 exp inline, where the host has fused multiply-adds: x = n ln2 + r with |r| <= ln2/2
 * (n by the round-to-nearest shift trick, ln2 in two parts), exp(r) by a degree-6 polynomial
 * (the minimax coefficients of Arm's optimized-routines expf_1u, 0.37 ulp plus rounding), the
 * result scaled by 2^n built from n's bits; |n| > 126 splits the scale in two factors so that
 * overflow gives inf and underflow 0 (or a subnormal where subnormals survive), and NaN
 * propagates through the polynomial. Within 1 ulp of the correctly rounded result for every
 * float32 input with a normal result (checked over all 2^32; libmvec's expf promises 4). A
 * vectorised loop computes it in registers: a libmvec call spilled softmax's 64 row lanes
 * around every call. Written as selects, so both arms are computed and the loop vectorises. */
#if defined(__FMA__) || defined(__aarch64__)
INLINE f32 gpuarr_exp_f32(f32 x) {
  const f32 shift = 0x1.8p23f;
  const f32 z = fmaf(x, 0x1.715476p+0f, shift);
  const f32 n = z - shift;
  f32 r = fmaf(n, -0x1.62e4p-1f, x);
  r = fmaf(n, -0x1.7f7d1cp-20f, r);
  const u32 e = gpuarr_bits_f32(z) << 23;
  f32 p = fmaf(0x1.6a6000p-10f, r, 0x1.12718ep-7f);
  p = fmaf(p, r, 0x1.555af0p-5f);
  p = fmaf(p, r, 0x1.555430p-3f);
  p = fmaf(p, r, 0x1.fffff4p-2f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  const f32 an = fabsf(n);
  const u32 b = n <= 0.0f ? 0x83000000u : 0u;
  const f32 s1 = gpuarr_f32_bits(0x7f000000u + b);
  const f32 far = an > 192.0f ? s1 * s1 : (p * s1) * gpuarr_f32_bits(e - b);
  return an > 126.0f ? far : gpuarr_f32_bits(e + 0x3f800000u) * p;
}
#define EXP_OF_f32(x) gpuarr_exp_f32(x)
#endif

/* Bit counts; a count of leading zeros of 0 is the width, as CUDA's __clz. */
INLINE i32 gpuarr_clz32(u32 x) { return x ? __builtin_clz(x) : 32; }
INLINE i32 gpuarr_clz64(u64 x) { return x ? __builtin_clzll(x) : 64; }
#define MATH_POPCOUNT32(x) __builtin_popcount((u32)(x))
#define MATH_POPCOUNT64(x) __builtin_popcountll((u64)(x))
#define MATH_CLZ32(x) gpuarr_clz32((u32)(x))
#define MATH_CLZ64(x) gpuarr_clz64((u64)(x))
#define MATH_ISNAN(x) (isnan(x) != 0)
#define MATH_ISINF(x) (isinf(x) != 0)
#define MATH_ISFINITE(x) (isfinite(x) != 0)
#define MATH_SIGNBIT(x) (signbit(x) != 0)

/* C has no rsqrt: 1 / sqrt in the operand's type, as the NumPy backend computes it. */
#define rsqrt(x) ((__typeof__(x))1 / sqrt(x))

/* Atomics (GCC/Clang builtins; relaxed: launches are ordered by the host joining its threads). */
#define GPUARR_FETCH_ADD(T, p, v) ((void)__atomic_fetch_add((T *)(p), (T)(v), __ATOMIC_RELAXED))
#define ATOMIC_ADD_I32(p, v) GPUARR_FETCH_ADD(i32, p, v)
#define ATOMIC_ADD_U32(p, v) GPUARR_FETCH_ADD(u32, p, v)
#define ATOMIC_ADD_I64(p, v) GPUARR_FETCH_ADD(i64, p, v)
#define ATOMIC_ADD_U64(p, v) GPUARR_FETCH_ADD(u64, p, v)
#define ATOMIC_ADD_I8(p, v) GPUARR_FETCH_ADD(i8, p, v)
#define ATOMIC_ADD_U8(p, v) GPUARR_FETCH_ADD(u8, p, v)
#define ATOMIC_ADD_I16(p, v) GPUARR_FETCH_ADD(i16, p, v)
#define ATOMIC_ADD_U16(p, v) GPUARR_FETCH_ADD(u16, p, v)

INLINE u32 gpuarr_cas_u32(u32 *p, u32 cmp, u32 v) {
  __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cmp; /* the old value: unchanged on success, the current word on failure */
}
INLINE u64 gpuarr_cas_u64(u64 *p, u64 cmp, u64 v) {
  __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cmp;
}
#define ATOMIC_CAS_U32(p, cmp, v) gpuarr_cas_u32((u32 *)(p), (u32)(cmp), (u32)(v))
#define ATOMIC_CAS_U64(p, cmp, v) gpuarr_cas_u64((u64 *)(p), (u64)(cmp), (u64)(v))

/* Float adds and signed maxima are compare-and-swap loops, as on OpenCL. */
INLINE void gpuarr_atomic_add_f32(f32 *p, f32 v) {
  u32 old = __atomic_load_n((u32 *)p, __ATOMIC_RELAXED), assumed;
  do {
    assumed = old;
    old = gpuarr_cas_u32((u32 *)p, assumed, gpuarr_bits_f32(gpuarr_f32_bits(assumed) + v));
  } while (old != assumed);
}
INLINE void gpuarr_atomic_add_f64(f64 *p, f64 v) {
  u64 old = __atomic_load_n((u64 *)p, __ATOMIC_RELAXED), assumed;
  do {
    assumed = old;
    old = gpuarr_cas_u64((u64 *)p, assumed, gpuarr_bits_f64(gpuarr_f64_bits(assumed) + v));
  } while (old != assumed);
}
INLINE void gpuarr_atomic_max_i32(i32 *p, i32 v) {
  i32 old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED)) {
  }
}
INLINE void gpuarr_atomic_max_i64(i64 *p, i64 v) {
  i64 old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED)) {
  }
}
#define ATOMIC_ADD_F32(p, v) gpuarr_atomic_add_f32((f32 *)(p), (f32)(v))
#define ATOMIC_ADD_F64(p, v) gpuarr_atomic_add_f64((f64 *)(p), (f64)(v))
#define ATOMIC_MAX_I32(p, v) gpuarr_atomic_max_i32((i32 *)(p), (i32)(v))
#define ATOMIC_MAX_I64(p, v) gpuarr_atomic_max_i64((i64 *)(p), (i64)(v))

/* Special float values. */
#define INF_F32 __builtin_inff()
#define NAN_F32 __builtin_nanf("")
#define INF_F64 __builtin_inf()
#define NAN_F64 __builtin_nan("")
