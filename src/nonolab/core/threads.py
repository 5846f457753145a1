"""Thread limits for rule scripts. Import this before numpy/scipy (it imports neither)."""

from __future__ import annotations

import os

BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def limit_blas_threads(n: int) -> None:
    """Set the BLAS/OpenMP thread variables to ``n`` unless the environment already sets them.

    Returns nothing; only effective before numpy is first imported in the process.
    """
    for var in BLAS_THREAD_VARS:
        os.environ.setdefault(var, str(n))
