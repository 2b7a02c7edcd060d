// ${name}: scatter-${combiner} of ${num_updates} update elements into ${operand_size} elements
// (mode ${mode}, ${variant}), ${index_t} indices.
// Program equations:
${equations}
// Why this kernel ends here: ${reason}

// Where update element u lands in the operand, or -1 when it is dropped (out of bounds).
INLINE ${index_t} ${name}_target(${index_params}, ${index_t} u) {
  ${index_t} target = 0;
  int ok = 1;
${target_body}
  return ok ? target : (${index_t})-1;
}

#if ${atomic}
// One thread per update element; colliding updates combine with atomic adds.
KERNEL void ${name}(${params}) {
  GRID_STRIDE_LOOP(${index_t}, u, ${num_updates}) {
    const ${index_t} t = ${name}_target(${index_args}, u);
    if (t >= 0) ${atomic_add}(&out[t], updates[u]);
  }
}
#else
// Deterministic: one thread per operand element scans the updates in order, so colliding
// updates apply in index order (the last `set` wins, sums add in a fixed order, and
// scatter_apply applies its function once per hit).
KERNEL void ${name}(${params}) {
  GRID_STRIDE_LOOP(${index_t}, t, ${operand_size}) {
    ${ctype} value = out[t];
    for (${index_t} u = 0; u < ${num_updates}; ++u) {
      if (${name}_target(${index_args}, u) == t) {
${combine_body}
      }
    }
    out[t] = value;
  }
}
#endif
