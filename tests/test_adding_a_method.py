"""docs/adding-a-method.md, done: a toy loss, a toy miner and a toy method family added to a temporary copy of the
project, counting the files a person writes (the rest is generated), then trained by `dvc repro` on the tiny config.

A loss is its module (+ conf/config.yaml to train a
run of it), a miner too, a family its record module, its objective module and conf/config.yaml, a data set its
module and its conf/dataset file.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ONE_PROCESS, ROOT, TINY_OVERRIDES, copy_companion, merge, write_params_like_dvc
from tests.test_pipeline_e2e import DVC, _fails, sh

pytestmark = pytest.mark.slow

TOY_LOSS = '''"""Contrastive loss on squared Euclidean distances (a toy)."""

from typing import Literal

from pydantic import Field

from pipeline.infra.schema import section
from pipeline.losses import register_loss


@section
class SquaredContrastiveLossParams:
    name: Literal["squared_contrastive"] = "squared_contrastive"
    neg_margin: float = Field(1.0, gt=0.0)


@register_loss(SquaredContrastiveLossParams)
def squared_contrastive(cfg, ctx):
    from pytorch_metric_learning import distances, losses

    squared = distances.LpDistance(normalize_embeddings=False, power=2)
    return losses.ContrastiveLoss(pos_margin=0.0, neg_margin=cfg.neg_margin, distance=squared)
'''

TOY_MINER = '''"""Batch-hard triplets (Hermans et al. 2017): per anchor its farthest positive and nearest negative."""

from typing import Literal

from pipeline.infra.schema import section
from pipeline.miners import register_miner


@section
class BatchHardMinerParams:
    name: Literal["batch_hard"] = "batch_hard"


@register_miner(BatchHardMinerParams, triplets=True)
def batch_hard(cfg):
    from pytorch_metric_learning import miners

    return miners.BatchHardMiner()
'''

TOY_FAMILY = '''"""A toy family: each loss trained as it is (single) or with its loss doubled (double)."""

from dataclasses import field
from typing import Literal

from pipeline.families import Claim, Family, MethodConfig, register_family
from pipeline.infra.schema import section
from pipeline.losses.revisiting import MultiSimilarityLossParams
from pipeline.losses.squared_contrastive import SquaredContrastiveLossParams

LOSSES = {"ms": "MS", "squared_contrastive": "Squared contrastive"}
VARIANTS = {"single": "{} (single)", "double": "{} x2"}


@section(kw_only=True)
class ToyConfig(MethodConfig):
    losses: list[Literal[tuple(LOSSES)]] = field(default_factory=lambda: ["ms"])
    variants: list[Literal[tuple(VARIANTS)]] = field(default_factory=lambda: list(VARIANTS))
    ms: MultiSimilarityLossParams = field(default_factory=MultiSimilarityLossParams)
    squared_contrastive: SquaredContrastiveLossParams = field(default_factory=SquaredContrastiveLossParams)


FAMILY = register_family(
    Family(
        section="toy",
        schema=ToyConfig,
        losses=LOSSES,
        variants=VARIANTS,
        variant_lists={"variants": tuple(VARIANTS)},
        objective="pipeline.methods.toy",
        claims=lambda params: [
            Claim(f"{LOSSES[loss]}: doubling the loss helps", "a toy paper", f"{loss}_single", f"{loss}_double")
            for loss in params.toy.losses
        ],
    )
)
'''

TOY_OBJECTIVE = '''"""The toy family's objective: the loss, times 2 for the double variant."""

from pipeline.losses import LossContext, build_loss
from pipeline.methods.objective import Objective


class ToyObjective(Objective):
    def __init__(self, loss, factor: float):
        super().__init__(loss)
        self.factor = factor

    def batch_loss(self, model, x, y):
        return self.factor * super().batch_loss(model, x, y)


def build_objective(toy, train, loss, variant, num_classes):
    context = LossContext(num_classes, train.embedding_dim)
    return ToyObjective(build_loss(getattr(toy, loss), context), 2.0 if variant == "double" else 1.0)
