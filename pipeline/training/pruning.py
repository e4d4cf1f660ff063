"""A tuning trial's early cut, as the training loop applies it (the floor comes from the study:
pipeline/studies/tuning.py pruning_floors; the rule's settings: `tune.pruner`, pipeline/config/tune.py).

The rule judges a model by its best validation MAP@R so far, the number early stopping keeps, not by the last
epoch's: a curve that peaks, dips and climbs back (C2-Loss-Proxy on emoji peaks at epoch 1) is judged by its peak.
A model that is still improving is never cut: one whose best so far rose within its last `window` epochs (a steady
climber), or whose validation MAP@R rose over them (a climb back after a dip), goes on to the next check."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Floor:
    """Cut a fold model at a checkpoint (epoch `warmup`, then every `interval` epochs) when its best validation
    MAP@R so far is below ``values[epoch]`` (the last value beyond the end) and it is not improving (module
    docstring) over the last `window` epochs. With a `flag` file shared by a trial's fold models, the first one cut
    creates it and the others stop after their next epoch: the trial is pruned, their values would not be used."""

    values: tuple[float, ...]  # per epoch 0, 1, ...: the floor the study's completed trials set on this fold
    warmup: int
    interval: int
    window: int
    flag: str = ""

    def cuts(self, curve: Sequence[float]) -> bool:
        """Whether to stop the model whose validation MAP@R at epochs 0..e is `curve` after epoch e."""
        if self.flag and os.path.exists(self.flag):
            return True
        if self.below(curve):
            if self.flag:
                Path(self.flag).touch()
            return True
        return False

    def below(self, curve: Sequence[float]) -> bool:
        """The rule itself, on this model's `curve` alone."""
        epoch = len(curve) - 1
        if epoch < self.warmup or (epoch - self.warmup) % self.interval:
            return False
        before = max(0, epoch - self.window)
        # still improving: its best so far rose within the window, or its last value rose over it (a climb back)
        improving = max(curve[before + 1 :], default=-np.inf) > max(curve[: before + 1]) or curve[epoch] > curve[before]
        return not improving and max(curve) < self.values[min(epoch, len(self.values) - 1)]
