"""Quadruplet loss (Chen et al. 2017; Revisiting supplement eq. 14), which pytorch-metric-learning lacks."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from pytorch_metric_learning.utils import loss_and_miner_utils as lmu


class QuadrupletLoss(torch.nn.Module):
    """mean [d(a,p) - d(a,n) + gamma1]_+ + mean [d(a,p) - d(n,l) + gamma2]_+ (Euclidean).

    The first term runs over the triplets (a, p, n) (mined, e.g. distance-weighted as in Revisiting,
    or all); the second over every further sample l whose class is neither a's nor n's. Choice: the
    second term follows Chen et al. 2017 (the positive distance against a negative pair not involving
    the anchor); the supplement's printed eq. 14 has d(i,k) where that paper has d(i,j).
    """

    def __init__(self, margin1: float = 1.0, margin2: float = 0.5):
        super().__init__()
        self.margin1, self.margin2 = margin1, margin2

    def forward(self, embeddings, labels, indices_tuple=None):
        a, p, n = indices_tuple if indices_tuple is not None else lmu.get_all_triplets_indices(labels)
        if len(a) == 0:
            return embeddings.sum() * 0
        d = torch.cdist(embeddings, embeddings)
        d_ap = d[a, p]
        triplet = F.relu(d_ap - d[a, n] + self.margin1).mean()
        others = (labels[None, :] != labels[a][:, None]) & (labels[None, :] != labels[n][:, None])  # (T, B): l
        pair = F.relu(d_ap[:, None] - d[n] + self.margin2)
        return triplet + (pair * others).sum() / others.sum().clamp(min=1)
