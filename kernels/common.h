/* common.h: helpers shared by every template, written once against the dialect macros.
 *
 * Semantics follow XLA, not C, wherever the two differ:
 *  - float -> int conversion saturates: NaN -> 0, values below/above the int range clamp
 *    (jnp.arange(254., 258.).astype('uint8') == [254, 255, 255, 255]);
 *  - integer x / 0 == -1 (all bits set), x % 0 == x, INT_MIN / -1 == INT_MIN, INT_MIN % -1 == 0;
 *  - shifts by >= the bit width give 0 (arithmetic right shift: the sign fill);
 *  - max/min of floats propagate NaN.
 * Subnormals: OpenCL programs are built with -cl-denorms-are-zero, so float32 and float64
 * subnormals flush to zero as on XLA's CPU and gpuarr's host paths (backends/float_env.py);
 * CuPy builds with -ftz=true, which flushes float32 only (docs/arithmetic.md).
 */

/* ---- saturating float -> int conversions ------------------------------------------------ */
#define GPUARR_DEFINE_SAT(F, T, LO, HI, LO_F, HI_EXCL_F)                                       \
  INLINE T sat_##F##_##T(F x) {                                                                \
    return x != x ? (T)0 : x <= (F)(LO_F) ? (T)(LO) : x >= (F)(HI_EXCL_F) ? (T)(HI) : (T)x;   \
  }
#define GPUARR_DEFINE_SAT_ALL(F)                                                                \
  GPUARR_DEFINE_SAT(F, i8, -128, 127, -128.0, 128.0)                                           \
  GPUARR_DEFINE_SAT(F, u8, 0, 255, 0.0, 256.0)                                                 \
  GPUARR_DEFINE_SAT(F, i16, -32768, 32767, -32768.0, 32768.0)                                  \
  GPUARR_DEFINE_SAT(F, u16, 0, 65535, 0.0, 65536.0)                                            \
  GPUARR_DEFINE_SAT(F, i32, (-2147483647 - 1), 2147483647, -2147483648.0, 2147483648.0)        \
  GPUARR_DEFINE_SAT(F, u32, 0u, 4294967295u, 0.0, 4294967296.0)                                \
  GPUARR_DEFINE_SAT(F, i64, (-9223372036854775807LL - 1), 9223372036854775807LL,               \
                    -9223372036854775808.0, 9223372036854775808.0)                             \
  GPUARR_DEFINE_SAT(F, u64, 0ull, 18446744073709551615ull, 0.0, 18446744073709551616.0)
GPUARR_DEFINE_SAT_ALL(f32)
GPUARR_DEFINE_SAT_ALL(f64)

/* ---- integer division, remainder and shifts with XLA's answers ---------------------------- */
/* add/sub/mul/neg_wrap compute in the unsigned type WT (32 bits at least, so that 8- and 16-bit
 * operands are not promoted to a signed int): signed overflow is undefined behaviour in OpenCL C
 * and CUDA, which have no -fwrapv, and the compilers use it (`a + b > 0` became `a > -b`). */
#define GPUARR_DEFINE_INT_OPS(T, UT, WT, BITS, MIN)                                             \
  INLINE T add_wrap_##T(T x, T y) { return (T)((WT)x + (WT)y); }                               \
  INLINE T sub_wrap_##T(T x, T y) { return (T)((WT)x - (WT)y); }                               \
  INLINE T mul_wrap_##T(T x, T y) { return (T)((WT)x * (WT)y); }                               \
  INLINE T neg_wrap_##T(T x) { return (T)((WT)0 - (WT)x); }                                    \
  INLINE T div_##T(T x, T y) {                                                                 \
    return y == 0 ? (T)-1 : ((T)(MIN) != 0 && x == (T)(MIN) && y == (T)-1) ? x : (T)(x / y);   \
  }                                                                                            \
  INLINE T rem_##T(T x, T y) {                                                                 \
    return y == 0 ? x : ((T)(MIN) != 0 && x == (T)(MIN) && y == (T)-1) ? (T)0 : (T)(x % y);    \
  }                                                                                            \
  INLINE T shl_##T(T x, T s) { return (UT)s >= (UT)(BITS) ? (T)0 : (T)((UT)x << (UT)s); }     \
  INLINE T shr_logical_##T(T x, T s) { return (UT)s >= (UT)(BITS) ? (T)0 : (T)((UT)x >> (UT)s); } \
  INLINE T shr_arith_##T(T x, T s) {                                                           \
    return (UT)s >= (UT)(BITS) ? (x < (T)0 ? (T)-1 : (T)0) : (T)(x >> s);                      \
  }
