"""The four pair losses CCP is run with (CCP section 5.1), from pytorch-metric-learning.

Each works both on in-batch pairs, ``loss(emb, labels)``, and against
references (proxies or anchor samples), ``loss(emb, labels, ref_emb=..., ref_labels=...)``,
where the batch samples are the anchors and every reference is a positive
(same class) or a negative.

- ``c1``: contrastive loss on cosine similarity as in XBM (CCP supplement):
  (1 - s) for positives, (s - m)_+ for negatives.
- ``c2``: contrastive loss with positive margin, the chance-constraint surrogate
  of CCP eq. 4.2, (y_ij (d_ij - beta) + alpha)_+ on Euclidean distance:
  positives (d - (beta - alpha))_+, negatives ((beta + alpha) - d)_+.
- ``ms``: multi-similarity loss (Wang et al. 2019, eq. 7), all pairs, no mining.
- ``triplet``: triplet margin loss on Euclidean distance, all triplets, no mining.

Embeddings reach the losses already normalised by the model (Lipschitz, L2 or
none), so the Euclidean losses do not normalise again. ``similarity`` chooses
what C1 and MS call the cosine: ``dot``, the dot product of the normalised
embeddings (the authors' release: with the Lipschitz normalisation a vector
inside the unit ball keeps its length), or ``cosine``, which normalises again.

pytorch-metric-learning reduces the positive and the negative terms of the
contrastive losses separately and adds them. ``reducer``:
- ``release`` (the authors' release, per loss): C2 and triplet average over the
  non-zero terms; C1 sums all terms and divides by the number of anchors (the
  batch); MS averages over anchors;
- ``mean``: the plain mean over pairs (triplets; MS: anchors), the expectation
  of CCP eq. 4.11;
- ``avg_nonzero``: the mean over non-zero terms for every loss.
"""

from __future__ import annotations

import torch
from pytorch_metric_learning import distances, losses, reducers
from pytorch_metric_learning.utils import loss_and_miner_utils as lmu

PAIR_LOSSES = ("c1", "c2", "ms", "triplet")


def all_triplet_indices(labels: torch.Tensor, ref_labels: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Every (anchor, positive, negative) triplet of `labels` against `ref_labels`.

    The same triplets in the same (lexicographic) order as pytorch-metric-learning's
    ``get_all_triplets_indices``, so losses come out bit for bit the same, but built
    from the (anchor, positive) pairs in O(pairs x refs) memory instead of the
    library's O(batch x refs^2) mask: against the 1,708 proxies of an emoji fold
    (427 classes x 4) that is 0.2 M entries per step instead of 93 M. As in the
    library, an anchor is not its own positive when `ref_labels` is `labels`.
    """
    matches, diffs = lmu.get_matches_and_diffs(labels, ref_labels)
    anchor, positive = torch.where(matches)  # (a, p) in lexicographic order
    pair, negative = torch.where(diffs[anchor])  # per pair, negatives in ascending order
    return anchor[pair], positive[pair], negative


class AllTripletMarginLoss(losses.TripletMarginLoss):
    """pytorch-metric-learning's triplet margin loss over all triplets, indexed by `all_triplet_indices`."""

    def compute_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        if indices_tuple is None:
            indices_tuple = all_triplet_indices(labels, ref_labels)
        return super().compute_loss(embeddings, labels, indices_tuple, ref_emb, ref_labels)


class PerAnchorSumReducer(reducers.MeanReducer):
    """The sum of the pair (or element) losses divided by the number of anchors, i.e. the batch: the
    release's C1 reduction, ``(sum_pos + sum_neg) / n``."""

    def element_reduction(self, losses, loss_indices, embeddings, labels):
        return torch.sum(losses) / len(embeddings)

    pos_pair_reduction = neg_pair_reduction = triplet_reduction = element_reduction


RELEASE_REDUCERS = {
    "c1": PerAnchorSumReducer,
    "c2": reducers.AvgNonZeroReducer,
    "ms": reducers.MeanReducer,
    "triplet": reducers.AvgNonZeroReducer,
}


def _reducer(loss: str, name: str):
    if name == "release":
        return RELEASE_REDUCERS[loss]()
    return reducers.MeanReducer() if name == "mean" else reducers.AvgNonZeroReducer()


def build_pair_loss(name: str, cfg, reducer: str = "release", similarity: str = "dot"):
    """A pytorch-metric-learning loss for `name` with its margins from `cfg` (the ccp section)."""
    if name not in PAIR_LOSSES:
        raise ValueError(f"unknown pair loss {name!r} (valid: {', '.join(PAIR_LOSSES)})")
    euclidean = distances.LpDistance(normalize_embeddings=False, p=2, power=1)
    cosine = (
        distances.DotProductSimilarity(normalize_embeddings=False)
        if similarity == "dot"
        else distances.CosineSimilarity()
    )
    reduce = _reducer(name, reducer)
    if name == "c1":
        return losses.ContrastiveLoss(pos_margin=1.0, neg_margin=cfg.c1.neg_margin, distance=cosine, reducer=reduce)
    if name == "c2":  # CCP eq. 4.2: m+ = beta - alpha, m- = beta + alpha
        return losses.ContrastiveLoss(
            pos_margin=cfg.c2.beta - cfg.c2.alpha,
            neg_margin=cfg.c2.beta + cfg.c2.alpha,
            distance=euclidean,
            reducer=reduce,
        )
    if name == "ms":
        return losses.MultiSimilarityLoss(
            alpha=cfg.ms.alpha, beta=cfg.ms.beta, base=cfg.ms.base, distance=cosine, reducer=reduce
        )
    return AllTripletMarginLoss(margin=cfg.triplet.margin, distance=euclidean, reducer=reduce)
