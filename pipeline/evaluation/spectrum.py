"""Spectral decay rho(Phi) of an embedding (Revisiting section 5)."""

from __future__ import annotations

import numpy as np


def singular_value_spectrum(x: np.ndarray) -> np.ndarray:
    """Singular values of the embedding matrix (rows = samples), largest first, normalised to sum 1."""
    s = np.linalg.svd(np.asarray(x, dtype=np.float64), compute_uv=False)
    return s / s.sum()


def spectral_decay(x: np.ndarray) -> float:
    """rho(Phi) = KL(U || S): the KL divergence from the uniform distribution U over the D dimensions to
    the normalised singular value spectrum S. 0 for a flat spectrum; large when few directions carry
    the embedding (compression). A zero singular value makes it infinite."""
    spectrum = singular_value_spectrum(x)
    uniform = 1.0 / len(spectrum)
    with np.errstate(divide="ignore"):
        return float(np.sum(uniform * (np.log(uniform) - np.log(spectrum))))
