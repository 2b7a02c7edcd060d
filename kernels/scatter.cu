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
#elif ${cas}
// One thread per update element; colliding updates combine in a compare-and-swap loop on the
// ${word_t} word holding the element (its lane starts at bit `shift`; the other lanes are
// written back unchanged). Colliding updates combine in the order they land in, as in XLA's
// GPU scatter; ${combiner} on ${ctype} is order-free unless it rounds (float products and
// differences), where only the last bit may differ between runs.
INLINE void ${name}_combine(GLOBAL ${ctype} *p, const ${ctype} b) {
  const u32 byte = (u32)((size_t)p % sizeof(${word_t}));
  GLOBAL ${word_t} *word = (GLOBAL ${word_t} *)((GLOBAL u8 *)p - byte);
  const u32 shift = byte * 8;
  const ${word_t} lane = (${word_t})${lane_mask} << shift;
  ${word_t} old = *word, assumed;
  do {
    assumed = old;
    const ${ctype} a = ${from_word};
${cas_body}
    old = ATOMIC_CAS_${word_bits}(word, assumed, (assumed & ~lane) | ((${to_word} << shift) & lane));
  } while (old != assumed);
}

KERNEL void ${name}(${params}) {
  GRID_STRIDE_LOOP(${index_t}, u, ${num_updates}) {
    const ${index_t} t = ${name}_target(${index_args}, u);
    if (t >= 0) ${name}_combine(&out[t], ${update_value});
  }
}
#elif ${owner}
// `set` in three launches over the updates, never over the operand times the updates:
// ${name}_init marks every element unclaimed, ${name}_claim lets each update claim its element
// with an atomic max of its position (the last update in order wins, as on the NumPy backend
// and XLA's serial scatter), and ${name} stores each winning update.
KERNEL void ${name}_init(${params}) {
  GRID_STRIDE_LOOP(${index_t}, t, ${operand_size}) {
    owner[t] = (${owner_t})-1;
  }
}

KERNEL void ${name}_claim(${params}) {
  GRID_STRIDE_LOOP(${index_t}, u, ${num_updates}) {
    const ${index_t} t = ${name}_target(${index_args}, u);
    if (t >= 0) ATOMIC_MAX_${owner_bits}(&owner[t], u);
  }
}

KERNEL void ${name}(${params}) {
  GRID_STRIDE_LOOP(${index_t}, u, ${num_updates}) {
    const ${index_t} t = ${name}_target(${index_args}, u);
    if (t >= 0 && owner[t] == (${owner_t})u) out[t] = updates[u];
  }
}
#else
// Deterministic: one thread per operand element scans the updates in order, so colliding
// updates apply in index order (sums and products round in a fixed order, and scatter_apply
// applies its function once per hit). Costs operand size x updates: only float combiners asked
// to be deterministic (GPUARR_DETERMINISTIC_SCATTER=1), complex and 16-bit floats come here.
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
