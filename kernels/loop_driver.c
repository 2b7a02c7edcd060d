/* loop_driver.c: runs a whole `scan` or `while` of the native platform in C, so a loop whose
 * body is kernels and matrix products costs no Python per iteration.
 *
 * The host (gpuarr/backends/native_loops.py) turns the body's (and the condition's) launch
 * plan into straight-line code, a flat array of i64: each instruction is an opcode and its
 * operands. Buffers are named by slots, an array of pointers the host fills; kernels are the
 * `<entry>_run(args, begin, end)` entry points of the body's own shared object and the matrix
 * products are the CBLAS routines of the BLAS NumPy ships, both passed in as function
 * pointers. The text is fixed (no per-program code), so it is compiled once per machine.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef long long i64;
typedef void (*entry_fn)(void *const *args, i64 begin, i64 end);
/* CBLAS with 64-bit integers (OpenBLAS built with INTERFACE64, as NumPy's). */
typedef void (*sgemm_fn)(int order, int ta, int tb, i64 m, i64 n, i64 k, float alpha,
                         const float *a, i64 lda, const float *b, i64 ldb, float beta, float *c,
                         i64 ldc);
typedef void (*dgemm_fn)(int order, int ta, int tb, i64 m, i64 n, i64 k, double alpha,
                         const double *a, i64 lda, const double *b, i64 ldb, double beta,
                         double *c, i64 ldc);
typedef void (*sgemv_fn)(int order, int ta, i64 m, i64 n, float alpha, const float *a, i64 lda,
                         const float *x, i64 incx, float beta, float *y, i64 incy);
typedef void (*dgemv_fn)(int order, int ta, i64 m, i64 n, double alpha, const double *a,
                         i64 lda, const double *x, i64 incx, double beta, double *y, i64 incy);

#define EXPORT __attribute__((visibility("default")))

/* Opcodes; `i` below is the loop's position (the scan index; 0 in a while loop). */
enum {
  OP_END = 0,
  /* fn, items, nargs, slot * nargs: fns[fn](pointers of the slots, 0, items) */
  OP_LAUNCH = 1,
  /* dst, dst_step, src, src_step, nbytes: memmove(slots[dst] + i * dst_step,
   * slots[src] + i * src_step, nbytes) */
  OP_COPY = 2,
  /* dst, src, step: slots[dst] = slots[src] + i * step (the scan's slice of an xs array) */
  OP_VIEW = 3,
  /* fn, double, order, ta, tb, m, n, k, lda, ldb, ldc, a, b, c: C = A B through ?gemm */
  OP_GEMM = 4,
  /* fn, double, order, ta, m, n, lda, a, x, y: y = A x through ?gemv */
  OP_GEMV = 5,
};

static void run_code(const i64 *pc, void **slots, void *const *fns, i64 i) {
  for (;;) {
    switch (pc[0]) {
      case OP_END:
        return;
      case OP_LAUNCH: {
        const i64 nargs = pc[3];
        void *args[nargs > 0 ? nargs : 1];
        for (i64 a = 0; a < nargs; ++a) args[a] = slots[pc[4 + a]];
        ((entry_fn)fns[pc[1]])(args, 0, pc[2]);
        pc += 4 + nargs;
        break;
      }
      case OP_COPY: {
        char *dst = (char *)slots[pc[1]] + i * pc[2];
        const char *src = (const char *)slots[pc[3]] + i * pc[4];
        if (dst != src) memmove(dst, src, (size_t)pc[5]);
        pc += 6;
        break;
      }
      case OP_VIEW:
        slots[pc[1]] = (char *)slots[pc[2]] + i * pc[3];
        pc += 4;
        break;
      case OP_GEMM:
        if (pc[2])
          ((dgemm_fn)fns[pc[1]])((int)pc[3], (int)pc[4], (int)pc[5], pc[6], pc[7], pc[8], 1.0,
                                 slots[pc[12]], pc[9], slots[pc[13]], pc[10], 0.0,
                                 slots[pc[14]], pc[11]);
        else
          ((sgemm_fn)fns[pc[1]])((int)pc[3], (int)pc[4], (int)pc[5], pc[6], pc[7], pc[8], 1.0f,
                                 slots[pc[12]], pc[9], slots[pc[13]], pc[10], 0.0f,
                                 slots[pc[14]], pc[11]);
        pc += 15;
        break;
      case OP_GEMV:
        if (pc[2])
          ((dgemv_fn)fns[pc[1]])((int)pc[3], (int)pc[4], pc[5], pc[6], 1.0, slots[pc[8]], pc[7],
                                 slots[pc[9]], 1, 0.0, slots[pc[10]], 1);
        else
          ((sgemv_fn)fns[pc[1]])((int)pc[3], (int)pc[4], pc[5], pc[6], 1.0f, slots[pc[8]],
                                 pc[7], slots[pc[9]], 1, 0.0f, slots[pc[10]], 1);
        pc += 11;
        break;
      default:
        return; /* the host never writes another opcode */
    }
  }
}

/* A scan of `length` steps: `body` runs once per position, from the end when `reverse`. */
EXPORT void gpuarr_loop_scan(const i64 *body, void **slots, void *const *fns, i64 length,
                             i64 reverse) {
  for (i64 step = 0; step < length; ++step) {
    run_code(body, slots, fns, reverse ? length - 1 - step : step);
  }
}

/* A while loop: `cond` computes the predicate (one byte in slots[pred]); while it is true,
 * `body` runs. Returns the number of iterations. */
EXPORT i64 gpuarr_loop_while(const i64 *cond, const i64 *body, void **slots, void *const *fns,
                             i64 pred) {
  i64 n = 0;
  for (;;) {
    run_code(cond, slots, fns, 0);
    if (!*(const unsigned char *)slots[pred]) return n;
    run_code(body, slots, fns, 0);
    ++n;
  }
}
