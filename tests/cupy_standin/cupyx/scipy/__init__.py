"""cupyx.scipy of the CuPy stand-in."""
