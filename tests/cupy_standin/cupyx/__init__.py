"""cupyx of the CuPy stand-in: cupyx.scipy.linalg and cupyx.cusolver.check_availability."""
