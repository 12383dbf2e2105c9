"""Loaded by pytest before the test modules (so before numpy loads OpenBLAS).

The references multiply small matrices (tens of rows): OpenBLAS's worker threads only add
overhead there, and on a busy 2-core CI machine they spin against other processes — the SmolLM2
reference took 87 s instead of 14.5 s for the same work with 2 BLAS threads under load.
Set OPENBLAS_NUM_THREADS yourself to override."""
import os

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
