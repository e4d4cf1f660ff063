"""What the four pair losses CCP is run with (CCP section 5.1) need beyond pytorch-metric-learning; their records
are in pipeline/losses/ccp.py (C1, C2) and pipeline/losses/revisiting.py (MS, triplet).

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


def euclidean(power: int = 1):
    """Euclidean distance (squared with power 2) on the embeddings as the model normalised them (no second
    normalisation)."""
    return distances.LpDistance(normalize_embeddings=False, p=2, power=power)


def similarity(name: str):
    """What C1 and MS call the cosine (module docstring): ``cosine`` normalises, ``dot`` does not."""
    return distances.DotProductSimilarity(normalize_embeddings=False) if name == "dot" else distances.CosineSimilarity()


def reducer_kwargs(name: str, release: type) -> dict:
    """The ``reducer=`` a loss is built with for the reduction `name` (module docstring); `release` is the
    authors' reducer for this loss. ``library`` keeps pytorch-metric-learning's own."""
    if name == "library":
        return {}
    reducers_by_name = {"release": release, "mean": reducers.MeanReducer, "avg_nonzero": reducers.AvgNonZeroReducer}
    return {"reducer": reducers_by_name[name]()}
