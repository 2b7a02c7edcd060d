// ${name}: fused elementwise kernel over shape ${shape} (${size} elements, ${index_t} indices),
// four elements per iteration: contiguous 32-bit operands move as one 16-byte vector each.
// Program equations:
${equations}
// Why this kernel ends here: ${reason}
KERNEL void ${name}(${params}) {
  GRID_STRIDE_LOOP(${index_t}, q, ${quads}) {
    const ${index_t} i0 = q * 4;
${loads}
${body}
${stores}
  }
}