GPUARR_DEFINE_INT_OPS(i8, u8, u32, 8, -128)
GPUARR_DEFINE_INT_OPS(i16, u16, u32, 16, -32768)
GPUARR_DEFINE_INT_OPS(i32, u32, u32, 32, (-2147483647 - 1))
GPUARR_DEFINE_INT_OPS(i64, u64, u64, 64, (-9223372036854775807LL - 1))
GPUARR_DEFINE_INT_OPS(u8, u8, u32, 8, 0)
GPUARR_DEFINE_INT_OPS(u16, u16, u32, 16, 0)
GPUARR_DEFINE_INT_OPS(u32, u32, u32, 32, 0)
GPUARR_DEFINE_INT_OPS(u64, u64, u64, 64, 0)

/* ---- float helpers ----------------------------------------------------------------------- */
/* tanh saturates to +-1 past TANH_ONE (XLA clamps float32 there; float64 where it rounds to +-1);
 * PoCL's tanh returns 1 - ulp there, which turns gelu's 1 + tanh(-large) into a tiny nonzero. */
/* SELECTED_FLOAT: the operand max/min return, as the dialect's float environment leaves it
 * (dialect_c.h flushes a subnormal one as XLA's CPU code does; the identity elsewhere).
 * log reads its operand through it too: glibc's vector logf (libmvec, dialect_c.h) decodes a
 * subnormal's bits itself under DAZ (log(1e-39) = -103.97, NaN for -1e-39) where XLA reads
 * it as zero (-inf), as the scalar logf does. */
#ifndef SELECTED_FLOAT
#define SELECTED_FLOAT(F, x) (x)
#endif
#define GPUARR_DEFINE_FLOAT_OPS(F, TANH_ONE)                                                    \
  INLINE F max_##F(F a, F b) { return SELECTED_FLOAT(F, (a != a || a > b) ? a : b); }          \
  INLINE F min_##F(F a, F b) { return SELECTED_FLOAT(F, (a != a || a < b) ? a : b); }          \
  INLINE F sign_##F(F x) {                                                                     \
    return x != x ? x : x > (F)0 ? (F)1 : x < (F)0 ? (F)-1 : copysign((F)0, x);                 \
  }                                                                                            \
  INLINE F round_away_##F(F x) { return round(x); }                                            \
  INLINE F round_even_##F(F x) { return rint(x); }                                             \
  INLINE F exp_##F(F x) { return EXP_OF_##F(x); }                                            \
  INLINE F logistic_##F(F x) { return (F)1 / ((F)1 + exp_##F(-x)); }                        \
  INLINE F tanh_clamped_##F(F x) { return TANH_OF_##F(x, (F)(TANH_ONE)); }                        \
  INLINE F log_##F(F x) { return log(SELECTED_FLOAT(F, x)); }
/* Subnormal operands (zero exponent bits; zeros give f(+-0) either way) of XLA's expansions,
 * as gpuarr/lax/subnormal_operands.py gives them on the host: sin, tan, atan and expm1 (and
 * float32 tanh) return x, asin, sinh, asinh, atanh and log1p (and float64 tanh and cbrt) a zero
 * of x's sign, float32 cbrt -5.5951735e-16 and acos pi/2 (one ulp low for a negative one). A
 * device's math library (glibc's vector functions, PoCL's, CUDA's) reads them as zero or
 * computes with them. Bit tests, so every dialect's float environment gives the same. */
