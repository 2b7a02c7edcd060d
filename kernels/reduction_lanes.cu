// ${name}: ${reduce_op} reduction, ${out_size} outputs x ${red_size} reduced elements,
// strategy ${strategy} (lanes), ${index_t} indices.
// Program equations:
${equations}
// Why this kernel ends here: ${reason}
#define REDUCE(a, b) (${reduce_expr})

// The row strategy of a host that runs work in vector lanes (the C dialect). A row's elements
// are dealt to partial results, element r to lane r % lanes (the last chunk of a row may be
// shorter), so neighbouring elements never wait on each other's add; the lanes then combine
// pairwise, lane l with lane l + lanes / 2 and so on (the reduction reassociates, as XLA's
// do). Rows run ${rows} at a time with ${group_lanes} lanes each, in groups aligned on the row
// index: one core keeps more reads in flight from ${rows} rows than from one. The other rows
// (before the first group boundary of this thread's range and after the last) run one at a
// time with ${lanes} lanes; as ranges split on multiples of the group, a result never depends
// on the thread count. A row's values may be kept for the epilogue (rows one at a time).

// Elements [r0, r0 + n) of rows [o0, o0 + rows), each row into its `lanes` partial results;
// rows, lanes and n are constants once inlined, so the partials stay in registers.
ALWAYS_INLINE void ${name}_chunk(${params}, ${acc_t} *lane, const int lanes,
                                 const ${index_t} o0, const int rows, const ${index_t} r0,
                                 const ${index_t} n${keep_param}) {
  UNROLLED_LOOP
  for (int k = 0; k < rows; ++k) {
    const ${index_t} o = o0 + k;
    VECTOR_LOOP
    for (${index_t} l = 0; l < n; ++l) {
      const ${index_t} r = r0 + l;
      const ${index_t} i = o * ${red_size} + r;
${pre_body}
      lane[k * lanes + l] = REDUCE(lane[k * lanes + l], (${acc_t})${pre_value});
      ${keep_store}
    }
  }
}

// Rows [o0, o0 + rows) whole: every chunk, then per row its lanes combined, its output and
// its epilogue.
ALWAYS_INLINE void ${name}_rows(${params}, ${acc_t} *lane, const int lanes,
                                const ${index_t} o0, const int rows${keep_param}) {
  for (${index_t} r0 = 0; r0 + lanes <= ${red_size}; r0 += lanes)
    ${name}_chunk(${args}, lane, lanes, o0, rows, r0, lanes${keep_arg});
  if (${red_size} % lanes)
    ${name}_chunk(${args}, lane, lanes, o0, rows, ${red_size} - ${red_size} % lanes,
                  ${red_size} % lanes${keep_arg});
  UNROLLED_LOOP
  for (int k = 0; k < rows; ++k) {
    const ${index_t} o = o0 + k;
    ${acc_t} *part = lane + k * lanes;
    for (int w = lanes / 2; w > 0; w /= 2) {
      VECTOR_LOOP
      for (int l = 0; l < w; ++l) part[l] = REDUCE(part[l], part[l + w]);
    }
    ${acc_t} acc = part[0];
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

// One row (called before and after the groups: compiled once).
OUT_OF_LINE void ${name}_row(${params}, const ${index_t} o) {
  ${keep_decl}
  // An initialiser (not a loop) lets the compiler keep the lanes in registers.
  ${acc_t} lane[${lanes}] = {[0 ... ${lanes} - 1] = ${identity}};
  ${name}_rows(${args}, lane, ${lanes}, o, 1${keep_arg});
}

KERNEL void ${name}(${params}) {
  THREAD_RANGE(${index_t}, begin, end, ${out_size});
  ${index_t} o = begin;
  if (${rows} > 1) {
    for (; o < end && o % ${rows} != 0; ++o) ${name}_row(${args}, o);
    for (; o + ${rows} <= end; o += ${rows}) {
      ${keep_decl}
      ${acc_t} lane[${rows} * ${group_lanes}] = {[0 ... ${rows} * ${group_lanes} - 1] = ${identity}};
      ${name}_rows(${args}, lane, ${group_lanes}, o, ${rows}${keep_arg});
    }
  }
  for (; o < end; ++o) ${name}_row(${args}, o);
}
#undef REDUCE
