"""cupyx of the CuPy stand-in: only cupyx.scipy.linalg."""
