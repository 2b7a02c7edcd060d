// ${name}: ${reduce_op} reduction, ${out_size} outputs x ${red_size} reduced elements,
// strategy ${strategy}, ${block} threads per block, ${index_t} indices.
// Program equations:
${equations}
// Why this kernel ends here: ${reason}
#define REDUCE(a, b) (${reduce_expr})

// One block per output element: threads stride over the reduced elements, then a tree
// reduction in shared memory, finished with warp shuffles where the dialect has them.
// The first pass of a two-pass reduction reduces one chunk of a row (from ${row_base}) and
// stops at the end of the data (${red_end}), so a padded grid's missing lanes keep the identity.
KERNEL void ${name}(${params}) {
  SHARED ${acc_t} partial[${block}];
  const int tid = LOCAL_ID();
  GROUP_STRIDE_LOOP(${index_t}, o, ${out_size}) {
    ${acc_t} acc = ${identity};
    ${keep_decl}
    ${loop_hint}
    for (${index_t} r = tid; r < ${red_end}; r += ${block}) {
      const ${index_t} i = ${row_base} + r;
${pre_body}
      acc = REDUCE(acc, (${acc_t})${pre_value});
      ${keep_store}
    }
    partial[tid] = acc;
    BARRIER();
    for (int s = ${block} / 2; s >= TREE_MIN_STRIDE; s >>= 1) {
      if (tid < s) partial[tid] = REDUCE(partial[tid], partial[tid + s]);
      BARRIER();
    }
#if HAS_WARP_SHUFFLE
    if (tid < WARP_SIZE) {
      acc = REDUCE(partial[tid], partial[tid + WARP_SIZE]);
      for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) {
        acc = REDUCE(acc, SHFL_DOWN(acc, offset));
      }
    }
    BARRIER();
    if (tid == 0) partial[0] = acc;
#endif
    BARRIER();
    acc = partial[0];
    if (tid == 0) {
${post_body}
    }
    ${epilogue_hint}
    for (${index_t} r = tid; r < ${red_size}; r += ${block}) {
      const ${index_t} i = o * ${red_size} + r;
${epilogue_body}
    }
    BARRIER();
  }
}
#undef REDUCE
