"""Pinned CPU numerics: the same numbers on any x86-64 CPU.

The math libraries pick their kernels per CPU (SSE, AVX2, AVX-512, FMA), and different kernels sum in
a different order, so unpinned CPU training gives other models on another machine. Measured on this
project's machines (AMD EPYC, AVX2): MKL's branch (``MKL_CBWR``) and torch's kernel set
(``ATEN_CPU_CAPABILITY``) each change a trained network, OpenBLAS's core type changes scipy's
eigendecomposition (LANML), and numpy's SIMD dispatch changes float32 ``log`` / ``tanh``.

One choice no setting reaches: torch computes float32 / float64 square roots (Adam's denominator,
``torch.cdist`` inside the Euclidean losses, ``Tensor.sqrt``) with MKL's vector math (``vmsSqrt``,
``vmdSqrt``), whose kernel refines an ``RSQRTPS`` estimate even under ``MKL_CBWR=COMPATIBLE``; that
instruction's low bits are left to the chip maker, so Intel, AMD and emulated CPUs round some square
roots 1 ulp apart, and a trained network drifts apart from the first Adam step (found on an Intel
AVX-512 machine against numbers made on an AMD EPYC; traced to ``RSQRTPS`` with gdb and confirmed under
qemu's emulated CPUs). `pin` therefore interposes four IEEE square roots (SQRTSS / SQRTSD: correctly
rounded, the same bits everywhere) for those MKL entry points: a tiny C library compiled on first use
with the machine's C compiler into ``DML_SHIM_DIR`` (default: the project's cache folder, pipeline/infra/userdirs.py) and loaded with
``RTLD_GLOBAL`` before torch, so torch's calls bind to it. Without a C compiler pinning warns and goes
on without it (the reports record which square root was in force). MKL's float ``acos``, ``asin``,
``atan``, ``log10`` and double ``acos``, ``asin``, ``atan``, ``tan`` were also seen to differ between
CPUs; none of the default runs uses them (the angular losses' ``atan`` would).

`pin` fixes every one of those choices to code that every x86-64-v2 CPU runs (numpy 2.4's own floor),
and the thread counts to a number that does not depend on the machine. It must run before numpy,
torch or faiss load: ``pipeline/__init__.py`` calls it, so every stage (``stages/__init__.py``
imports ``pipeline`` first), every spawned worker and every test goes through it. faiss is the exception
that needs no pinning: `faiss` (below), the one way this project imports it, lets it run its fastest
kernels, because the nearest-neighbour search re-ranks faiss's float32 candidates exactly
(pipeline/evaluation/knn.py) and k-means is computed without it (pipeline/evaluation/clustering.py).

Environment:
- ``DML_THREADS``: threads per process for torch, OpenMP, MKL, OpenBLAS and faiss (default 1; the
  stages' worker processes get ``train.threads_per_worker`` through it). MKL's reproducibility holds
  for a fixed thread count, so results are identical across machines for the same value.
- ``DML_FAISS_SIMD``, ``DML_FAISS_OPENBLAS_CORETYPE``: faiss's SIMD level and its OpenBLAS's core type
  instead of the CPU's own (emulating another CPU; tests/test_numerics.py shows the outputs do not change).
- ``DML_NATIVE_NUMERICS=1``: pin nothing but the threads (the libraries' fastest per-CPU kernels;
  numbers then depend on the CPU). The tests use it to show that the emulated CPUs do differ.
The GPU's own kernels are not affected (and are not bit-identical across GPU models).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from pipeline.infra import userdirs

NATIVE_SWITCH = "DML_NATIVE_NUMERICS"
THREADS_VARIABLE = "DML_THREADS"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# faiss runs the CPU's own kernels; these make it take another CPU's (to show that nothing depends on them)
FAISS_SIMD_VARIABLE = "DML_FAISS_SIMD"  # a faiss SIMDLevel name: NONE, AVX2, AVX512, AVX512_SPR
FAISS_CORETYPE_VARIABLE = "DML_FAISS_OPENBLAS_CORETYPE"  # faiss's own OpenBLAS core type, e.g. Sandybridge

# library -> (variable, value): the kernel choice every x86-64 CPU makes the same way
PINNED = {
    "MKL_CBWR": "COMPATIBLE",  # MKL (torch's BLAS / LAPACK): conditional numerical reproducibility, SSE2 branch
    "ATEN_CPU_CAPABILITY": "default",  # torch's own CPU kernels: the generic build, not the AVX2 / AVX-512 ones
    "OPENBLAS_CORETYPE": "Nehalem",  # OpenBLAS in numpy and scipy: SSE4.2 kernels (faiss: see `faiss`)
    # numpy's SIMD loops above its x86-64-v2 baseline (numpy 2.4 group names; absent ones are ignored)
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    "ONEDNN_MAX_CPU_ISA": "SSE41",  # oneDNN (torch's CPU convolutions)
}
_NUMERIC_MODULES = ("numpy", "torch", "scipy", "faiss")

# MKL VML's square roots, as torch calls them (LP64: MKL_INT is int; the mode argument is ignored)
SQRT_SHIM = r"""
#include <math.h>
#include <stdint.h>
void vmsSqrt(const int n, const float *a, float *r, int64_t mode) { (void)mode; for (int i = 0; i < n; i++) r[i] = sqrtf(a[i]); }
void vmdSqrt(const int n, const double *a, double *r, int64_t mode) { (void)mode; for (int i = 0; i < n; i++) r[i] = sqrt(a[i]); }
void vsSqrt(const int n, const float *a, float *r) { for (int i = 0; i < n; i++) r[i] = sqrtf(a[i]); }
void vdSqrt(const int n, const double *a, double *r) { for (int i = 0; i < n; i++) r[i] = sqrt(a[i]); }
"""
SHIM_FLAGS = ["-O2", "-fno-math-errno", "-msse2", "-mno-avx", "-shared", "-fPIC"]
_sqrt_status = "MKL VML (not pinned)"


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
        warnings.warn(
            f"pipeline.numerics: {', '.join(loaded)} loaded before the CPU numerics were pinned; import pipeline first",
            RuntimeWarning,
            stacklevel=2,
        )
    n = str(threads())
    os.environ.update({k: n for k in THREAD_VARIABLES})
    if not native():
        os.environ.update(PINNED)
        _interpose_sqrt()


def _interpose_sqrt() -> None:
    """Load the IEEE square roots for MKL VML's (module docstring), compiling them on first use."""
    global _sqrt_status
    if not (sys.platform.startswith("linux") and platform.machine() == "x86_64"):
        return
    library, problem = build_library("ieee_sqrt", SQRT_SHIM, SHIM_FLAGS)
    if library is None:
        _sqrt_status = f"MKL VML ({problem}: square roots may differ between CPUs)"
        warnings.warn(
            f"pipeline.numerics: {problem}, so torch's square roots depend on the CPU (install gcc to pin them)",
            RuntimeWarning,
            stacklevel=3,
        )
        return
    ctypes.CDLL(str(library), mode=os.RTLD_GLOBAL)
    _sqrt_status = "IEEE (interposed for MKL VML)"