#ifdef GPUARR_SUBNORMALS_SURVIVE /* hosts without XLA's flushed environment (float_env.py) */
#define TINY_f32(x) 0
#define TINY_f64(x) 0
#else
#define TINY_f32(x) ((BITS_F32(x) & 0x7f800000u) == 0u)
#define TINY_f64(x) ((BITS_F64(x) & 0x7ff0000000000000ull) == 0ull)
#endif
#define NONZERO_f32(x) ((BITS_F32(x) << 1) != 0u)
#define NONZERO_f64(x) ((BITS_F64(x) << 1) != 0ull)
#define GPUARR_DEFINE_TINY_OPS(F, TANH_TINY, CBRT_TINY, ACOS_NEGATIVE, ACOS_POSITIVE)              \
  INLINE F sin_##F(F x) { return TINY_##F(x) ? x : sin(x); }                                     \
  INLINE F tan_##F(F x) { return TINY_##F(x) ? x : tan(x); }                                     \
  INLINE F atan_##F(F x) { return TINY_##F(x) ? x : atan(x); }                                   \
  INLINE F expm1_##F(F x) { return TINY_##F(x) ? x : expm1(x); }                                 \
  INLINE F asin_##F(F x) { return TINY_##F(x) ? copysign((F)0, x) : asin(x); }                   \
  INLINE F sinh_##F(F x) { return TINY_##F(x) ? copysign((F)0, x) : sinh(x); }                   \
  INLINE F asinh_##F(F x) { return TINY_##F(x) ? copysign((F)0, x) : asinh(x); }                 \
  INLINE F atanh_##F(F x) { return TINY_##F(x) ? copysign((F)0, x) : atanh(x); }                 \
  INLINE F log1p_##F(F x) { return TINY_##F(x) ? copysign((F)0, x) : log1p(x); }                 \
  INLINE F tanh_##F(F x) {                                                                       \
    return !TANH_KEEPS_TINY_##F && TINY_##F(x) ? (TANH_TINY) : tanh_clamped_##F(x);              \
  }                                                                                              \
  INLINE F cbrt_##F(F x) { return TINY_##F(x) && NONZERO_##F(x) ? (CBRT_TINY) : cbrt(x); }       \
  INLINE F tiny_zero_##F(F x, F y) { return TINY_##F(x) ? copysign((F)0, x) : y; }               \
  INLINE F acos_##F(F x) {                                                                       \
    return TINY_##F(x) && NONZERO_##F(x) ? (MATH_SIGNBIT(x) ? (ACOS_NEGATIVE) : (ACOS_POSITIVE))      \
                                          : acos(x);                                             \
  }
/* TANH_KEEPS_TINY_F: the dialect's tanh already returns a subnormal operand as TANH_TINY does
 * (dialect_c.h's float32 one returns x for |x| < 0.0004), so the bit test is left out. */
#ifndef TANH_KEEPS_TINY_f32
#define TANH_KEEPS_TINY_f32 0
#endif
#define TANH_KEEPS_TINY_f64 0
#define TANH_CLAMPED(F, x, one) (fabs(x) > (one) ? copysign((F)1, x) : tanh(x))
#ifndef TANH_OF_f32 /* dialect_c.h computes XLA CPU's own float32 tanh instead */
#define TANH_OF_f32(x, one) TANH_CLAMPED(f32, x, one)
#endif
#define TANH_OF_f64(x, one) TANH_CLAMPED(f64, x, one)
#ifndef EXP_OF_f32 /* dialect_c.h inlines a polynomial where the host has fused multiply-adds */
#define EXP_OF_f32(x) exp(x)
#endif
#define EXP_OF_f64(x) exp(x)
GPUARR_DEFINE_FLOAT_OPS(f32, 7.99881172180175781)
GPUARR_DEFINE_FLOAT_OPS(f64, 19.1)
/* float32 atan2 with a subnormal operand, as XLA's own atan2f (fdlibm's) computes it flushed:
 * its zero and infinity tests read bits, its quotient y / x reads a subnormal as zero
 * (gpuarr/lax/subnormal_operands.py, follow_xla_atan2). */
