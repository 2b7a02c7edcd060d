/* half.h: float16 and bfloat16 as storage types. Kernels keep these values in float32
 * registers: loads widen (exact), each operation rounds its result back to 16 bits with
 * round-to-nearest-even (as NumPy and ml_dtypes do per operation), and stores narrow. Written
 * with bit operations only, so the same text runs under NVRTC (no cuda_fp16.h) and OpenCL C
 * (no cl_khr_fp16).
 */
typedef u16 f16;
typedef u16 bf16;

INLINE f32 f16_to_f32(f16 h) {
  const u32 sign = ((u32)h & 0x8000u) << 16;
  const u32 exponent = ((u32)h >> 10) & 0x1fu;
  const u32 mantissa = (u32)h & 0x3ffu;
  if (exponent == 0x1fu) return F32_BITS(sign | 0x7f800000u | (mantissa << 13)); /* inf, NaN */
  if (exponent != 0u) return F32_BITS(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  /* zero or subnormal: mantissa * 2^-24, exact in float32 */
  return F32_BITS(sign | BITS_F32((f32)mantissa * 5.9604644775390625e-8f));
}

INLINE f16 f32_to_f16(f32 f) {
  const u32 x = BITS_F32(f);
  const u32 sign = (x >> 16) & 0x8000u;
  const u32 ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (f16)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* quiet NaN */
  if (ax >= 0x477ff000u) return (f16)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
  if (ax >= 0x38800000u) {                              /* normal: rebias, round 13 bits */
    const u32 rounded = ax + 0xfffu + ((ax >> 13) & 1u);
    return (f16)(sign | ((rounded - 0x38000000u) >> 13));
  }
  /* subnormal half: round the 24-bit significand to units of 2^-24 */
  const u32 shift = 126u - (ax >> 23);
  if (shift > 24u) return (f16)sign;
  const u32 significand = (ax & 0x7fffffu) | 0x800000u;
  const u32 halfway = 1u << (shift - 1u);
  const u32 rest = significand & ((1u << shift) - 1u);
  u32 m = significand >> shift;
  if (rest > halfway || (rest == halfway && (m & 1u))) m += 1u;
  return (f16)(sign | m);
}

INLINE f32 bf16_to_f32(bf16 h) { return F32_BITS((u32)h << 16); }

INLINE bf16 f32_to_bf16(f32 f) {
  const u32 x = BITS_F32(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (bf16)((x >> 16) | 0x40u); /* quiet NaN */
  return (bf16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* The float32 value rounded to the nearest 16-bit float: one operation's result. */
INLINE f32 round_f16(f32 x) { return f16_to_f32(f32_to_f16(x)); }
INLINE f32 round_bf16(f32 x) { return bf16_to_f32(f32_to_bf16(x)); }

/* XLA's NextAfter on a 16-bit float's bits: stepping the float32 value and rounding back would
 * return x itself. hx, hy are the operands' bits, neither of them NaN. */
INLINE u32 next_bits16(u32 hx, u32 hy) {
  if (hx == hy || ((hx | hy) & 0x7fffu) == 0u) return hy; /* equal, or +0 and -0: y */
  if ((hx & 0x7fffu) == 0u) return (hy & 0x8000u) | 1u;  /* the smallest subnormal towards y */
  const int away = (hx & 0x8000u) == (hy & 0x8000u) && (hy & 0x7fffu) > (hx & 0x7fffu);
  return away ? hx + 1u : hx - 1u;                        /* magnitude up, or towards zero */
}
INLINE f32 nextafter_f16(f32 x, f32 y) {
  const u32 hx = (u32)f32_to_f16(x), hy = (u32)f32_to_f16(y);
  if ((hx & 0x7fffu) > 0x7c00u || (hy & 0x7fffu) > 0x7c00u) return F32_BITS(0x7fc00000u);
  return f16_to_f32((f16)next_bits16(hx, hy));
}
INLINE f32 nextafter_bf16(f32 x, f32 y) {
  const u32 hx = (u32)f32_to_bf16(x), hy = (u32)f32_to_bf16(y);
  if ((hx & 0x7fffu) > 0x7f80u || (hy & 0x7fffu) > 0x7f80u) return F32_BITS(0x7fc00000u);
  return bf16_to_f32((bf16)next_bits16(hx, hy));
}