'''


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path}: {old!r} not found"
    path.write_text(text.replace(old, new))


def touched(repo: Path) -> set[str]:
    """Files changed or added since the last commit."""
    return {line[3:] for line in sh(["git", "status", "--porcelain", "-uall"], repo).splitlines()}


def stage_code(repo: Path, stage: str) -> dict[str, str]:
    """The fingerprint the code stage would write now for a stage module (file -> hash)."""
    out = repo.parent / "code"
    shutil.rmtree(out, ignore_errors=True)
    sh([sys.executable, "-m", "stages.code", "--out", str(out)], repo)
    return json.loads((out / f"{stage}.json").read_text())


def reached_by(repo: Path, path: str) -> set[str]:
    """The stage modules whose code includes `path`: the stages (besides the code stage) that rerun when it is
    added or edited."""
    stage_code(repo, "train")
    return {f.stem for f in (repo.parent / "code").glob("*.json") if path in json.loads(f.read_text())}


# what trains, evaluates or reports a run (each loads the whole params, which names every loss, miner and family)
EVERY_RUN = {"values", "train", "evaluate", "export", "pictures", "poc", "ablation", "report"}


def regenerate_and_commit(repo: Path, message: str) -> None:
    """What a person runs after editing (docs/adding-a-method.md): params.yaml (dvc.yaml needs nothing: each stage's
    code is the code stage's fingerprint of what it imports)."""
    sh([sys.executable, "-m", "pipeline.compose"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", message], repo)


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    repo = tmp_path_factory.mktemp("extended")
    for name in ("pipeline", "stages", "reference", "conf", "tests", "hydra_plugins"):
        shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    # .gitignore: the code stage runs in the copy, and its __pycache__ must not count as a file the person added
    # studies/README.md: the values stage's studies folder (a dep)
    copied = ("dvc.yaml", ".dvcignore", ".gitignore", "pyproject.toml", "studies/README.md")
    for name in copied:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, repo / name)
    copy_companion(repo)
    # one seed, no worker processes, fewer of the tiny runs (MS, C2-Loss-Proxy, C2-CCP, MS plain): the point is that
    # the new runs train and reach the report, not their spread, the workers or the runs test_pipeline_e2e.py trains
    narrowed = {"experiment": {"methods": ["ms"], "seeds": [0]}, "profs": {"variants": ["plain"]}}
    write_params_like_dvc(
        repo / "conf" / "config.yaml",
        merge(TINY_OVERRIDES, {**ONE_PROCESS, **narrowed}),
        template=ROOT / "conf" / "config.yaml",
    )
    sh(["git", "init", "-q"], repo)
    sh(DVC + ["init", "-q"], repo)
    sh(DVC + ["config", "core.analytics", "false"], repo)
    regenerate_and_commit(repo, "the project")
    return repo


def test_a_loss_is_its_module(copy):
    (copy / "pipeline/losses/squared_contrastive.py").write_text(TOY_LOSS)
    config = copy / "conf/config.yaml"  # a baseline run of it, trained by default
    edit(config, "experiment:\n  methods:\n", "experiment:\n  methods:\n  - squared\n")
    edit(config, "\nbaselines:\n", "\nbaselines:\n  squared:\n    loss:\n      name: squared_contrastive\n")
    assert touched(copy) == {"pipeline/losses/squared_contrastive.py", "conf/config.yaml"}
    regenerate_and_commit(copy, "a loss")
    assert "squared" in (copy / "params.yaml").read_text()
    assert reached_by(copy, "pipeline/losses/squared_contrastive.py") == EVERY_RUN  # not prepare, embed, lanml


def test_a_miner_is_its_module(copy):
    (copy / "pipeline/miners/batch_hard.py").write_text(TOY_MINER)
    config = copy / "conf/config.yaml"  # a baseline run with it, trained by default
    edit(config, "experiment:\n  methods:\n", "experiment:\n  methods:\n  - hard\n")
    edit(
        config,
        "\nbaselines:\n",
        "\nbaselines:\n  hard:\n    loss:\n      name: triplet\n    miner:\n      name: batch_hard\n    p_switch: 0.2\n",
    )
    assert touched(copy) == {"pipeline/miners/batch_hard.py", "conf/config.yaml"}
    regenerate_and_commit(copy, "a miner")
    assert reached_by(copy, "pipeline/miners/batch_hard.py") == EVERY_RUN
    assert "batch_hard" in (copy / "params.yaml").read_text()  # and the checks know it mines triplets (p_switch)


def test_a_family_is_four_files(copy):
    (copy / "pipeline/families/toy.py").write_text(TOY_FAMILY)
    (copy / "pipeline/methods/toy.py").write_text(TOY_OBJECTIVE)
    edit(
        copy / "conf/config.yaml",
        "\npoc:\n",
        "\ntoy:\n  losses:\n  - ms\n  - squared_contrastive\n  variants:\n  - single\n  - double\n\npoc:\n",
    )
    # no stage of its own: dvc.yaml's train stage trains every run params.yaml composes (experiment.runs)
    assert touched(copy) == {"pipeline/families/toy.py", "pipeline/methods/toy.py", "conf/config.yaml"}
    regenerate_and_commit(copy, "a family")
    # the project's own checks of dvc.yaml against the records and the import closure pass on the extended copy
    sh([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_families.py"], copy)
    assert reached_by(copy, "pipeline/families/toy.py") == EVERY_RUN  # its code reaches the train stages


def test_both_train_through_the_tiny_config(copy):
    runs = ["squared", "hard", "ms_single", "ms_double", "squared_contrastive_single", "squared_contrastive_double"]
    assert yaml.safe_load((copy / "params.yaml").read_text())["experiment"]["runs"][-4:] == runs[-4:]
    sh(DVC + ["repro", *(f"train@{run}" for run in runs)], copy)
    for run in runs:
        assert (copy / f"data/models/{run}/fold-0-seed-0/summary.json").is_file(), run
    names = sh(
        [
            sys.executable,
            "-c",
            f"from pipeline.reporting.names import paper_name; print([paper_name(r) for r in {runs}])",
        ],
        copy,
    )
    assert (
        "['squared', 'hard', 'MS (single)', 'MS x2', 'Squared contrastive (single)', 'Squared contrastive x2']" in names
    )
    assert "Data and pipelines are up to date" in sh(DVC + ["status", "train@ms_double"], copy)


def test_a_familys_claims_reach_the_claims_table(copy):
    """The toy family's record declares a claim per loss; the report tests them beside the papers' (the claims
    forest draws every row of claims.csv)."""
    import pandas as pd

    sh(DVC + ["repro", "report@paper"], copy)
    table = pd.read_csv(copy / "reports" / "claims.csv").set_index("claim")
    for loss in ("MS", "Squared contrastive"):
        row = table.loc[f"{loss}: doubling the loss helps"]
        assert row.source == "a toy paper" and row.pairs == 2 and row.verdict != "not run", row  # both runs measured
    assert (
        "| Squared contrastive: doubling the loss helps | a toy paper |" in (copy / "reports" / "claims.md").read_text()
    )


TOY_DATASET = '''"""Stripes (a toy): grey 8 x 8 images of horizontal stripes, a class per stripe period and phase, with noise."""

