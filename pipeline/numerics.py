"""Pinned CPU numerics: the same numbers on any x86-64 CPU.

The math libraries pick their kernels per CPU (SSE, AVX2, AVX-512, FMA), and different kernels sum in
a different order, so unpinned CPU training gives other models on another machine. Measured on this
project's machines (AMD EPYC, AVX2): MKL's branch (``MKL_CBWR``) and torch's kernel set
(``ATEN_CPU_CAPABILITY``) each change a trained network, OpenBLAS's core type changes scipy's
eigendecomposition (LANML), and numpy's SIMD dispatch changes float32 ``log`` / ``tanh``.

`pin` fixes every one of those choices to code that every x86-64-v2 CPU runs (numpy 2.4's own floor),
and the thread counts to a number that does not depend on the machine. It must run before numpy,
torch or faiss load: ``pipeline/__init__.py`` calls it, so every stage (``stages/__init__.py``
imports ``pipeline`` first), every spawned worker and every test goes through it. faiss chooses its
SIMD level at run time, so `faiss` (below) is the one way this project imports it.

Environment:
- ``DML_THREADS``: threads per process for torch, OpenMP, MKL, OpenBLAS and faiss (default 1; the
  stages' worker processes get ``train.threads_per_worker`` through it). MKL's reproducibility holds
  for a fixed thread count, so results are identical across machines for the same value.
- ``DML_NATIVE_NUMERICS=1``: pin nothing but the threads (the libraries' fastest per-CPU kernels;
  numbers then depend on the CPU). The tests use it to show that the emulated CPUs do differ.
The GPU's own kernels are not affected (and are not bit-identical across GPU models).
"""

from __future__ import annotations

import os
import sys
import warnings

NATIVE_SWITCH = "DML_NATIVE_NUMERICS"
THREADS_VARIABLE = "DML_THREADS"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# library -> (variable, value): the kernel choice every x86-64 CPU makes the same way
PINNED = {
    "MKL_CBWR": "COMPATIBLE",  # MKL (torch's BLAS / LAPACK): conditional numerical reproducibility, SSE2 branch
    "ATEN_CPU_CAPABILITY": "default",  # torch's own CPU kernels: the generic build, not the AVX2 / AVX-512 ones
    "OPENBLAS_CORETYPE": "Nehalem",  # OpenBLAS in numpy, scipy and faiss: SSE4.2 kernels (all three accept it)
    # numpy's SIMD loops above its x86-64-v2 baseline (numpy 2.4 group names; absent ones are ignored)
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    "ONEDNN_MAX_CPU_ISA": "SSE41",  # oneDNN (torch's CPU convolutions)
}
_NUMERIC_MODULES = ("numpy", "torch", "scipy", "faiss")


def native() -> bool:
    return os.environ.get(NATIVE_SWITCH, "") not in ("", "0")


def threads() -> int:
    value = os.environ.get(THREADS_VARIABLE, "1")
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_VARIABLE}: must be a positive integer, got {value!r}")
    return int(value)


def pin() -> None:
    """Set the variables above (overriding the caller's: a different value is a different CPU path).
    Warns when a numeric library was loaded before, since it has then made its choice already."""
    loaded = [m for m in _NUMERIC_MODULES if m in sys.modules]
    if loaded and not native():
        warnings.warn(f"pipeline.numerics: {', '.join(loaded)} loaded before the CPU numerics were pinned; "
                      "import pipeline first", RuntimeWarning, stacklevel=2)
    n = str(threads())
    os.environ.update({k: n for k in THREAD_VARIABLES})
    if not native():
        os.environ.update(PINNED)


def settings() -> dict[str, str]:
    """What is in force in this process, for the reports."""
    keys = (*THREAD_VARIABLES, *(() if native() else PINNED))
    out = {k: os.environ.get(k, "") for k in keys}
    out["faiss SIMD level"] = "native" if native() else "NONE (faiss.SIMDConfig)"
    out[NATIVE_SWITCH] = "1" if native() else "0"
    return out


def faiss():
    """faiss with its SIMD level and thread count pinned (it dispatches per CPU at run time)."""
    import faiss as _faiss

    if not native():
        _faiss.SIMDConfig.set_level(_faiss.SIMDLevel_NONE)
    _faiss.omp_set_num_threads(threads())
    return _faiss
