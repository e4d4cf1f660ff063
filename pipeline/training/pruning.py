"""A tuning trial's early cut, as the training loop applies it (the floor comes from the study:
pipeline/studies/tuning.py pruning_floors; the rule's settings: `tune.pruner`, pipeline/config/studies.py).

The rule judges a model by its best validation MAP@R so far, the number early stopping keeps, not by the last
epoch's: a curve that peaks, dips and climbs back (C2-Loss-Proxy on emoji peaks at epoch 1) is judged by its peak.
A model that is still climbing is never cut: one whose validation MAP@R rose over its last `window` epochs goes on
to the next check."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Floor:
    """Cut a fold model at a checkpoint (epoch `warmup`, then every `interval` epochs) when its best validation
    MAP@R so far is below ``values[epoch]`` (the last value beyond the end) and its validation MAP@R did not rise
    over the last `window` epochs."""

    values: tuple[float, ...]  # per epoch 0, 1, ...: the floor the study's completed trials set on this fold
    warmup: int
    interval: int
    window: int

    def cuts(self, curve: Sequence[float]) -> bool:
        """Whether to stop the model whose validation MAP@R at epochs 0..e is `curve` after epoch e."""
        epoch = len(curve) - 1
        if epoch < self.warmup or (epoch - self.warmup) % self.interval:
            return False
        rising = curve[epoch] > curve[max(0, epoch - self.window)]
        return not rising and max(curve) < self.values[min(epoch, len(self.values) - 1)]
