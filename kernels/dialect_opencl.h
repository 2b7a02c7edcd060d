/* dialect_opencl.h: the OpenCL C spelling of the names every gpuarr kernel template uses.
 *
 * The counterpart of dialect_cuda.h; see there. PoCL runs these kernels on the CPU, which is
 * how the kernel tests check generated code on machines without a GPU.
 */
#define GPUARR_DIALECT_OPENCL 1
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
/* No contraction of a * b + c into one fused operation (OpenCL C's default allows it), as
 * NVRTC's --fmad=false: each operation rounds as the NumPy backend's does. */
#pragma OPENCL FP_CONTRACT OFF

/* Qualifiers and address spaces. */
#define KERNEL __kernel
#define GLOBAL __global
#define SHARED __local
#define INLINE static inline
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* Thread and block ids (1-D launches only). */
#define LOCAL_ID() ((int)get_local_id(0))
#define GROUP_ID() ((int)get_group_id(0))
#define LOCAL_SIZE() ((int)get_local_size(0))
#define NUM_GROUPS() ((int)get_num_groups(0))
#define GLOBAL_ID(T) ((T)get_global_id(0))
#define GLOBAL_SIZE(T) ((T)get_global_size(0))

/* As dialect_cuda.h: T holds n plus the global size, so i + stride never wraps. */
#define GRID_STRIDE_LOOP(T, i, n) for (T i = GLOBAL_ID(T); i < (T)(n); i += GLOBAL_SIZE(T))
/* The block loop: each block takes outputs GROUP_ID(), + NUM_GROUPS(), ... */
#define GROUP_STRIDE_LOOP(T, o, n) for (T o = (T)GROUP_ID(); o < (T)(n); o += (T)NUM_GROUPS())

/* No warp shuffles: block reductions finish in shared memory. */
#define HAS_WARP_SHUFFLE 0
#define WARP_SIZE 1
#define TREE_MIN_STRIDE 1 /* shared-memory tree runs down to one partial */

typedef char i8;
typedef uchar u8;
typedef short i16;
typedef ushort u16;
typedef int i32;
typedef uint u32;
typedef long i64;
typedef ulong u64;
typedef float f32;
typedef double f64;

/* 4-wide vectors for contiguous, aligned 32-bit loads and stores (one 16-byte access). */
typedef float4 f32x4;
typedef int4 i32x4;
typedef uint4 u32x4;
#define MAKE_f32x4(a, b, c, d) ((f32x4)((a), (b), (c), (d)))
#define MAKE_i32x4(a, b, c, d) ((i32x4)((a), (b), (c), (d)))
#define MAKE_u32x4(a, b, c, d) ((u32x4)((a), (b), (c), (d)))
/* complex64: a float2 (real in .x, imaginary in .y), laid out as NumPy's complex64. */
typedef float2 c64;
#define MAKE_c64(re, im) ((c64)((re), (im)))

#define LOAD4(T4, p, q) (((const GLOBAL T4 *)(p))[q])
#define STORE4(T4, p, q, v) (((GLOBAL T4 *)(p))[q] = (v))

#define BITS_F32(x) as_uint(x)
#define F32_BITS(x) as_float((u32)(x))
#define BITS_F64(x) as_ulong(x)
#define F64_BITS(x) as_double((u64)(x))

#define MATH_POPCOUNT32(x) ((i32)popcount((u32)(x)))
#define MATH_POPCOUNT64(x) ((i32)popcount((u64)(x)))
#define MATH_CLZ32(x) ((i32)clz((u32)(x)))
#define MATH_CLZ64(x) ((i32)clz((u64)(x)))
#define MATH_ISNAN(x) (isnan(x) != 0)
#define MATH_ISINF(x) (isinf(x) != 0)
#define MATH_ISFINITE(x) (isfinite(x) != 0)
#define MATH_SIGNBIT(x) (signbit(x) != 0)

/* OpenCL 1.2 has integer atomics only; float adds are compare-and-swap loops. */
#define ATOMIC_ADD_I32(p, v) atomic_add((volatile GLOBAL int *)(p), (int)(v))
#define ATOMIC_ADD_U32(p, v) atomic_add((volatile GLOBAL uint *)(p), (uint)(v))
#define ATOMIC_ADD_I64(p, v) atom_add((volatile GLOBAL long *)(p), (long)(v))
#define ATOMIC_ADD_U64(p, v) atom_add((volatile GLOBAL ulong *)(p), (ulong)(v))
#define ATOMIC_ADD_F32(p, v) gpuarr_atomic_add_f32((volatile GLOBAL uint *)(p), (float)(v))
#define ATOMIC_ADD_F64(p, v) gpuarr_atomic_add_f64((volatile GLOBAL ulong *)(p), (double)(v))
/* No 8/16-bit atomics: a compare-and-swap loop on the aligned 32-bit word (common.h). */
#define ATOMIC_ADD_I8(p, v) atomic_add_narrow((GLOBAL u8 *)(p), (u32)(i32)(v), 0xffu)
#define ATOMIC_ADD_U8(p, v) atomic_add_narrow((GLOBAL u8 *)(p), (u32)(v), 0xffu)
#define ATOMIC_ADD_I16(p, v) atomic_add_narrow((GLOBAL u8 *)(p), (u32)(i32)(v), 0xffffu)
#define ATOMIC_ADD_U16(p, v) atomic_add_narrow((GLOBAL u8 *)(p), (u32)(v), 0xffffu)
#define ATOMIC_CAS_U32(p, cmp, v) atomic_cmpxchg((volatile GLOBAL uint *)(p), (uint)(cmp), (uint)(v))
#define ATOMIC_CAS_U64(p, cmp, v) atom_cmpxchg((volatile GLOBAL ulong *)(p), (ulong)(cmp), (ulong)(v))
#define ATOMIC_MAX_I32(p, v) atomic_max((volatile GLOBAL int *)(p), (int)(v))
#define ATOMIC_MAX_I64(p, v) atom_max((volatile GLOBAL long *)(p), (long)(v))

INLINE void gpuarr_atomic_add_f32(volatile GLOBAL uint *p, float v) {
  uint old = *p, assumed;
  do {
    assumed = old;
    old = atomic_cmpxchg(p, assumed, as_uint(as_float(assumed) + v));
  } while (old != assumed);
}

INLINE void gpuarr_atomic_add_f64(volatile GLOBAL ulong *p, double v) {
  ulong old = *p, assumed;
  do {
    assumed = old;
    old = atom_cmpxchg(p, assumed, as_ulong(as_double(assumed) + v));
  } while (old != assumed);
}

#define INF_F32 as_float(0x7f800000u)
#define NAN_F32 as_float(0x7fc00000u)
#define INF_F64 as_double(0x7ff0000000000000ul)
#define NAN_F64 as_double(0x7ff8000000000000ul)
