// ${name}: ${reduce_op} reduction, ${out_size} outputs x ${red_size} reduced elements,
// strategy ${strategy}, ${block} threads per block, ${index_t} indices.
// Program equations:
${equations}
// Why this kernel ends here: ${reason}
#define REDUCE(a, b) (${reduce_expr})

// One thread per output element, looping over the reduced elements in order: used when the
// reduced axes are outer (column reductions), so neighbouring threads read neighbouring words.
// The first pass of a two-pass reduction loops over one chunk of its row, from ${row_base}.
KERNEL void ${name}(${params}) {
  GRID_STRIDE_LOOP(${index_t}, o, ${out_size}) {
    ${acc_t} acc = ${identity};
    for (${index_t} r = 0; r < ${red_end}; ++r) {
      const ${index_t} i = ${row_base} + r;
${pre_body}
      acc = REDUCE(acc, (${acc_t})${pre_value});
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
#undef REDUCE
