"""The papers' names for our run ids (C2-CCP, C2-Loss-Proxy, ProxyAnchor, Margin (D), MS-PROFS-HNCM ...).

Tables and figures show the paper's name with the run id beside it, so a reader can match a row to
the papers and to params.yaml / dvc.yaml. A run with no paper name (one a user added) shows its id.
"""

from __future__ import annotations

from pipeline.runs import parse_run

BASELINES = {
    "ms": "MS",
    "proxy_anchor": "ProxyAnchor",
    "danml": "DANML",
    "lifted": "Lifted",
    "anml_lifted": "ANML-Lifted",
    "npair": "N-pair",
    "anml_npair": "ANML-N-pair",
    "softtriple": "SoftTriple-S",
    "softtriple_l": "SoftTriple-L",
    "proxy_nca": "ProxyNCA",
    "proxy_nca_pp": "ProxyNCA++",
    "c1_xbm": "C1-XBM-S",
    "c1_xbm_l": "C1-XBM-L",
    "contrastive_d": "Contrastive (D)",
    "r_contrastive_d": "R-Contrastive (D)",
    "triplet_d": "Triplet (D)",
    "r_triplet_d": "R-Triplet (D)",
    "triplet_r": "Triplet (R)",
    "triplet_s": "Triplet (S)",
    "triplet_h": "Triplet (H)",
    "margin_d": "Margin (D)",
    "r_margin_d": "R-Margin (D)",
    "margin_d_b06": "Margin (D, β=0.6)",
    "r_margin_d_b06": "R-Margin (D, β=0.6)",
    "margin_d_spc2": "Margin (D), SPC-2",
    "margin_d_spc8": "Margin (D), SPC-8",
    "margin_d_random_class": "Margin (D), random classes",
    "quadruplet_d": "Quadruplet (D)",
    "snr_d": "SNR (D)",
    "r_snr_d": "R-SNR (D)",
    "angular": "Angular",
    "arcface": "ArcFace",
    "genlifted": "GenLifted",
    "histogram": "Histogram",
    "softmax": "Softmax",
}


REFERENCES = {"backbone": "Backbone features, no training"}  # the reference row (pipeline/evaluation/backbone.py)


def paper_name(run: str) -> str:
    """The papers' name of run id `run` (the id itself when there is none)."""
    if run in BASELINES or run in REFERENCES:
        return BASELINES.get(run) or REFERENCES[run]
    parsed = parse_run(run)
    if parsed:  # the family's names (pipeline/families)
        family, loss, variant = parsed
        return family.variants[variant].format(family.losses[loss])
    return run


def label(run: str, latex: bool = False) -> str:
    """'C2-CCP (`c2_ccp`)' in markdown, 'C2-CCP (c2\\_ccp)' in LaTeX."""
    if latex:
        return f"{paper_name(run)} ({run})".replace("_", r"\_").replace("β", r"$\beta$")
    return f"{paper_name(run)} (`{run}`)"
