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
none), so the Euclidean losses do not normalise again. pytorch-metric-learning
averages the positive and the negative terms of the contrastive losses
separately and adds them; ``reducer`` chooses between the plain mean over pairs
(``mean``, the expectation of CCP eq. 4.11) and the mean over non-zero terms
(``avg_nonzero``, the library default).
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


def _reducer(name: str):
    return reducers.MeanReducer() if name == "mean" else reducers.AvgNonZeroReducer()


def build_pair_loss(name: str, cfg, reducer: str = "mean"):
    """A pytorch-metric-learning loss for `name` with its margins from `cfg` (the ccp section)."""
    euclidean = distances.LpDistance(normalize_embeddings=False, p=2, power=1)
    if name == "c1":
        return losses.ContrastiveLoss(pos_margin=1.0, neg_margin=cfg.c1.neg_margin,
                                      distance=distances.CosineSimilarity(), reducer=_reducer(reducer))
    if name == "c2":  # CCP eq. 4.2: m+ = beta - alpha, m- = beta + alpha
        return losses.ContrastiveLoss(pos_margin=cfg.c2.beta - cfg.c2.alpha, neg_margin=cfg.c2.beta + cfg.c2.alpha,
                                      distance=euclidean, reducer=_reducer(reducer))
    if name == "ms":
        return losses.MultiSimilarityLoss(alpha=cfg.ms.alpha, beta=cfg.ms.beta, base=cfg.ms.base)
    if name == "triplet":
        return AllTripletMarginLoss(margin=cfg.triplet.margin, distance=euclidean, reducer=_reducer(reducer))
    raise ValueError(f"unknown pair loss {name!r} (valid: {', '.join(PAIR_LOSSES)})")
