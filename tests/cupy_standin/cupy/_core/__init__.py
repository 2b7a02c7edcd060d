"""The array type and the device operations behind it (CuPy's cupy/_core)."""
