"""The ``report`` section (the report and pictures stages) and the papers' claims it tests."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from pydantic import Field

from pipeline.config.loader import Section
from pipeline.infra.schema import section


@section(frozen=True)
class Claim:
    """A paper's claim that run `better` beats run `base`, measured ``where``: ``runs`` (the MLRC fold x seed models)
    or ``poc`` (the 2-D proof of concept's seeds, CCP Fig. 2). Declared by a family's record, or for the baselines
    in ``report.claims``."""

    text: str
    source: str
    base: str
    better: str
    where: Literal["runs", "poc"] = "runs"


@section
class ReportConfig:
    decimals: int = Field(2, ge=0, le=6)
    # rows in run order ("none": baselines, then per CCP loss its batch / Loss-Proxy / CCP rows) or by a metric
    sort_by: Literal["none", "precision_at_1", "r_precision", "map_at_r", "map_at_c", "nmi", "f1"] = "none"
    # runs whose singular value spectra share one figure (each must be trained: experiment.methods, ccp, profs)
    spectrum_runs: list[str] = field(default_factory=lambda: ["margin_d", "r_margin_d", "ms", "c2_batch", "c2_ccp"])
    # resamples of the claims' cluster bootstrap over folds and test classes (pipeline/reporting/claims.py)
    bootstrap_samples: int = Field(10000, ge=100)
    # the convergence rule (pipeline/reporting/rules.py unconverged): a study converged when its last trials raised its
    # best by at most this many sigma, the measured noise of one trial's score (1: the 1-SE rule)
    convergence_sigmas: float = Field(1.0, gt=0)
    # other data sets' claims tables drawn beside this one in figures/claims_forest.png ("<name>=<claims.csv>";
    # a list, so that a data set's conf can clear it)
    companions: list[Annotated[str, Field(pattern=r"^[\w-]+=.+\.csv$")]] = field(default_factory=list)
    # the papers' claims about the baselines (`better` beats `base`, claims.md); a family declares its own claims
    # in its record (pipeline/families)
    claims: list[Claim] = field(default_factory=list)
    # pictures (stage pictures): fixed test queries and their top-k per run; classes on the t-SNE map
    retrieval_queries: int = Field(6, ge=1)
    retrieval_k: int = Field(5, ge=1)
    map_classes: int = Field(12, ge=2)


REPORT = Section("report", ReportConfig, field(default_factory=ReportConfig))
