"""Backends that run code: the NumPy backend, NVRTC, OpenCL (PoCL) and CUDA."""
