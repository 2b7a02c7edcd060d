/* dialect_cuda.h: the CUDA C spelling of the names every gpuarr kernel template uses.
 *
 * Templates never write __global__, threadIdx or atomicAdd directly; they write the macros
 * below, and dialect_opencl.h gives the same macros their OpenCL C meaning, so one rendered
 * text compiles under NVRTC (as CUDA C++) and under PoCL (as OpenCL C).
 */
#define GPUARR_DIALECT_CUDA 1

/* Qualifiers and address spaces. */
#define KERNEL extern "C" __global__
#define GLOBAL
#define SHARED __shared__
#define INLINE static __device__ __forceinline__
#define BARRIER() __syncthreads()

/* Thread and block ids (1-D launches only). */
#define LOCAL_ID() ((int)threadIdx.x)
#define GROUP_ID() ((int)blockIdx.x)
#define LOCAL_SIZE() ((int)blockDim.x)
#define NUM_GROUPS() ((int)gridDim.x)
#define GLOBAL_ID(T) ((T)blockIdx.x * (T)blockDim.x + (T)threadIdx.x)
#define GLOBAL_SIZE(T) ((T)gridDim.x * (T)blockDim.x)

/* The grid-stride loop every elementwise kernel runs (CuPy's CUPY_FOR). The renderer picks
 * T so that n plus the launch's global size fits in T (i64 within 2^20 of 2^31): i + stride
 * never wraps. */
#define GRID_STRIDE_LOOP(T, i, n) for (T i = GLOBAL_ID(T); i < (T)(n); i += GLOBAL_SIZE(T))
/* The block loop: each block takes outputs GROUP_ID(), + NUM_GROUPS(), ... */
#define GROUP_STRIDE_LOOP(T, o, n) for (T o = (T)GROUP_ID(); o < (T)(n); o += (T)NUM_GROUPS())

/* Warp-level finish of block reductions. */
#define HAS_WARP_SHUFFLE 1
#define WARP_SIZE 32
#define TREE_MIN_STRIDE 64 /* shared-memory tree stops at 64 partials; a warp finishes */
#define SHFL_DOWN(v, offset) __shfl_down_sync(0xffffffffu, (v), (offset))

/* Fixed-width scalar types. bool is stored as u8 on both dialects. */
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

/* 4-wide vectors for contiguous, aligned 32-bit loads and stores (one 16-byte access). */
typedef float4 f32x4;
typedef int4 i32x4;
typedef uint4 u32x4;
#define MAKE_f32x4(a, b, c, d) make_float4((a), (b), (c), (d))
#define MAKE_i32x4(a, b, c, d) make_int4((a), (b), (c), (d))
#define MAKE_u32x4(a, b, c, d) make_uint4((a), (b), (c), (d))
/* complex64: a float2 (real in .x, imaginary in .y), laid out as NumPy's complex64. */
typedef float2 c64;
#define MAKE_c64(re, im) make_float2((re), (im))

#define LOAD4(T4, p, q) (((const GLOBAL T4 *)(p))[q])
#define STORE4(T4, p, q, v) (((GLOBAL T4 *)(p))[q] = (v))

/* Bit casts. */
#define BITS_F32(x) ((u32)__float_as_uint(x))
#define F32_BITS(x) __uint_as_float((u32)(x))
#define BITS_F64(x) ((u64)__double_as_longlong(x))
#define F64_BITS(x) __longlong_as_double((i64)(x))

/* Math functions whose names differ between the dialects (type-generic on both). */
#define MATH_POPCOUNT32(x) __popc((u32)(x))
#define MATH_POPCOUNT64(x) __popcll((u64)(x))
#define MATH_CLZ32(x) __clz((i32)(x))
#define MATH_CLZ64(x) __clzll((i64)(x))
#define MATH_ISNAN(x) isnan(x)
#define MATH_ISINF(x) isinf(x)
#define MATH_ISFINITE(x) isfinite(x)
#define MATH_SIGNBIT(x) signbit(x)

/* Atomics on global memory; each returns nothing. */
#define ATOMIC_ADD_I32(p, v) atomicAdd((int *)(p), (int)(v))
#define ATOMIC_ADD_U32(p, v) atomicAdd((unsigned int *)(p), (unsigned int)(v))
#define ATOMIC_ADD_I64(p, v) atomicAdd((unsigned long long *)(p), (unsigned long long)(v))
#define ATOMIC_ADD_U64(p, v) atomicAdd((unsigned long long *)(p), (unsigned long long)(v))
#define ATOMIC_ADD_F32(p, v) atomicAdd((float *)(p), (float)(v))
#define ATOMIC_ADD_F64(p, v) atomicAdd((double *)(p), (double)(v))
/* No 8/16-bit atomicAdd: a compare-and-swap loop on the aligned 32-bit word (common.h). */
#define ATOMIC_ADD_I8(p, v) atomic_add_narrow((GLOBAL u8 *)(p), (u32)(i32)(v), 0xffu)
#define ATOMIC_ADD_U8(p, v) atomic_add_narrow((GLOBAL u8 *)(p), (u32)(v), 0xffu)
#define ATOMIC_ADD_I16(p, v) atomic_add_narrow((GLOBAL u8 *)(p), (u32)(i32)(v), 0xffffu)
#define ATOMIC_ADD_U16(p, v) atomic_add_narrow((GLOBAL u8 *)(p), (u32)(v), 0xffffu)
/* Compare-and-swap; each returns the word's old value. */
#define ATOMIC_CAS_U32(p, cmp, v) atomicCAS((unsigned int *)(p), (unsigned int)(cmp), (unsigned int)(v))
#define ATOMIC_CAS_U64(p, cmp, v) \
  atomicCAS((unsigned long long *)(p), (unsigned long long)(cmp), (unsigned long long)(v))
/* Atomic max of a 32-bit signed value (scatter ownership: the last update claims an element). */
#define ATOMIC_MAX_I32(p, v) atomicMax((int *)(p), (int)(v))
#define ATOMIC_MAX_I64(p, v) atomicMax((long long *)(p), (long long)(v))

/* Special float values. */
#define INF_F32 __int_as_float(0x7f800000)
#define NAN_F32 __int_as_float(0x7fc00000)
#define INF_F64 __longlong_as_double(0x7ff0000000000000LL)
#define NAN_F64 __longlong_as_double(0x7ff8000000000000LL)
