/* special.h: special functions as device functions, so they fuse like any elementwise op.
 *
 *  - erf_inv: Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), the
 *    single-precision polynomial XLA uses for float32; float64 starts from Winitzki's closed
 *    form and takes three Halley steps on erf (erfc in the tails, where 1 - |y| is exact), as
 *    the NumPy backend does.
 *  - digamma: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 12, then the asymptotic
 *    series with Bernoulli numbers B2..B20; reflection below 1/2; NaN at the poles. The same
 *    steps as gpuarr/lax/special.py, in double.
 *  - polygamma(m, x) for m >= 1: the recurrence psi^(m)(x) = psi^(m)(x + 1) + (-1)^(m+1) m!
 *    / x^(m+1) up to x >= 12, then the asymptotic series; m = 0 is digamma; non-integer or
 *    negative m gives NaN, a pole inf (odd m) or NaN (even m). Also as the NumPy backend does.
 *  - logaddexp: log(exp(a) + exp(b)) without overflow (cumlogsumexp's combining step).
 */

/* Giles' single-precision polynomial, evaluated in F. */
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

INLINE f32 erf_inv_f32(f32 x) { return fabs(x) == 1.0f ? x * INF_F32 : erf_inv_poly_f32(x); }

INLINE f64 erf_inv_f64(f64 y) {
  const f64 ay = fabs(y);
  if (!(ay < 1.0)) return ay == 1.0 ? y * INF_F64 : NAN_F64;
  /* Winitzki's closed form (relative error < 2e-3 out to 1 - 2^-53, where Giles' float32
   * polynomial is 0.5 off), as the NumPy backend starts. */
  const f64 ln = log1p(-ay * ay);
  const f64 b = 2.0 / (3.141592653589793 * 0.147) + 0.5 * ln;
  f64 ax = sqrt(sqrt(b * b - ln / 0.147) - b);
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

/* ---- XLA CPU's float32 log, log1p, erf_inv and rsqrt --------------------------------------
 *
 * The random samplers (normal, gumbel, gamma, ...) call erf_inv_giles, xla_log, xla_log1p and
 * xla_rsqrt, whose NumPy implementations (gpuarr/random/xla_math.py) repeat XLA's CPU code
 * step for step so that the streams equal JAX's. These device functions repeat the NumPy steps
 * in turn, so that kernels give the cpu platform's numbers bit for bit:
 *  - each float32 operation of the emulation is one float32 operation here, one statement
 *    each (kernels are built without contraction: --fmad=false, FP_CONTRACT OFF);
 *  - each fused multiply-add is xla_fma_f32: the product of two float32 values in double
 *    (exact), the sum rounded in double, then rounded to float32, exactly as the emulation's
 *    float64 shadows do (this differs from a true float32 fma only where the double rounding
 *    lands on a float32 midpoint);
 *  - float32 divisions and square roots go through double (correctly rounded there, and
 *    rounding a double quotient or root of float32 values to float32 is the correctly rounded
 *    float32 result), since OpenCL C only promises 2.5 and 3 ulp for its float32 ones.
 * float64: erf_inv_giles is Giles' double polynomials after XLA's float64 log1p with fma(), as
 * the emulation; the host's log there is the C library's and its fma a Dekker emulation, so
 * float64 agrees within rounding (as promised for float64 samples), not bit for bit. xla_log,
 * xla_log1p and xla_rsqrt in float64 are log, log1p and 1 / sqrt, as on the host. */

#define XLA_TINY_F32 1.1754944e-38f /* the smallest normal float32 */

INLINE f32 xla_fma_f32(f32 a, f32 b, f32 c) { return (f32)((f64)a * (f64)b + (f64)c); }
INLINE f64 xla_fma_f64(f64 a, f64 b, f64 c) { return fma(a, b, c); }
INLINE f32 xla_div_f32(f32 a, f32 b) { return (f32)((f64)a / (f64)b); }
INLINE f32 xla_sqrt_f32(f32 a) { return (f32)sqrt((f64)a); }

/* Horner's rule as the emulation's _horner: fma(x, c[0], c[1]), then p = fma(p, x, c[k]). */
INLINE f32 xla_horner_f32(const f32 *c, int n, f32 x) {
  f32 p = xla_fma_f32(x, c[0], c[1]);
  for (int k = 2; k < n; ++k) p = xla_fma_f32(p, x, c[k]);
  return p;
}

/* Cephes logf of y > 0 as XLA emits it (the emulation's _log_large); finite for y <= 0. */
INLINE f32 xla_log_core_f32(f32 y) {
  const f32 c[9] = {7.0376836e-02f, -1.151461e-01f, 1.16769984e-01f, -1.2420141e-01f,
                    1.4249323e-01f, -1.6668057e-01f, 2.0000714e-01f, -2.4999994e-01f,
                    3.333333e-01f};
  const f32 v = y < XLA_TINY_F32 ? XLA_TINY_F32 : y;
  const i32 vb = (i32)BITS_F32(v);
  i32 e = (vb >> 23) - 126; /* the exponent of the mantissa in [0.5, 1) */
  const f32 m = F32_BITS((vb & 0x007FFFFF) | 0x3F000000);
  const f32 below = m - 7.0710677e-01f;
  const i32 mask = ((i32)BITS_F32(below)) >> 31; /* below sqrt(1/2): t = 2m - 1, e - 1 */
  e += mask;
  const f32 ef = (f32)e;
  f32 t = m - 1.0f;
  t = t + F32_BITS((i32)BITS_F32(m) & mask);
  const f32 z = t * t;
  const f32 t3 = z * t;
  const f32 y1 = xla_horner_f32(c, 3, t);
  const f32 y2 = xla_horner_f32(c + 3, 3, t);
  const f32 y3 = xla_horner_f32(c + 6, 3, t);
  f32 r = xla_fma_f32(y1, t3, y2);
  r = xla_fma_f32(r, t3, y3);
  const f32 lo = ef * -2.1219444e-04f;
  r = xla_fma_f32(r, t3, lo);
  const f32 half_z = z * 0.5f;
  f32 out = t - half_z;
  out = out + r;
  const f32 hi = ef * 6.933594e-01f; /* exact: few bits in each factor */
  return out + hi;
}

/* Cephes' log1p for |x| < sqrt(2) - 1 (the emulation's _log1p_small). */
INLINE f32 xla_log1p_small_f32(f32 x) {
  const f32 num[7] = {4.527e-05f, 4.9854103e-01f, 6.5787325e+00f, 2.9911919e+01f,
                      6.094967e+01f, 5.7112965e+01f, 2.0039553e+01f};
  const f32 den[6] = {1.5062909e+01f, 8.304757e+01f, 2.217624e+02f, 3.0909872e+02f,
                      2.1642789e+02f, 6.011866e+01f};
  f32 r = x + den[0]; /* fma(1, x, d0): one rounding */
  for (int k = 1; k < 6; ++k) r = xla_fma_f32(r, x, den[k]);
  f32 p = xla_horner_f32(num, 7, x);
  p = xla_div_f32(p, r);
  f32 q = x * x;
  f32 s = x * q;
  s = s * p;
  q = q * -0.5f;
  q = q + s;
  return x + q;
}

/* log1p without its special cases (the emulation's _log1p_block): finite beyond -1. */
INLINE f32 xla_log1p_core_f32(f32 x) {
  if (fabs(x) < 4.1421357e-01f) return xla_log1p_small_f32(x);
  const f32 y = x + 1.0f;
  return xla_log_core_f32(y);
}

INLINE f32 xla_log_f32(f32 y) {
  /* XLA flushes subnormals to zero: +-0 and those -> -inf; inf -> inf; below zero, NaN -> NaN. */
  if (!(y >= XLA_TINY_F32 && y < INF_F32))
    return fabs(y) < XLA_TINY_F32 ? -INF_F32 : y == INF_F32 ? INF_F32 : NAN_F32;
  return xla_log_core_f32(y);
}

INLINE f32 xla_log1p_f32(f32 x) {
  /* -1 -> -inf, inf -> inf, below -1 and NaN -> NaN, subnormals flushed to (signed) zero. */
  if (!(x > -1.0f && x < INF_F32 && !(fabs(x) < XLA_TINY_F32)))
    return fabs(x) < XLA_TINY_F32 ? copysign(0.0f, x)
           : x == -1.0f         ? -INF_F32
           : x == INF_F32       ? INF_F32
                                : NAN_F32;
  return xla_log1p_core_f32(x);
}

/* Giles' single-precision erf_inv after w = -log1p(-a * a), as the emulation's
 * _erf_inv32_block: the w < 5 polynomial in w - 2.5, else the other in sqrt(w) - 3. */
INLINE f32 erf_inv_giles_f32(f32 a) {
  const f32 near[9] = {2.8102264e-08f, 3.4327394e-07f, -3.5233877e-06f, -4.3915065e-06f,
                       2.1858087e-04f, -1.253725e-03f, -4.1776816e-03f, 2.4664073e-01f,
                       1.5014094e+00f};
  const f32 far[9] = {-2.0021426e-04f, 1.0095056e-04f, 1.3493432e-03f, -3.6734284e-03f,
                      5.7395077e-03f, -7.6224613e-03f, 9.4388705e-03f, 1.001674e+00f,
                      2.8329768e+00f};
  const f32 sq = a * a;
  const f32 log1p = xla_log1p_core_f32(-sq);
  const f32 q = -5.0f - log1p;
  const int lt5 = ((i32)BITS_F32(q)) < 0; /* w < 5 */
  f32 w;
  if (lt5) {
    w = -2.5f - log1p;
  } else {
    w = xla_sqrt_f32(-log1p);
    w = w - 3.0f;
  }
  const f32 p = lt5 ? xla_horner_f32(near, 9, w) : xla_horner_f32(far, 9, w);
  const f32 out = a * p;
  if (!(fabs(a) < 1.0f)) return fabs(a) == 1.0f ? a * INF_F32 : NAN_F32; /* +-inf, NaN beyond */
  return out;
}

/* XLA's x86 rsqrt (the emulation's _xla_rsqrt32): the hardware estimate, modelled as 1 / sqrt
 * of the midpoint of the input's bucket (exponent and top ten mantissa bits) rounded to 13
 * significant bits, then two Newton steps h = x y^2 - 1, y -= y h / 2 with fused steps. */
INLINE f32 xla_rsqrt_f32(f32 x) {
  if (!(x >= XLA_TINY_F32) || x == INF_F32)
    return x == INF_F32 ? 0.0f : fabs(x) < XLA_TINY_F32 ? copysign(INF_F32, x) : NAN_F32;
  const u32 mid = (BITS_F32(x) & 0xFFFFE000u) | 0x1000u;
  const f64 v = 1.0 / sqrt((f64)F32_BITS(mid));
  int e;
  const f64 mant = frexp(v, &e);
  f32 y = (f32)ldexp(rint(mant * 8192.0) / 8192.0, e);
  for (int step = 0; step < 2; ++step) {
    const f32 xy = x * y;
    const f32 h = xla_fma_f32(xy, y, -1.0f);
    const f32 half_y = y * -0.5f;
    y = xla_fma_f32(half_y, h, y);
  }
  return y;
}

/* float64: XLA's log1p (log(1 + x) above sqrt(2) - 1, Cephes' rational function below) and
 * Giles' double-precision polynomials, with fused multiply-adds. */
INLINE f64 xla_horner_f64(const f64 *c, int n, f64 x) {
  f64 p = c[0];
  for (int k = 1; k < n; ++k) p = fma(p, x, c[k]);
  return p;
}

INLINE f64 xla_log1p_giles_f64(f64 x) {
  if (!(fabs(x) < 0.41421356237309515)) return log(1.0 + x);
  const f64 num[7] = {4.52700008624452e-05, 0.49854102823193375, 6.578732594206104,
                      29.911919328553072, 60.94966798098779, 57.11296359058554,
                      20.039553499201283};
  const f64 den[7] = {1.0, 15.062909083469192, 83.04756596796722, 221.76239823732857,
                      309.09872225312057, 216.42788614495947, 60.11866049760384};
  const f64 ratio = xla_horner_f64(num, 7, x) / xla_horner_f64(den, 7, x);
  const f64 x2 = x * x;
  const f64 x3r = x * x2 * ratio;
  return x + fma(x2, -0.5, x3r);
}

INLINE f64 erf_inv_giles_f64(f64 a) {
  const f64 low[23] = {
      -3.64441206401782e-21, -1.6850591381820166e-19, 1.28584807152564e-18,
      1.1157877678025181e-17, -1.333171662854621e-16, 2.0972767875968562e-17,
      6.637638134358324e-15, -4.054566272975207e-14, -8.151934197605472e-14,
      2.6335093153082323e-12, -1.2975133253453532e-11, -5.415412054294628e-11,
      1.0512122733215323e-09, -4.112633980346984e-09, -2.9070369957882005e-08,
      4.2347877827932404e-07, -1.3654692000834679e-06, -1.3882523362786469e-05,
      0.00018673420803405714, -0.000740702534166267, -0.006033670871430149,
      0.24015818242558962, 1.6536545626831027};
  const f64 mid[19] = {
      2.2137376921775787e-09, 9.075656193888539e-08, -2.7517406297064545e-07,
      1.8239629214389228e-08, 1.5027403968909828e-06, -4.013867526981546e-06,
      2.9234449089955446e-06, 1.2475304481671779e-05, -4.7318229009055734e-05,
      6.828485145957318e-05, 2.4031110387097894e-05, -0.0003550375203628475,
      0.0009532893797373805, -0.0016882755560235047, 0.002491442096107851,
      -0.003751208507569241, 0.005370914553590064, 1.0052589676941592, 3.0838856104922208};
  const f64 tail[17] = {
      -2.7109920616438573e-11, -2.555641816996525e-10, 1.5076572693500548e-09,
      -3.789465440126737e-09, 7.61570120807834e-09, -1.496002662714924e-08,
      2.914795345090108e-08, -6.771199775845234e-08, 2.2900482228026655e-07,
      -9.9298272942317e-07, 4.526062597223154e-06, -1.968177810553167e-05,
      7.599527703001776e-05, -0.00021503011930044477, -0.00013871931833623122,
      1.0103004648645344, 4.849906401408584};
  const f64 w = -xla_log1p_giles_f64(-a * a);
  f64 p;
  if (w >= 16.0) {
    p = xla_horner_f64(tail, 17, sqrt(w) - 5.0);
  } else if (w >= 6.25) {
    p = xla_horner_f64(mid, 19, sqrt(w) - 3.25);
  } else { /* and NaN */
    p = xla_horner_f64(low, 23, w - 3.125);
  }
  return fabs(a) == 1.0 ? a * INF_F64 : p * a;
}

INLINE f64 xla_log_f64(f64 y) { return log(y); }
INLINE f64 xla_log1p_f64(f64 x) { return log1p(x); }
INLINE f64 xla_rsqrt_f64(f64 x) { return 1.0 / sqrt(x); }
