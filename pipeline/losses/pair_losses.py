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

from pytorch_metric_learning import distances, losses, reducers

PAIR_LOSSES = ("c1", "c2", "ms", "triplet")


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
        return losses.TripletMarginLoss(margin=cfg.triplet.margin, distance=euclidean, reducer=_reducer(reducer))
    raise ValueError(f"unknown pair loss {name!r} (valid: {', '.join(PAIR_LOSSES)})")
