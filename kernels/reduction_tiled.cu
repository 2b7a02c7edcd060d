// ${name}: ${reduce_op} reduction, ${out_size} outputs x ${red_size} reduced elements,
// strategy ${strategy} (tiled), ${index_t} indices.
// Program equations:
${equations}
// Why this kernel ends here: ${reason}
#define REDUCE(a, b) (${reduce_expr})

// The column strategy of a host that runs its outputs in vector lanes (the C dialect): this
// thread's outputs are taken ${tile} at a time, the reduced elements in order in the outer loop
// and the tile's outputs in the inner, vectorised one, so each load walks along the outputs
// (neighbouring words for a column sum) and each output still adds its elements in order.
// Loads split their offset into an output part and a reduced part hoisted out of the inner loop.
KERNEL void ${name}(${params}) {
  TILE_LOOP(${index_t}, o0, n, ${out_size}, ${tile}) {
    ${acc_t} accs[${tile}];
    for (${index_t} t = 0; t < n; ++t) accs[t] = ${identity};
    for (${index_t} r = 0; r < ${red_size}; ++r) {
${red_offsets}
      VECTOR_LOOP
      for (${index_t} t = 0; t < n; ++t) {
        const ${index_t} o = o0 + t;
${pre_body}
        accs[t] = REDUCE(accs[t], (${acc_t})${pre_value});
      }
    }
    for (${index_t} t = 0; t < n; ++t) {
      const ${index_t} o = o0 + t;
      const ${acc_t} acc = accs[t];
      {
${post_body}
      }
      for (${index_t} r = 0; r < ${red_size}; ++r) {
        const ${index_t} i = o * ${red_size} + r;
${epilogue_body}
      }
    }
  }
}
#undef REDUCE
