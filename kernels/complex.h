/* complex.h: complex64 arithmetic on the dialects' c64 (a float2). CUDA has no operators on
 * float2, so every operation is a function; each follows NumPy's complex64 loops (division
 * by Smith's method) so results agree with the NumPy backend.
 */
INLINE c64 c64_add(c64 a, c64 b) { return MAKE_c64(a.x + b.x, a.y + b.y); }
INLINE c64 c64_sub(c64 a, c64 b) { return MAKE_c64(a.x - b.x, a.y - b.y); }
INLINE c64 c64_neg(c64 a) { return MAKE_c64(-a.x, -a.y); }
INLINE c64 c64_conj(c64 a) { return MAKE_c64(a.x, -a.y); }
INLINE c64 c64_mul(c64 a, c64 b) { return MAKE_c64(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
INLINE u8 c64_eq(c64 a, c64 b) { return (u8)(a.x == b.x && a.y == b.y); }
INLINE u8 c64_ne(c64 a, c64 b) { return (u8)(a.x != b.x || a.y != b.y); }

INLINE c64 c64_div(c64 a, c64 b) {
  const f32 br = fabs(b.x), bi = fabs(b.y);
  if (br >= bi) {
    if (br == 0.0f && bi == 0.0f) return MAKE_c64(a.x / br, a.y / bi);
    const f32 rat = b.y / b.x;
    const f32 scl = 1.0f / (b.x + b.y * rat);
    return MAKE_c64((a.x + a.y * rat) * scl, (a.y - a.x * rat) * scl);
  }
  const f32 rat = b.x / b.y;
  const f32 scl = 1.0f / (b.y + b.x * rat);
  return MAKE_c64((a.x * rat + a.y) * scl, (a.y * rat - a.x) * scl);
}

INLINE c64 c64_exp(c64 a) {
  const f32 m = exp(a.x);
  return a.y == 0.0f ? MAKE_c64(m, a.y) : MAKE_c64(m * cos(a.y), m * sin(a.y));
}
