// ${name}: fused elementwise kernel over shape ${shape} (${size} elements, ${index_t} indices).
// Program equations:
${equations}
// Why this kernel ends here: ${reason}
KERNEL void ${name}(${params}) {${stream_open}
  GRID_STRIDE_LOOP(${index_t}, i, ${size}) {
${body}
  }${stream_close}
}
