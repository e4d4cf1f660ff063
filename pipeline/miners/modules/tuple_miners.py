"""Tuple miners that pytorch-metric-learning lacks, as its BaseMiner subclasses."""

from __future__ import annotations

import torch
from pytorch_metric_learning.miners import BaseMiner
from pytorch_metric_learning.utils import loss_and_miner_utils as lmu


def _dissimilarity(distance, embeddings, ref_emb) -> torch.Tensor:
    """The miner's distance matrix, negated when it is a similarity, so that smaller is always nearer."""
    dist = distance(embeddings, ref_emb)
    return -dist if distance.is_inverted else dist


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
        dist = _dissimilarity(self.distance, embeddings, ref_emb)
        nearest_negatives = dist.masked_fill(diffs == 0, float("inf")).argsort(dim=1)
        anchors, positives = torch.where(matches)
        rank = (matches.cumsum(dim=1) - 1)[anchors, positives]  # r: which positive of its anchor
        keep = rank < diffs.sum(dim=1)[anchors]
        anchors, positives, rank = anchors[keep], positives[keep], rank[keep]
        return anchors, positives, nearest_negatives[anchors, rank]


class TripletPerAnchorMiner(BaseMiner):
    """One triplet per anchor (Revisiting A.2): a positive and a negative drawn at random among candidates.

    ``rule``: ``random`` (any positive, any negative); ``semihard`` (eq. 20: negatives farther from the
    anchor than the drawn positive; an anchor without one is left out); ``softhard`` (eq. 21-22:
    positives farther than the anchor's nearest negative and negatives nearer than its farthest
    positive; where a set is empty, all positives / negatives). Anchors without a positive or a
    negative are left out. Draws use torch's global generator (seeded per run).
    """

    RULES = ("random", "semihard", "softhard")

    def __init__(self, rule: str, **kwargs):
        super().__init__(**kwargs)
        if rule not in self.RULES:
            raise ValueError(f"unknown triplet rule {rule!r} (valid: {', '.join(self.RULES)})")
        self.rule = rule

    def mine(self, embeddings, labels, ref_emb, ref_labels):
        matches, diffs = (m.bool() for m in lmu.get_matches_and_diffs(labels, ref_labels))
        dist = _dissimilarity(self.distance, embeddings, ref_emb)
        positives, negatives = matches, diffs
        if self.rule == "softhard":
            nearest_neg = dist.masked_fill(~diffs, float("inf")).amin(dim=1, keepdim=True)
            farthest_pos = dist.masked_fill(~matches, float("-inf")).amax(dim=1, keepdim=True)
            positives = _or_all(matches & (dist > nearest_neg), matches)
            negatives = _or_all(diffs & (dist < farthest_pos), diffs)
        anchors = torch.nonzero(positives.any(dim=1) & negatives.any(dim=1)).flatten()
        p = _draw(positives[anchors])
        negatives = negatives[anchors]
        if self.rule == "semihard":  # eq. 20: d(a, n) > d(a, p)
            negatives = negatives & (dist[anchors] > dist[anchors, p][:, None])
        ok = negatives.any(dim=1)
        return anchors[ok], p[ok], _draw(negatives[ok])


def _or_all(subset: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
    """Per row: `subset` where it has a candidate, else `full`."""
    return torch.where(subset.any(dim=1, keepdim=True), subset, full)


def _draw(candidates: torch.Tensor) -> torch.Tensor:
    """One column index per row, uniformly among the row's True entries (each row has one)."""
    if len(candidates) == 0:
        return torch.zeros(0, dtype=torch.long, device=candidates.device)
    return torch.multinomial(candidates.float(), 1).flatten()


class RhoSwitchMiner(BaseMiner):
    """rho-regularisation (Revisiting section 5, "R-" methods) around a triplet miner.

    With probability ``p_switch`` each mined triplet (a, p, n) becomes (a, a, p): the anchor is its own
    positive and its positive plays the negative, so the loss pushes a same-class sample away, which
    keeps intra-class variance (the authors' rho_distance miner does this with a random positive; the
    mined positive is one). In-batch mining only (the anchor must also be a reference)."""

    def __init__(self, miner: BaseMiner, p_switch: float, **kwargs):
        super().__init__(**kwargs)
        self.miner, self.p_switch = miner, p_switch

    def mine(self, embeddings, labels, ref_emb, ref_labels):
        a, p, n = self.miner.mine(embeddings, labels, ref_emb, ref_labels)
        switch = torch.rand(len(a), device=a.device) < self.p_switch
        return a, torch.where(switch, a, p), torch.where(switch, p, n)