INLINE f32 atan2_f32(f32 y, f32 x) {
#ifdef GPUARR_SUBNORMALS_SURVIVE
  return atan2(y, x);
#else
  const u32 by = BITS_F32(y) & 0x7fffffffu, bx = BITS_F32(x) & 0x7fffffffu;
  const int ysub = by != 0u && by < 0x800000u, xsub = bx != 0u && bx < 0x800000u;
  if (!(ysub || xsub) || by > 0x7f800000u || bx > 0x7f800000u || by == 0u) return atan2(y, x);
  if (BITS_F32(x) == 0x3f800000u) return y;
  if (bx == 0u || by == 0x7f800000u) return copysign(1.57079637f, y);
  if (bx == 0x7f800000u) return MATH_SIGNBIT(x) ? copysign(3.14159274f, y) : copysign(0.0f, y);
  const f32 z = ysub && xsub ? NAN_F32 : ysub ? 0.0f : 1.57079637f, pi_lo = -8.7422776573e-08f;
  return MATH_SIGNBIT(x) ? (MATH_SIGNBIT(y) ? (z - pi_lo) - 3.14159274f : 3.14159274f - (z - pi_lo))
                    : (MATH_SIGNBIT(y) ? -z : z);
#endif
}
INLINE f64 atan2_f64(f64 y, f64 x) { return atan2(y, x); }
GPUARR_DEFINE_TINY_OPS(f32, x, -5.5951735e-16f, 1.57079625f, 1.57079637f)
GPUARR_DEFINE_TINY_OPS(f64, copysign(0.0, x), copysign(0.0, x), 1.5707963267948966, 1.5707963267948966)

/* ---- threefry-2x32 (20 rounds), the hash under gpuarr.random ------------------------------- */
INLINE u32 rotl32(u32 x, u32 r) { return (x << r) | (x >> (32u - r)); }

INLINE void threefry2x32(u32 k0, u32 k1, u32 x0, u32 x1, u32 *out0, u32 *out1) {
  const u32 k2 = k0 ^ k1 ^ 0x1BD11BDAu;
  const u32 rot[8] = {13u, 15u, 26u, 6u, 17u, 29u, 16u, 24u};
  const u32 ks[3] = {k0, k1, k2};
  x0 += k0;
  x1 += k1;
  for (u32 block = 0; block < 5u; ++block) {
    for (u32 r = 0; r < 4u; ++r) {
      x0 += x1;
      x1 = rotl32(x1, rot[(block % 2u) * 4u + r]);
      x1 ^= x0;
    }
    x0 += ks[(block + 1u) % 3u];
    x1 += ks[(block + 2u) % 3u] + block + 1u;
  }
  *out0 = x0;
  *out1 = x1;
}

/* ---- index helpers ----------------------------------------------------------------------- */
/* A source coordinate clamped into [0, hi]: padded lanes still read a valid element, which a
 * mask then discards. */
INLINE i64 clamp_index(i64 v, i64 hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* ---- narrow atomics ---------------------------------------------------------------------- */
/* Atomic add on an 8- or 16-bit element (`mask` 0xff or 0xffff): neither dialect has one, so a
 * compare-and-swap loop replaces the aligned 32-bit word holding the element, adding in its
 * lane only (little-endian: byte k of the word is lane k). The sum wraps around, as XLA's.
 * The word never leaves the element's aligned 16 bytes (buffers are 16-byte aligned), and its
 * other lanes are written back unchanged. */
INLINE void atomic_add_narrow(GLOBAL u8 *p, u32 v, u32 mask) {
  const u32 byte = (u32)((size_t)p & 3);
  GLOBAL u32 *word = (GLOBAL u32 *)(p - byte);
  const u32 lane = mask << (byte * 8);
  u32 old = *word, assumed;
  do {
    assumed = old;
    const u32 sum = ((assumed & lane) + (v << (byte * 8))) & lane;
    old = ATOMIC_CAS_U32(word, assumed, (assumed & ~lane) | sum);
  } while (old != assumed);
}
