// ${name}: ${reduce_op} reduction, ${out_size} outputs x ${red_size} reduced elements,
// strategy ${strategy} (lanes), ${index_t} indices.
// Program equations:
${equations}
// Why this kernel ends here: ${reason}
#define REDUCE(a, b) (${reduce_expr})
#define LANE_REDUCE(a, b) (${lane_expr})

// The row strategy of a host that runs work in vector lanes (the C dialect): one output per
// work item, its row's elements dealt to ${lanes} partial results (element r to lane
// r % ${lanes}), so neighbouring elements never wait on each other's add and the compiler keeps
// the partials in several vector registers (the reduction reassociates, as XLA's do); the
// last chunk of a row may be shorter. The lanes then combine (with REDUCE; a lane's step,
// LANE_REDUCE, may leave what only the combine needs to do, such as flushing a subnormal max).
// A row's values may be kept for the epilogue.
KERNEL void ${name}(${params}) {
  GROUP_STRIDE_LOOP(${index_t}, o, ${out_size}) {
    ${keep_decl}
    // An initialiser (not a loop) lets the compiler keep the lanes in registers.
    ${acc_t} lane[${lanes}] = {[0 ... ${lanes} - 1] = ${identity}};
    for (${index_t} r0 = 0; r0 < ${red_size}; r0 += ${lanes}) {
      const ${index_t} n = ${red_size} - r0 < ${lanes} ? ${red_size} - r0 : ${lanes};
      VECTOR_LOOP
      for (${index_t} l = 0; l < n; ++l) {
        const ${index_t} r = r0 + l;
        const ${index_t} i = o * ${red_size} + r;
${pre_body}
        lane[l] = LANE_REDUCE(lane[l], (${acc_t})${pre_value});
        ${keep_store}
      }
    }
    ${acc_t} acc = ${identity};
    ${loop_hint}
    for (int l = 0; l < ${lanes}; ++l) acc = REDUCE(acc, lane[l]);
    {
${post_body}
    }
    VECTOR_LOOP
    for (${index_t} r = 0; r < ${red_size}; ++r) {
      const ${index_t} i = o * ${red_size} + r;
${epilogue_body}
    }
  }
}
#undef REDUCE
#undef LANE_REDUCE
