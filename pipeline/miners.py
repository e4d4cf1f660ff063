"""Tuple miners that pytorch-metric-learning lacks, as its BaseMiner subclasses."""

from __future__ import annotations

import torch
from pytorch_metric_learning.miners import BaseMiner
from pytorch_metric_learning.utils import loss_and_miner_utils as lmu


class OneNegativePerPositiveMiner(BaseMiner):
    """Each anchor gets as many negatives as it has positives: its nearest other-class references.

    PROFS section 5.3 (after Wu et al. 2017): "we sample one negative pair for
    each positive pair ... each class representative should have the same number
    of its corresponding positive pairs and hard negative pairs". The r-th
    positive of an anchor (in reference order) is matched with its r-th nearest
    negative, giving triplets (a, p, n); pair losses take them as the pairs
    (a, p) and (a, n). An anchor with more positives than negatives keeps only
    as many positives as it has negatives.
    """

    def mine(self, embeddings, labels, ref_emb, ref_labels):
        matches, diffs = lmu.get_matches_and_diffs(labels, ref_labels)
        dist = self.distance(embeddings, ref_emb)
        if self.distance.is_inverted:  # a similarity: larger is nearer
            dist = -dist
        nearest_negatives = dist.masked_fill(diffs == 0, float("inf")).argsort(dim=1)
        anchors, positives = torch.where(matches)
        rank = (matches.cumsum(dim=1) - 1)[anchors, positives]  # r: which positive of its anchor
        keep = rank < diffs.sum(dim=1)[anchors]
        anchors, positives, rank = anchors[keep], positives[keep], rank[keep]
        return anchors, positives, nearest_negatives[anchors, rank]