def build_library(name: str, source: str, flags: Sequence[str]) -> tuple[Path | None, str]:
    """The shared library compiled from the C `source` with `flags` (``-shared -fPIC`` among them), cached as
    ``<name>_<digest of source and flags>.so`` in ``DML_SHIM_DIR`` (default: the cache folder) and compiled on
    first use: (its path, "") or (None, what went wrong)."""
    digest = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:12]
    folder = Path(os.environ["DML_SHIM_DIR"]) if os.environ.get("DML_SHIM_DIR") else userdirs.cache_dir()
    library = folder / f"{name}_{digest}.so"
    if library.is_file():
        return library, ""
    problem = _compile(library, source, flags)
    return (None, problem) if problem else (library, "")


def _compile(library: Path, source: str, flags: Sequence[str]) -> str:
    """Compile `source` into `library` (atomically: a parallel worker sees the whole file or none, and
    processes that build at once each compile into a name of their own, then move it into place); return
    what went wrong, or "" when it was built."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return f"no C compiler (cc) to build {library.name}"
    library.parent.mkdir(parents=True, exist_ok=True)
    unique = f"{library.stem}.{os.getpid()}.{os.urandom(4).hex()}"  # with_suffix would cut at its dots
    code, partial = library.parent / f"{unique}.c", library.parent / f"{unique}.so"
    code.write_text(source)
    try:
        subprocess.run([compiler, *flags, str(code), "-o", str(partial)], check=True, capture_output=True)
        os.replace(partial, library)
        return ""
    except (OSError, subprocess.CalledProcessError) as err:
        return f"the C compiler {compiler!r} failed ({type(err).__name__})"
    finally:
        code.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)


def settings() -> dict[str, str]:
    """What is in force in this process, for the reports."""
    keys = (*THREAD_VARIABLES, *(() if native() else PINNED))
    out = {k: os.environ.get(k, "") for k in keys}
    out["faiss"] = "native kernels, candidates re-ranked exactly in float64"
    out["torch sqrt"] = _sqrt_status
    out[NATIVE_SWITCH] = "1" if native() else "0"
    return out


def faiss():
    """faiss at the CPU's own speed: its SIMD level and its own OpenBLAS's kernels are left to the CPU, since
    nothing it returns is used before an exact re-ranking (pipeline/evaluation/knn.py), so its kernels cannot
    change a result. Its thread count is the process's (``DML_THREADS``)."""
    if "faiss" not in sys.modules:  # faiss's bundled OpenBLAS reads its core type once, when it loads
        pinned = os.environ.pop("OPENBLAS_CORETYPE", None)
        if os.environ.get(FAISS_CORETYPE_VARIABLE):
            os.environ["OPENBLAS_CORETYPE"] = os.environ[FAISS_CORETYPE_VARIABLE]
        try:
            import faiss as _faiss  # noqa: F401
        finally:
            if pinned is not None:
                os.environ["OPENBLAS_CORETYPE"] = pinned
    import faiss as _faiss

    level = os.environ.get(FAISS_SIMD_VARIABLE)
    if level:  # another CPU's kernels (tests emulate CPUs with it; nothing faiss returns may then change)
        if not hasattr(_faiss, f"SIMDLevel_{level}"):
            raise ValueError(f"{FAISS_SIMD_VARIABLE}={level!r}: not a faiss SIMD level (e.g. NONE, AVX2, AVX512)")
        _faiss.SIMDConfig.set_level(getattr(_faiss, f"SIMDLevel_{level}"))
    _faiss.omp_set_num_threads(threads())
    return _faiss
