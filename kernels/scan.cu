// ${name}: cumulative ${op} along axis ${axis} of shape ${shape}${direction}: ${rows} rows of
// ${length} elements (stride ${inner}), strategy ${strategy}, ${index_t} indices.
// Program equations:
${equations}
// Why this kernel ends here: ${reason}
#define COMBINE(a, b) (${combine_expr})

// Element k of row `row` (k counts in scan order), as a flat index into the operand.
#define SCAN_INDEX(row, k) ((row) / ${inner} * ${length} * ${inner} + (row) % ${inner} + (${position}) * ${inner})

#if ${per_block}
// One block per row; the row is scanned in tiles of ${block}. Each tile is an inclusive
// Hillis-Steele scan in shared memory (log2(${block}) steps); `carry` holds the combination of
// all earlier tiles and is folded in before the store.
KERNEL void ${name}(${params}) {
  SHARED ${acc_t} tile[${block}];
  const int tid = LOCAL_ID();
  GROUP_STRIDE_LOOP(${index_t}, row, ${rows}) {
    ${acc_t} carry = ${identity};
    for (${index_t} base = 0; base < ${length}; base += ${block}) {
      const ${index_t} k = base + tid;
      const ${index_t} i = SCAN_INDEX(row, k < ${length} ? k : ${length} - 1);
${pre_body}
      tile[tid] = k < ${length} ? (${acc_t})${pre_value} : ${identity};
      BARRIER();
      for (int offset = 1; offset < ${block}; offset <<= 1) {
        const ${acc_t} left = tid >= offset ? tile[tid - offset] : ${identity};
        BARRIER();
        if (tid >= offset) tile[tid] = COMBINE(left, tile[tid]);
        BARRIER();
      }
      const ${acc_t} acc = COMBINE(carry, tile[tid]);
      if (k < ${length}) ${out}[i] = ${store_value};
      carry = COMBINE(carry, tile[${block} - 1]);
      BARRIER();
    }
  }
}
#else
// One thread per row, combining along the axis in order; neighbouring threads take
// neighbouring rows, so their loads are adjacent when the axis is not the last one.
KERNEL void ${name}(${params}) {
  GRID_STRIDE_LOOP(${index_t}, row, ${rows}) {
    ${acc_t} acc = ${identity};
    for (${index_t} k = 0; k < ${length}; ++k) {
      const ${index_t} i = SCAN_INDEX(row, k);
${pre_body}
      acc = COMBINE(acc, (${acc_t})${pre_value});
      ${out}[i] = ${store_value};
    }
  }
}
#endif
#undef COMBINE
#undef SCAN_INDEX
