/* special.h: special functions as device functions, so they fuse like any elementwise op.
 *
 *  - erf_inv: Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), the
 *    single-precision polynomial XLA uses for float32; float64 starts from it (evaluated in
 *    double) and takes three Halley steps on erf (erfc in the tails, where 1 - |y| is exact),
 *    as the NumPy backend refines its own start.
 *  - digamma: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 12, then the asymptotic
 *    series with Bernoulli numbers B2..B20; reflection below 1/2; NaN at the poles. The same
 *    steps as gpuarr/lax/special.py, in double.
 *  - polygamma(m, x) for m >= 1: the recurrence psi^(m)(x) = psi^(m)(x + 1) + (-1)^(m+1) m!
 *    / x^(m+1) up to x >= 12, then the asymptotic series; m = 0 is digamma; non-integer or
 *    negative m gives NaN, a pole inf (odd m) or NaN (even m). Also as the NumPy backend does.
 *  - logaddexp: log(exp(a) + exp(b)) without overflow (cumlogsumexp's combining step).
 */

/* Giles' single-precision polynomial, evaluated in F (float64 uses it as a starting point). */
#define GPUARR_DEFINE_ERF_INV_POLY(F)                                                           \
  INLINE F erf_inv_poly_##F(F x) {                                                             \
    F w = -log(((F)1 - x) * ((F)1 + x));                                                       \
    F p;                                                                                       \
    if (w < (F)5) {                                                                            \
      w = w - (F)2.5;                                                                          \
      p = (F)2.81022636e-08;                                                                   \
      p = (F)3.43273939e-07 + p * w;                                                           \
      p = (F)-3.5233877e-06 + p * w;                                                           \
      p = (F)-4.39150654e-06 + p * w;                                                          \
      p = (F)0.00021858087 + p * w;                                                            \
      p = (F)-0.00125372503 + p * w;                                                           \
      p = (F)-0.00417768164 + p * w;                                                           \
      p = (F)0.246640727 + p * w;                                                              \
      p = (F)1.50140941 + p * w;                                                               \
    } else {                                                                                   \
      w = sqrt(w) - (F)3;                                                                      \
      p = (F)-0.000200214257;                                                                  \
      p = (F)0.000100950558 + p * w;                                                           \
      p = (F)0.00134934322 + p * w;                                                            \
      p = (F)-0.00367342844 + p * w;                                                           \
      p = (F)0.00573950773 + p * w;                                                            \
      p = (F)-0.0076224613 + p * w;                                                            \
      p = (F)0.00943887047 + p * w;                                                            \
      p = (F)1.00167406 + p * w;                                                               \
      p = (F)2.83297682 + p * w;                                                               \
    }                                                                                          \
    return p * x;                                                                              \
  }
GPUARR_DEFINE_ERF_INV_POLY(f32)
GPUARR_DEFINE_ERF_INV_POLY(f64)

INLINE f32 erf_inv_f32(f32 x) { return fabs(x) == 1.0f ? x * INF_F32 : erf_inv_poly_f32(x); }

INLINE f64 erf_inv_f64(f64 y) {
  const f64 ay = fabs(y);
  if (!(ay < 1.0)) return ay == 1.0 ? y * INF_F64 : NAN_F64;
  f64 ax = fabs(erf_inv_poly_f64(y));
  for (int step = 0; step < 3; ++step) {
    const f64 deriv = 1.1283791670955126 * exp(-ax * ax); /* 2 / sqrt(pi) */
    const f64 f = ay > 0.5 ? (1.0 - ay) - erfc(ax) : erf(ax) - ay;
    const f64 u = f / deriv;
    ax = ax - u / (1.0 + ax * u);
  }
  return y < 0.0 ? -ax : ax;
}

INLINE f64 digamma_f64(f64 x) {
  const int reflect = x < 0.5;
  f64 z = reflect ? 1.0 - x : x;
  f64 acc = 0.0;
  for (int k = 0; k < 12; ++k) {
    if (z < 12.0) {
      acc -= 1.0 / z;
      z += 1.0;
    }
  }
  const f64 b2k[10] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730,
                       7.0 / 6, -3617.0 / 510, 43867.0 / 798, -174611.0 / 330};
  const f64 inv2 = 1.0 / (z * z);
  f64 series = 0.0, power = inv2;
  for (int k = 1; k <= 10; ++k) {
    series += b2k[k - 1] / (2 * k) * power;
    power *= inv2;
  }
  const f64 out = acc + log(z) - 0.5 / z - series;
  if (!reflect) return out;
  const f64 frac = x - floor(x);
  if (frac == 0.0) return NAN_F64;
  return out - 3.141592653589793 / tan(3.141592653589793 * frac);
}

INLINE f64 polygamma_f64(f64 m, f64 x) {
  if (!(m >= 0.0) || m != floor(m)) return NAN_F64;
  if (m == 0.0) return digamma_f64(x);
  const int odd = fmod(m, 2.0) == 1.0;
  if (x <= 0.0 && x == floor(x)) return odd ? INF_F64 : NAN_F64;
  const f64 fact = tgamma(m + 1.0); /* m! */
  f64 z = x, acc = 0.0;
  for (int k = 0; k < 100000 && z < 12.0; ++k) {
    acc += fact / pow(z, m + 1.0);
    z += 1.0;
  }
  const f64 b2k[10] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730,
                       7.0 / 6, -3617.0 / 510, 43867.0 / 798, -174611.0 / 330};
  f64 series = fact / m / pow(z, m) + fact / (2.0 * pow(z, m + 1.0));
  for (int k = 1; k <= 10; ++k) {
    const f64 coef = exp(lgamma(2.0 * k + m) - lgamma(2.0 * k + 1.0));
    series += b2k[k - 1] * coef / pow(z, 2.0 * k + m);
  }
  return (odd ? 1.0 : -1.0) * (acc + series);
}

#define GPUARR_DEFINE_LOGADDEXP(F)                                                              \
  INLINE F logaddexp_##F(F a, F b) {                                                           \
    if (a != a || b != b) return a + b;                                                        \
    const F m = a > b ? a : b;                                                                 \
    if (MATH_ISINF(m)) return m;                                                               \
    return m + log1p(exp(-fabs(a - b)));                                                       \
  }
GPUARR_DEFINE_LOGADDEXP(f32)
GPUARR_DEFINE_LOGADDEXP(f64)
