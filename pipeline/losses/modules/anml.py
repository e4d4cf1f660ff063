"""ANML's deep losses (ANML section 6): DANML (eq. 22) and the improved Lifted structure
(eq. 25) and N-pair (eq. 31) losses of Table 3.

All three are built from one log-sum-exp "radius" of a set of numbers,

    g_gamma(a; lam) = (1/gamma) log( e^{gamma lam} + sum_i e^{gamma a_i} )      (ANML Fig. 7)

and its mean form (the log-exp mean b of ANML eq. 12, Lemma 1), which divides
the sum by (n + 1) before the log. For gamma -> +inf, g tends to max(a, lam);
for gamma -> -inf, to min(a, lam) (Lemma 1).

DANML (eq. 22), per anchor i with similar set S_i and dissimilar set D_i:

    l( -1/g1 log[ (e^{-g1 lam1} + sum_S e^{-g1 d_ij}) / (|S_i| + 1) ]
       +1/g2 log[ (e^{-g2 lam2} + sum_D e^{-g2 d_il}) / (|D_i| + 1) ] ),  g1 < 0 < g2,

a soft maximum of the similar distances (radius of A_i, at least lam1) minus a
soft minimum of the dissimilar ones (radius of B_i, at most lam2), through the
logistic loss l(x) = log(1 + e^x). Choice: the distance on L2-normalised
embeddings is the cosine distance d = 1 - cos, so the radii lam1, lam2 in the
paper's range 0.5-0.65 match the multi-similarity margin (Proposition 7).

These are pytorch-metric-learning losses (GenericPairLoss), so they accept
``ref_emb``/``ref_labels`` like the library's own.
"""

from __future__ import annotations

import math

import torch
from pytorch_metric_learning import distances, reducers
from pytorch_metric_learning.losses import GenericPairLoss


def log_sum_exp_radius(
    values: torch.Tensor, mask: torch.Tensor, gamma: float, lam: float | None, mean: bool = False
) -> torch.Tensor:
    """Per row: (1/gamma) log( e^{gamma lam} + sum_{mask} e^{gamma v} ), divided inside the log by
    (count + 1) when `mean` (ANML eq. 12/22); lam=None drops the constant term (and the +1)."""
    scaled = (gamma * values).masked_fill(~mask, -math.inf)
    count = mask.sum(dim=1).to(values.dtype)
    if lam is not None:
        scaled = torch.cat([scaled, torch.full_like(scaled[:, :1], gamma * lam)], dim=1)
        count = count + 1
    out = torch.logsumexp(scaled, dim=1)
    if mean:
        out = out - torch.log(count)
    return out / gamma


class _MeanOverAnchors(GenericPairLoss):
    """A per-anchor loss averaged over all anchors (the sum over i of eq. 22 / 25, scaled)."""

    def get_default_reducer(self):
        return reducers.MeanReducer()


class DANMLLoss(_MeanOverAnchors):
    """ANML eq. 22 on cosine distance; ``outer`` is the logistic loss or, for Prop. 7, the identity."""

    def __init__(self, gamma1: float, gamma2: float, lambda1: float, lambda2: float, outer: str = "logistic", **kw):
        if not gamma1 < 0 < gamma2:
            raise ValueError("DANML needs gamma1 < 0 < gamma2")
        super().__init__(mat_based_loss=True, distance=distances.CosineSimilarity(), **kw)
        self.gamma1, self.gamma2, self.lambda1, self.lambda2, self.outer = gamma1, gamma2, lambda1, lambda2, outer

    def radius_gap(self, d: torch.Tensor, pos: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
        """Per anchor: soft max of similar distances minus soft min of dissimilar ones (eq. 22's argument)."""
        similar = log_sum_exp_radius(d, pos, -self.gamma1, self.lambda1, mean=True)  # -1/g1 log mean e^{-g1 d}
        dissimilar = log_sum_exp_radius(d, neg, -self.gamma2, self.lambda2, mean=True)
        return similar - dissimilar

    def _compute_loss(self, mat, pos_mask, neg_mask):
        gap = self.radius_gap(1.0 - mat, pos_mask.bool(), neg_mask.bool())
        losses = torch.nn.functional.softplus(gap) if self.outer == "logistic" else gap
        return {"loss": {"losses": losses, "indices": _anchor_indices(mat), "reduction_type": "element"}}


class ImprovedLiftedLoss(_MeanOverAnchors):
    """ANML eq. 25: [ 1/g1 log(e^{-g1 lam1} + sum_pos e^{-g1 S}) + 1/g2 log(e^{g2 lam2} + sum_neg e^{g2 S}) + m ]_+,
    per anchor, on cosine similarity S. With g1 = g2 = 1 and no lam terms it is the Lifted structure
    loss of eq. 23 (pytorch-metric-learning's GeneralizedLiftedStructureLoss)."""

    def __init__(self, gamma1: float, gamma2: float, lambda1: float | None, lambda2: float | None, margin: float, **kw):
        super().__init__(mat_based_loss=True, distance=distances.CosineSimilarity(), **kw)
        self.gamma1, self.gamma2, self.lambda1, self.lambda2, self.margin = gamma1, gamma2, lambda1, lambda2, margin

    def _compute_loss(self, mat, pos_mask, neg_mask):
        pos = -log_sum_exp_radius(mat, pos_mask.bool(), -self.gamma1, self.lambda1)
        neg = log_sum_exp_radius(mat, neg_mask.bool(), self.gamma2, self.lambda2)
        losses = torch.relu(pos + neg + self.margin)
        return {"loss": {"losses": losses, "indices": _anchor_indices(mat), "reduction_type": "element"}}


class ImprovedNPairLoss(torch.nn.Module):
    """ANML eq. 31: (1/(N gamma)) sum_i log(1 + sum_{j != i} e^{gamma(-lam + f_i.f_j+ - f_i.f_i+)}).

    One (anchor, positive) pair per class of the batch (its first two samples), as the N-pair
    loss (Sohn 2016, eq. 30 = gamma 1, lam 0) is defined on N pairs of N different classes.
    """

    def __init__(self, gamma: float, lam: float):
        super().__init__()
        self.gamma, self.lam = gamma, lam

    def forward(self, embeddings, labels, indices_tuple=None):
        anchors, positives = first_pairs(labels)
        if len(anchors) < 2:
            return embeddings.sum() * 0.0
        logits = embeddings[anchors] @ embeddings[positives].T  # f_i . f_j+
        v = logits - logits.diag()[:, None] - self.lam
        off_diagonal = ~torch.eye(len(anchors), dtype=torch.bool, device=logits.device)
        return log_sum_exp_radius(v, off_diagonal, self.gamma, 0.0).mean()


def first_pairs(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For every class with at least two samples in the batch: the indices of its first two."""
    anchors, positives = [], []
    for c in torch.unique(labels):
        idx = torch.nonzero(labels == c).flatten()
        if len(idx) >= 2:
            anchors.append(idx[0])
            positives.append(idx[1])
    if not anchors:
        return torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long)
    return torch.stack(anchors), torch.stack(positives)


def _anchor_indices(mat: torch.Tensor) -> torch.Tensor:
    """Per-anchor loss indices for pytorch-metric-learning's element reducer."""
    return torch.arange(mat.size(0), device=mat.device)
