"""The loss registry: one record per loss, one name, torch-free params, builders equal to the library's."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from pytorch_metric_learning import distances, losses

from pipeline.families.ccp import CCPConfig
from pipeline.families.profs import PROFSConfig
from pipeline.infra.schema import section
from pipeline.losses import LossContext, build_loss, loss_records, register_loss, schema_tag
from pipeline.losses.ccp import CosineContrastiveLossParams
from pipeline.losses.revisiting import MultiSimilarityLossParams


def test_every_record_is_named_by_its_schema_tag():
    records = loss_records()
    assert len(records) >= 21
    for name, record in records.items():
        assert record.name == name and schema_tag(record.schema) in (None, name)
    untagged = [name for name, record in records.items() if schema_tag(record.schema) is None]
    assert untagged == ["c2"]  # CCP's own section, never a baseline's choice


def test_every_family_loss_section_has_a_record():
    """ccp.ms, profs.lifted ...: a family's loss key names a section whose schema a record builds."""
    schemas = {record.schema for record in loss_records().values()}
    for config in (CCPConfig(), PROFSConfig()):
        for key in config.losses:
            if key == "npair":  # PROFS pairs examples with representatives (pipeline/methods/profs.py)
                continue
            assert type(getattr(config, key)) in schemas, key


def test_params_load_without_torch():
    code = "import sys, pipeline.config.params as p; p.load_params('params.yaml'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("similarity", ["cosine", "dot"])
def test_one_c1_for_baselines_and_ccp(similarity):
    """The baselines' C1 (library defaults, cosine) and CCP's (its similarity and reduction) are one builder."""
    torch.manual_seed(0)
    x, y = torch.randn(12, 6), torch.randint(0, 3, (12,))
    distance = (
        distances.CosineSimilarity()
        if similarity == "cosine"
        else distances.DotProductSimilarity(normalize_embeddings=False)
    )
    ours = build_loss(CosineContrastiveLossParams(neg_margin=0.3), LossContext(similarity=similarity))
    theirs = losses.ContrastiveLoss(pos_margin=1.0, neg_margin=0.3, distance=distance)
    assert torch.equal(ours(x, y), theirs(x, y))


def test_baseline_ms_is_the_librarys_default():
    torch.manual_seed(1)
    x, y = torch.randn(12, 6), torch.randint(0, 3, (12,))
    ours = build_loss(MultiSimilarityLossParams(alpha=2.0, beta=40.0, base=0.5))
    assert torch.equal(ours(x, y), losses.MultiSimilarityLoss(alpha=2.0, beta=40.0, base=0.5)(x, y))


def test_register_loss_refuses_a_second_owner_of_a_name_and_a_mismatched_tag():
    from typing import Literal

    @section
    class Impostor:
        name: Literal["triplet"] = "triplet"

    with pytest.raises(TypeError, match="loss 'triplet' is already registered by pipeline.losses.revisiting"):
        register_loss(Impostor)(lambda cfg, ctx: None)

    @section
    class Mislabelled:
        name: Literal["one"] = "one"

    with pytest.raises(TypeError, match="Mislabelled needs a name"):
        register_loss(Mislabelled, name="other")(lambda cfg, ctx: None)