from pathlib import Path

import numpy as np
from PIL import Image
from pydantic import Field

from pipeline.data.manifest import MANIFEST_NAME, build_manifest
from pipeline.datasets import Dataset, register_dataset
from pipeline.infra.schema import section


@section(kw_only=True)
class StripesKeys:
    stripes_noise: float = Field(20.0, ge=0.0)  # the pixel noise's standard deviation


def prepare(out: Path, data, folds: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    paths, labels = [], []
    for label in range(16):
        period, phase = 2 + label // 4, label % 4
        rows = (((np.arange(8) + phase) // period) % 2 * 255.0)[:, None].repeat(8, axis=1)
        for i in range(8):
            paths.append(f"images/{label:02d}/{i}.png")
            labels.append(label)
            (out / paths[-1]).parent.mkdir(parents=True, exist_ok=True)
            noisy = rows + rng.normal(0.0, data.stripes_noise, rows.shape)
            Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(out / paths[-1])
    build_manifest(paths, labels, folds).to_csv(out / MANIFEST_NAME, index=False)


register_dataset(Dataset("stripes", prepare, "stripes, a toy data set", schema=StripesKeys))
'''

TOY_DATASET_CONF = """# @package _global_
# Stripes, a toy data set (pipeline/datasets/stripes.py)
data:
  name: stripes
  stripes_noise: 30.0
"""


def test_a_data_set_is_its_module_and_its_conf_file(copy):
    """Last here: it composes the copy's params.yaml for the new data set and trains a run on it."""
    import pandas as pd

    sh(["git", "add", "-A"], copy)  # the tests before: their reports and dvc.lock
    sh(["git", "commit", "-qm", "the runs so far"], copy)
    (copy / "pipeline/datasets/stripes.py").write_text(TOY_DATASET)
    (copy / "conf/dataset/stripes.yaml").write_text(TOY_DATASET_CONF)
    assert touched(copy) == {"pipeline/datasets/stripes.py", "conf/dataset/stripes.yaml"}
    assert reached_by(copy, "pipeline/datasets/stripes.py") == EVERY_RUN | {"prepare", "embed"}  # not lanml
    sh([sys.executable, "-m", "pipeline.compose", "dataset=stripes"], copy)
    assert yaml.safe_load((copy / "params.yaml").read_text())["data"]["stripes_noise"] == 30.0
    ran = sh(DVC + ["repro", "train@squared"], copy)
    assert all(f"Running stage '{stage}'" in ran for stage in ("prepare", "embed", "train@squared")), ran
    manifest = pd.read_csv(copy / "data/prepared/manifest.csv")
    assert len(manifest) == 128 and manifest.label.nunique() == 16
    assert (copy / "data/models/squared/fold-0-seed-0/summary.json").is_file()
    bad = _fails([sys.executable, "-m", "pipeline.compose", "dataset=stripes", "data.stripes_noise=-1"], copy)
    assert "data.stripes_noise" in bad
