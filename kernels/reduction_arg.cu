// ${name}: ${reduce_op} reduction, ${out_size} outputs x ${red_size} reduced elements,
// strategy ${strategy}, ${block} threads per block, ${index_t} indices.
// Program equations:
${equations}
// Why this kernel ends here: ${reason}
// The kernel reduces (value, index) pairs; `acc` ends as the index of the winner and `best` as
// its value. A candidate's index is ${candidate}: its position along the reduced axis (in the
// first pass of a split reduction, from its chunk's start; in the second, the index a first
// pass found), so ties still go to the lower index.
// BETTER: the candidate (vb, ib) beats the best so far (va, ia).
#define BETTER(va, ia, vb, ib) (${better_expr})

#if ${per_block}
// One block per output element: each thread keeps its best pair over a strided part of the
// row, then a tree in shared memory picks the block's best.
KERNEL void ${name}(${params}) {
  SHARED ${value_t} partial_value[${block}];
  SHARED ${acc_t} partial_index[${block}];
  const int tid = LOCAL_ID();
  GROUP_STRIDE_LOOP(${index_t}, o, ${out_size}) {
    ${value_t} best = ${identity};
    ${acc_t} acc = ${no_index};
    for (${index_t} r = tid; r < ${red_end}; r += ${block}) {
      const ${index_t} i = ${row_base} + r;
${pre_body}
      const ${value_t} value = ${pre_value};
      const ${acc_t} candidate = ${candidate};
      if (BETTER(best, acc, value, candidate)) {
        best = value;
        acc = candidate;
      }
    }
    partial_value[tid] = best;
    partial_index[tid] = acc;
    BARRIER();
    for (int s = ${block} / 2; s > 0; s >>= 1) {
      if (tid < s && BETTER(partial_value[tid], partial_index[tid], partial_value[tid + s],
                            partial_index[tid + s])) {
        partial_value[tid] = partial_value[tid + s];
        partial_index[tid] = partial_index[tid + s];
      }
      BARRIER();
    }
    acc = partial_index[0];
    best = partial_value[0];
    if (tid == 0) {
${post_body}
    }
    for (${index_t} r = tid; r < ${red_size}; r += ${block}) {
      const ${index_t} i = o * ${red_size} + r;
${epilogue_body}
    }
    BARRIER();
  }
}
#else
// One thread per output element, scanning its reduced elements in order (column strategy).
KERNEL void ${name}(${params}) {
  GRID_STRIDE_LOOP(${index_t}, o, ${out_size}) {
    ${value_t} best = ${identity};
    ${acc_t} acc = ${no_index};
    for (${index_t} r = 0; r < ${red_end}; ++r) {
      const ${index_t} i = ${row_base} + r;
${pre_body}
      const ${value_t} value = ${pre_value};
      const ${acc_t} candidate = ${candidate};
      if (BETTER(best, acc, value, candidate)) {
        best = value;
        acc = candidate;
      }
    }
    {
${post_body}
    }
    for (${index_t} r = 0; r < ${red_size}; ++r) {
      const ${index_t} i = o * ${red_size} + r;
${epilogue_body}
    }
  }
}
#endif
#undef BETTER
