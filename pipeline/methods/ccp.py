"""CCP: chance-constrained DML as a sequence of regularised proxy-DML sub-problems.

CCP Algorithm 1: each sub-problem (a projection, eq. 4.9-4.11) trains the
network and the proxies on a pair loss with the batch samples as anchors and
all proxies as references, plus lambda/2 ||theta - theta_prev||^2 over the
network's trainable weights (eq. 4.10; Alg. 1 prints the gradient as
lambda (theta* - theta), a sign slip: the gradient of eq. 4.10 is
lambda (theta - theta_prev), which is what the authors' release adds). A
sub-problem ends when validation MAP@R has not improved by more than
``train.min_delta`` for ``ccp.patience`` epochs (section 4.4); then
theta_prev <- the sub-problem's best weights (training goes on from the
current weights, as in the release) and the proxies are re-initialised by
greedy K-center (Algorithm 2), seeded by the sub-problem's best proxies.

Budget: training stops only at the end of a sub-problem, once the budget rule
every run shares allows it (``train.patience`` epochs since the best validation
MAP@R; pipeline/training/loop.py), or after ``ccp.max_subproblems``; never in the
first epochs of a sub-problem.

Variants (``ccp.variants``: batch, loss_proxy; ``ccp.alternating``: ccp, sample_ccp):
- ``ccp``: the above;
- ``loss_proxy``: one sub-problem, never re-initialised (Loss-Proxy, Fig. 4a);
  up to the end of CCP's first sub-problem the two are the same computation
  (same start, batches and K-center: common random numbers);
- ``sample_ccp``: the anchors are real samples picked by K-center, embedded
  with the current network at every step instead of trained proxies (5.3);
- ``batch``: the same pair loss on in-batch pairs only (the batch baseline).

As in the authors' release (reference/ccp_supplement_hparams.md), each a parameter:
``ccp.proxy_lr_multiplier`` 1 (proxies learn at the network's rate),
``ccp.reset_proxy_optimizer`` false (Adam's moments of the proxies are kept
across re-initialisations), ``ccp.reducer`` release and ``ccp.similarity`` dot
(pipeline/losses/modules/pair_losses.py), ``ccp.kcenter_space`` raw (K-center picks,
and the proxies hold, raw head outputs; the loss sees proxies and samples
through the same normalisation; ``normalized``: K-center in the normalised
space). Choice where the paper and the release differ: the first K-center is
seeded by the embeddings of random samples (Alg. 1: rho* initialised with
samples; the release seeds it with zero proxies).

Diagnostics per sub-problem: epochs, steps, lambda, best validation MAP@R, the
covering radius (Prop. 4.2) after K-center and at the end, and how far the
proxies moved from their K-center positions (in the loss's normalised space)
in the sub-problem's first epoch and by its end.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
from torch import nn

from pipeline.families.ccp import ALTERNATING_VARIANTS, FAMILY
from pipeline.losses import LossContext, build_loss
from pipeline.methods.kcenter import covering_radius, k_center_per_class
from pipeline.methods.objective import Objective, projection_penalty, trainable
from pipeline.models.embedder import normalize_embeddings

log = logging.getLogger(__name__)

NAN_PAIR = (float("nan"), float("nan"))


def build_objective(ccp, train, loss: str, variant: str, num_classes: int) -> CCPObjective:
    """Run ``<loss>_<variant>``'s objective from the ccp and train sections (the CCP family's builder,
    pipeline/families/ccp.py)."""
    return CCPObjective(ccp, loss, variant, num_classes, train.embedding_dim, train.lr * ccp.proxy_lr_multiplier)


class CCPObjective(Objective):
    """One of the CCP variants for one pair loss; see the module docstring. `proxy_lr` is the proxies'
    learning rate (train.lr x ccp.proxy_lr_multiplier)."""

    def __init__(self, cfg, loss: str, variant: str, num_classes: int, embedding_dim: int, proxy_lr: float):
        if variant not in FAMILY.variants:
            raise ValueError(f"unknown CCP variant {variant!r} (valid: {', '.join(FAMILY.variants)})")
        super().__init__(
            build_loss(getattr(cfg, loss), LossContext(reducer=cfg.reducer, similarity=cfg.similarity)), lr=proxy_lr
        )
        self.cfg, self.variant, self.num_classes = cfg, variant, num_classes
        k = cfg.proxies_per_class
        self.register_buffer("anchor_labels", torch.arange(num_classes).repeat_interleave(k))
        # sample_ccp: its anchors pass through the network a second time
        self.supports_distributed = self.single_forward = variant != "sample_ccp"
        self.proxies = (
            nn.Parameter(torch.zeros(num_classes * k, embedding_dim)) if variant in ("loss_proxy", "ccp") else None
        )
        self.anchor_rows: np.ndarray | None = None  # sample_ccp: training rows of the anchor samples
        self.anchor_inputs: torch.Tensor | None = None  # sample_ccp: their inputs
        self.rho_star: torch.Tensor | None = None  # the previous sub-problem's anchors (K-center seeds)
        self.kcenter_proxies: torch.Tensor | None = None  # the proxies as K-center placed them
        self.sub_best_proxies: torch.Tensor | None = None  # the proxies of the sub-problem's best epoch
        self.initial_radius = torch.zeros(1)  # covering radius right after K-center, per class
        self.first_epoch_shift = NAN_PAIR  # (mean, max) proxy displacement after the sub-problem's first epoch
        # the first sub-problem has no previous solution to stay near: lambda = 0 there unless asked
        # (zero_lambda_first false: pulled towards the initial weights); batch and Loss-Proxy never alternate
        alternating = variant in ALTERNATING_VARIANTS
        self.lambda_ = cfg.lambda_ if alternating and not cfg.zero_lambda_first else 0.0
        self.theta_prev: list[torch.Tensor] = []
        self.subproblem = 0
        self.sub_best = -float("inf")
        self.sub_best_weights: list[torch.Tensor] = []
        self.sub_stale = 0
        self.sub_epochs = 0

    # ---------------------------------------------------------------- the loss
    def references(self, model: nn.Module) -> torch.Tensor:
        """The anchors' embeddings as the loss sees them: trained proxies through the samples'
        normalisation, or anchor samples through the current network."""
        if self.variant == "sample_ccp":
            return model(self.anchor_inputs)
        return normalize_embeddings(self.proxies, self.cfg.embedding_norm)

    def batch_loss(self, model, x, y):
        emb = model(x)
        if self.variant == "batch":
            return self(emb, y)
        # CCP eq. 4.11: samples as anchors, all proxies as references, plus the in-batch term (release: 0.1)
        loss = self(emb, y, ref_emb=self.references(model), ref_labels=self.anchor_labels)
        if self.cfg.in_batch_weight > 0:
            loss = loss + self.cfg.in_batch_weight * self(emb, y)
        if self.lambda_ > 0:
            loss = loss + projection_penalty(trainable(model), self.theta_prev, self.lambda_)
        return loss

    # ----------------------------------------------------------------- the hooks
    def begin(self, ctx):
        if self.variant == "batch":
            return
        self.theta_prev = [p.detach().clone() for p in trainable(ctx.model)]
        self.sub_best_weights = [p.clone() for p in self.theta_prev]
        k = self.cfg.proxies_per_class
        first = np.concatenate([np.random.choice(r, k, replace=len(r) < k) for r in ctx.rows_per_class])
        self.rho_star = self._embed_rows(ctx, first)  # Alg. 1: rho* initialised with random samples
        self._select_anchors(ctx, self._train_embeddings(ctx))

    def progress(self) -> dict:
        return {} if self.variant == "batch" else {"subproblem": self.subproblem}

    def end_epoch(self, ctx, epoch, val, patience_exhausted):
        if self.variant == "batch":
            return patience_exhausted
        self.sub_epochs += 1
        if self.sub_epochs == 1:
            self.first_epoch_shift = self._proxy_shift()
        if val > self.sub_best + ctx.cfg.min_delta:
            self.sub_best, self.sub_stale = val, 0
            self.sub_best_weights = [p.detach().clone() for p in trainable(ctx.model)]
            if self.proxies is not None:
                self.sub_best_proxies = self.proxies.detach().clone()
        else:
            self.sub_stale += 1
        if self.variant == "loss_proxy":
            return patience_exhausted
        if self.sub_stale < self.cfg.patience:
            return False  # the sub-problem goes on: no stop inside it
        train_emb = self._train_embeddings(ctx)  # once: for the end-of-sub-problem and the new radius
        self._record(ctx, train_emb)
        self.sub_epochs = 0  # recorded: finish() must not record it again
        if patience_exhausted or self.subproblem >= self.cfg.max_subproblems:
            return True
        # next projection: theta_prev <- the sub-problem's best weights; anchors re-initialised (Alg. 1)
        self.theta_prev = self.sub_best_weights
        self.lambda_ = self.cfg.lambda_
        self.rho_star = (
            self._embed_rows(ctx, self.anchor_rows) if self.variant == "sample_ccp" else self.sub_best_proxies
        )
        self._select_anchors(ctx, train_emb)
        self.sub_best, self.sub_stale = -float("inf"), 0
        return False

    def finish(self, ctx):
        if self.variant != "batch" and self.sub_epochs > 0:
            self._record(ctx, self._train_embeddings(ctx))

    # ----------------------------------------------------------------- helpers
    def _embed_rows(self, ctx, rows: np.ndarray, chunk: int = 512) -> torch.Tensor:
        """Embeddings of training rows (eval mode, `chunk` rows per forward pass) in K-center's space: raw head
        outputs or normalised."""
        forward = ctx.model.head_output if self.cfg.kcenter_space == "raw" else ctx.model
        ctx.model.eval()
        with torch.no_grad():
            out = torch.cat([forward(ctx.inputs(rows[s : s + chunk])) for s in range(0, len(rows), chunk)])
        ctx.model.train()
        return out

    @staticmethod
    def _train_embeddings(ctx) -> torch.Tensor:
        return torch.as_tensor(ctx.embed(ctx.data.train))  # the current network, eval mode

    def _select_anchors(self, ctx, train_emb: torch.Tensor) -> None:
        """Greedy K-center per class over a pool of b random samples (CCP Alg. 2)."""
        anchor_rows, new = k_center_per_class(
            ctx.rows_per_class,
            lambda rows: self._embed_rows(ctx, rows),
            self.rho_star,
            self.cfg.proxies_per_class,
            self.cfg.pool_size,
        )
        if self.variant == "sample_ccp":
            self.anchor_rows, self.anchor_inputs = anchor_rows, ctx.inputs(anchor_rows)
        else:
            with torch.no_grad():
                self.proxies.copy_(new)
            self.kcenter_proxies, self.sub_best_proxies = new.clone(), new.clone()
            if self.cfg.reset_proxy_optimizer:
                ctx.optimizer.state.pop(self.proxies, None)  # fresh Adam moments (the release keeps them)
        self.subproblem += 1
        self.initial_radius = self._radius(ctx, train_emb)

    def _proxy_shift(self) -> tuple[float, float]:
        """(mean, max) distance of the proxies from their K-center positions, in the loss's normalised space."""
        if self.proxies is None:
            return NAN_PAIR
        with torch.no_grad():
            norm = self.cfg.embedding_norm
            shift = (normalize_embeddings(self.proxies, norm) - normalize_embeddings(self.kcenter_proxies, norm)).norm(
                dim=1
            )
        return float(shift.mean()), float(shift.max())

    def _radius(self, ctx, train_emb: torch.Tensor) -> torch.Tensor:
        """Per-class covering radius of the current anchors over the training set."""
        with torch.no_grad():
            refs = self.references(ctx.model).cpu()
        return covering_radius(train_emb, torch.as_tensor(ctx.data.train_labels), refs, self.cfg.proxies_per_class)

    def _record(self, ctx, train_emb: torch.Tensor) -> None:
        """One diagnostics row for the sub-problem that just ended (Fig. 4b, Prop. 4.2)."""
        radius = self._radius(ctx, train_emb)
        shift_mean, shift_max = self._proxy_shift()
        row = {
            "subproblem": self.subproblem,
            "epochs": self.sub_epochs,
            "steps": self.sub_epochs * ctx.cfg.steps_per_epoch,
            "best_val_map_at_r": self.sub_best,
            "initial_radius_max": float(self.initial_radius.max()),
            "initial_radius_mean": float(self.initial_radius.mean()),
            "covering_radius_max": float(radius.max()),
            "covering_radius_mean": float(radius.mean()),
            "lambda": self.lambda_,
            "proxy_shift_first_epoch_mean": self.first_epoch_shift[0],
            "proxy_shift_first_epoch_max": self.first_epoch_shift[1],
            "proxy_shift_mean": shift_mean,
            "proxy_shift_max": shift_max,
        }
        self.diagnostics.append(row)
        log.debug(
            "sub-problem %d: %d epochs, best val MAP@R %.4f, covering radius max %.3f mean %.3f "
            "(after K-center: %.3f, %.3f), proxies moved %.3f in the first epoch, %.3f by the end",
            row["subproblem"],
            row["epochs"],
            row["best_val_map_at_r"],
            row["covering_radius_max"],
            row["covering_radius_mean"],
            row["initial_radius_max"],
            row["initial_radius_mean"],
            row["proxy_shift_first_epoch_mean"],
            row["proxy_shift_mean"],
        )
