"""PROFS: alternating projections with class representatives (PROFS Algorithm 1, section 4).

Each projection k samples one representative per class (the set R); for M
steps every batch of B = classes_per_batch x I images holds, for each of its
classes, the class's representative (the set R') in place of one of its I
examples (the authors' sampler: B stays B), and minimises the loss over
representative-example pairs plus lambda/2 ||theta - theta^(k)||^2 (eq. 4.7);
then theta^(k) <- theta and a new R is drawn. Pairs between two examples are
not used (for lifted and MS: "ignoring the pairwise terms between the
non-representative samples", section 5.3); the representatives are the anchors
and the examples the references of pytorch-metric-learning's losses. Pairs
between two representatives are not used either (the release's default).

Budget: the rule every run shares (pipeline/training/loop.py); PROFS takes the stop
only at the end of an epoch in which a projection ended, so the projection that
was running when the patience ran out is completed. The real-data protocols (conf/protocol) give
the PROFS family (plain included) the paper's budget with ``profs.max_epochs``
/ ``profs.patience``: 100 epochs, best epoch reported.

M is either fixed or derived as M = ceil(rho / p(y)) with p(y) = B / (I L),
the probability that a class appears in a batch of B = (classes per batch x I)
examples out of L classes (section 5.4.1, rho = 6).

HNCM (section 4.2) chooses the batch's classes: the embeddings of the
representatives are kept per class and refreshed whenever a representative is in
a batch; a batch is built from random seed classes, each followed by its
``profs.hard_classes`` nearest classes under the stored embeddings (an O(L) scan
per seed, no pass over the data), so the batch size and R' stay as without
HNCM and the scan is the only extra work. Choice: the store is filled once at
the start with the first representatives' embeddings (L forward passes) and
keeps a class's last embedding across projections. For SoftTriple the cluster
centres are the representatives (section 5.3): two classes are as near as their
nearest pair of centres.

Contrastive, triplet and margin pair each anchor with as many hard negatives as
it has positives (section 5.3, ``profs.pair_sampling``; the same mining in all
three variants, so the plain baseline is mined alike). MS keeps its own pair
mining (``profs.ms_miner_epsilon``, Wang et al. eq. 3-4), in every variant too. The
losses are as the PROFS paper writes them, where the library's defaults differ:
triplet on squared distances (eq. 3.3, FaceNet's margin 0.2), the mean over the
tuples (eq. 3.1, ``profs.reducer``; the library averages over the non-zero terms).

Variants: ``plain`` (the same loss on ordinary batches, the baseline),
``profs`` and ``profs_hncm``.

Two losses need more than the pairing (section 5.3): N-pair pairs each example
with the representatives of R' (its own class's representative is the
positive, the others the negatives: a softmax over R'); SoftTriple has no
representative pairing at all, so PROFS contributes only the regulariser, each
step being its own sub-problem (M = 1, theta^(k) = the previous step's
weights).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from pytorch_metric_learning import losses, miners

from pipeline.batching.samplers import ClassBatchSampler
from pipeline.families.profs import LOSSES, VARIANTS
from pipeline.losses import LossContext, build_loss
from pipeline.losses.modules.pair_losses import similarity
from pipeline.methods.objective import Objective, projection_penalty, trainable
from pipeline.miners.modules.tuple_miners import OneNegativePerPositiveMiner

MINED_LOSSES = ("contrastive", "triplet", "margin")  # one hard negative per positive (section 5.3)


def projection_steps(rho: float, batch_size: int, images_per_class: int, num_classes: int) -> int:
    """M = ceil(rho / p(y)), p(y) = B / (I L) (PROFS section 5.4.1)."""
    return max(1, math.ceil(round(rho * images_per_class * num_classes / batch_size, 9)))


def one_step_rho(batch_size: int, images_per_class: int, num_classes: int) -> float:
    """The largest rho whose M is 1, M's floor: p(y) = B / (I L) (PROFS section 5.4.1); every rho below it trains
    the same model (`projection_steps`)."""
    return batch_size / (images_per_class * num_classes)


def hard_negative_classes(memory: torch.Tensor, classes: torch.Tensor, k: int) -> torch.Tensor:
    """For each class in `classes`, the `k` other classes nearest under the stored embeddings, nearest first.

    memory: (L, D), one embedding per class, or (L, K, D), K per class (SoftTriple's centres), where
    two classes are as near as their nearest pair. One scan of the L classes per class (section 4.2).
    """
    if memory.dim() == 2:
        d = torch.cdist(memory[classes], memory)
    else:
        num_classes, per_class, dim = memory.shape
        d = torch.cdist(memory[classes].reshape(-1, dim), memory.reshape(-1, dim))
        d = d.reshape(len(classes), per_class, num_classes, per_class).amin(dim=(1, 3))
    d[torch.arange(len(classes)), classes] = float("inf")  # not itself
    return torch.topk(d, k=min(k, len(memory) - 1), largest=False).indices


def hncm_classes(seeds: np.ndarray, nearest: np.ndarray, hard: int, n: int) -> np.ndarray:
    """The classes of an HNCM batch: seed after seed (skipping chosen ones), each followed by
    up to `hard` of its nearest classes not chosen yet, until `n`; short of n, more seeds.

    seeds: a random permutation of the classes; nearest[i]: the classes nearest to seeds[i], nearest first.
    """
    chosen: list[int] = []
    for i, seed in enumerate(seeds):
        if len(chosen) == n:
            break
        if seed in chosen:
            continue
        chosen.append(int(seed))
        added = 0
        for c in nearest[i] if i < len(nearest) else ():
            if added == hard or len(chosen) == n:
                break
            if c not in chosen:
                chosen.append(int(c))
                added += 1
    return np.array(chosen)


class RepresentativeNPairLoss(torch.nn.Module):
    """N-pair loss (Sohn 2016) with representatives as the positives: for every example, the
    cross-entropy of its similarities to the representatives, its own class's being the target."""

    def forward(self, reps, rep_labels, indices_tuple=None, ref_emb=None, ref_labels=None):
        if ref_emb is None:  # plain variant: Sohn's N-pair loss on the batch, unnormalised dot products as below
            return losses.NPairsLoss(distance=similarity("dot"))(reps, rep_labels)
        keep = torch.isin(ref_labels, rep_labels)
        target = (ref_labels[keep, None] == rep_labels[None, :]).int().argmax(dim=1)  # its class's representative
        return torch.nn.functional.cross_entropy(ref_emb[keep] @ reps.T, target)


def build_profs_loss(name: str, cfg, num_classes: int = 0, embedding_dim: int = 0):
    """The loss `name` with the PROFS section's settings for it (the baselines' builder; N-pair pairs
    examples with representatives, see RepresentativeNPairLoss)."""
    if name == "npair":
        return RepresentativeNPairLoss()
    if name not in LOSSES:
        raise ValueError(f"unknown PROFS loss {name!r} (valid: {', '.join(LOSSES)})")
    return build_loss(getattr(cfg, name), LossContext(num_classes, embedding_dim, reducer=cfg.reducer))


def build_objective(profs, train, loss: str, variant: str, num_classes: int) -> PROFSObjective:
    """Run ``<loss>_<variant>``'s objective from the profs and train sections (the PROFS family's builder,
    pipeline/families/profs.py)."""
    return PROFSObjective(
        profs, loss, variant, num_classes, train.embedding_dim, train.batch_size, train.images_per_class
    )


class PROFSObjective(Objective):
    """One PROFS variant for one loss; see the module docstring."""

    supports_distributed = False  # representative batches and HNCM are built per process

    def __init__(
        self, cfg, loss: str, variant: str, num_classes: int, embedding_dim: int, batch_size: int, images_per_class: int
    ):
        if variant not in VARIANTS:
            raise ValueError(f"unknown PROFS variant {variant!r} (valid: {', '.join(VARIANTS)})")
        criterion = build_profs_loss(loss, cfg, num_classes, embedding_dim)
        if loss in MINED_LOSSES and cfg.pair_sampling == "one_negative_per_positive":
            miner = OneNegativePerPositiveMiner(distance=criterion.distance)
        else:
            mine_ms = loss == "ms" and cfg.ms_miner_epsilon is not None
            miner = miners.MultiSimilarityMiner(epsilon=cfg.ms_miner_epsilon) if mine_ms else None
        super().__init__(
            criterion,
            miner=miner,
            lr=cfg.loss_lr if loss == "softtriple" else None,
        )
        self.cfg, self.variant, self.num_classes = cfg, variant, num_classes
        self.hncm = variant == "profs_hncm"
        self.regulariser_only = loss == "softtriple"
        if self.regulariser_only:
            self.m = 1  # every step is a sub-problem; theta^(k) = the previous step's weights
        elif cfg.m_mode == "fixed":
            self.m = cfg.m
        else:
            self.m = projection_steps(cfg.rho, batch_size, images_per_class, num_classes)
        self.images_per_class = images_per_class
        self.steps = 0
        self.projection_starts: list[int] = []  # step at which each projection began
        self.completed_at_last_epoch = 0  # projections completed when the previous epoch ended
        self.batches_drawn = 0  # batches the sampler has built with representatives
        self.reps = np.zeros(num_classes, dtype=np.int64)  # training row of each class's representative
        self.memory = torch.zeros(0)  # HNCM: last embedding of each class's representative
        self.theta_k: list[torch.Tensor] = []
        self.ctx = None

    def begin(self, ctx):
        if self.variant == "plain":
            return
        self.ctx = ctx
        if not self.regulariser_only:
            self._draw_representatives()
        self._new_projection()
        if self.hncm and not self.regulariser_only:
            ctx.model.eval()
            with torch.no_grad():
                self.memory = ctx.model(ctx.inputs(self.reps)).detach()
            ctx.model.train()

    def batch_sampler(self, labels, cfg, seed):
        """PROFS's batches: the representative in place of one example per class (section 4, the authors'
        sampler), classes chosen by HNCM (section 4.2) or at random; plain: the loop's sampler."""
        if self.variant == "plain" or (self.regulariser_only and not self.hncm):
            return None
        return ClassBatchSampler(
            labels,
            cfg.classes_per_batch,
            cfg.images_per_class,
            cfg.steps_per_epoch,
            seed,
            choose_classes=self.choose_classes if self.hncm else None,
            representatives=None if self.regulariser_only else self.batch_representatives,
        )

    def batch_representatives(self) -> np.ndarray:
        """The representatives for the next batch: the same set for M batches, then a new one (Alg. 1)."""
        if self.batches_drawn > 0 and self.batches_drawn % self.m == 0:
            self._draw_representatives()
        self.batches_drawn += 1
        return self.reps

    def choose_classes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """HNCM: random seed classes, each followed by its nearest classes under the stored representatives."""
        seeds = rng.permutation(self.num_classes)
        nearest = hard_negative_classes(self.class_memory(), torch.as_tensor(seeds[:n]), n - 1)
        return hncm_classes(seeds, nearest.cpu().numpy(), self.cfg.hard_classes, n)

    def class_memory(self) -> torch.Tensor:
        """The stored representative embeddings, or SoftTriple's normalised centres as (L, K, D)."""
        if self.regulariser_only:
            centres = F.normalize(self.loss.fc.detach(), p=2, dim=0).T  # PML layout: class-major columns
            return centres.reshape(self.num_classes, self.loss.centers_per_class, -1)
        return self.memory

    def _draw_representatives(self) -> None:
        """A new representative per class (Alg. 1, outer repeat: sample R)."""
        self.reps = np.array([np.random.choice(rows) for rows in self.ctx.rows_per_class])

    def _new_projection(self) -> None:
        """theta^(k) <- theta (Alg. 1, end of the inner repeat)."""
        self.theta_k = [p.detach().clone() for p in trainable(self.ctx.model)]
        self.projection_starts.append(self.steps)

    def progress(self) -> dict:
        return {} if self.variant == "plain" or self.regulariser_only else {"projection": len(self.projection_starts)}

    def end_epoch(self, ctx, epoch, val, patience_exhausted):
        """Stop only at the end of an epoch in which a projection ended (SoftTriple: every step is one)."""
        if self.variant == "plain" or self.regulariser_only:
            return patience_exhausted
        completed = self.steps // self.m
        ended, self.completed_at_last_epoch = completed > self.completed_at_last_epoch, completed
        return patience_exhausted and ended

    def batch_loss(self, model, x, y):
        if self.variant == "plain":
            return self(model(x), y)
        if self.steps > 0 and self.steps % self.m == 0:
            self._new_projection()
        self.steps += 1
        penalty = projection_penalty(trainable(model), self.theta_k, self.cfg.lambda_) if self.cfg.lambda_ > 0 else 0
        if self.regulariser_only:  # SoftTriple-PROFS: the loss on the batch + the regulariser
            return self(model(x), y) + penalty
        emb = model(x)
        is_rep = torch.zeros(len(y), dtype=torch.bool, device=y.device)
        is_rep[:: self.images_per_class] = True  # the sampler puts each class's representative first
        reps, classes = emb[is_rep], y[is_rep]
        if self.hncm:
            self.memory[classes.to(self.memory.device)] = reps.detach().to(self.memory.device)
        return self(reps, classes, ref_emb=emb[~is_rep], ref_labels=y[~is_rep]) + penalty  # eq. 4.7
