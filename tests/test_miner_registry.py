"""The miner registry: one record per miner, named by its schema's tag, torch-free params, builders equal to the
library's miners, and the triplet flag the rho-regularisation check reads."""

from __future__ import annotations

from typing import Literal

import pytest
import torch
from pytorch_metric_learning import miners

from pipeline.config import ParamsError
from pipeline.infra.registry import schema_tag
from pipeline.infra.schema import section
from pipeline.miners import build_miner, miner_records, register_miner
from pipeline.miners.library import DistanceWeightedMinerParams, MultiSimilarityMinerParams, NoMinerParams
from pipeline.miners.modules.tuple_miners import TripletPerAnchorMiner
from pipeline.miners.revisiting import SemihardMinerParams
from pipeline.params.root import params_from_dict


def test_every_record_is_named_by_its_schema_tag_and_says_whether_it_mines_triplets():
    records = miner_records()
    assert {name: r.triplets for name, r in records.items()} == {
        "distance_weighted": True,
        "multi_similarity": False,
        "none": False,
        "random": True,
        "semihard": True,
        "softhard": True,
    }
    assert all(schema_tag(r.schema) == name for name, r in records.items())


def test_builders_give_the_librarys_miners_and_ours():
    torch.manual_seed(0)
    x, y = torch.nn.functional.normalize(torch.randn(16, 4), dim=1), torch.arange(8).repeat(2)
    assert build_miner(NoMinerParams()) is None
    ours = build_miner(MultiSimilarityMinerParams(epsilon=0.2))
    theirs = miners.MultiSimilarityMiner(epsilon=0.2)
    assert all(torch.equal(a, b) for a, b in zip(ours(x, y), theirs(x, y)))
    weighted = build_miner(DistanceWeightedMinerParams(cutoff=0.3, nonzero_loss_cutoff=1.2))
    assert isinstance(weighted, miners.DistanceWeightedMiner)
    assert (weighted.cutoff, weighted.nonzero_loss_cutoff) == (0.3, 1.2)
    semihard = build_miner(SemihardMinerParams())
    assert isinstance(semihard, TripletPerAnchorMiner) and semihard.rule == "semihard"
    assert not semihard.distance.normalize_embeddings  # Euclidean on the embeddings as the model gave them


def with_miner(tiny_dict: dict, miner: dict, p_switch: float = 0.0) -> dict:
    """The tiny params with ms's miner replaced (not merged: each miner has its own keys)."""
    ms = {**tiny_dict["baselines"]["ms"], "miner": miner, "p_switch": p_switch}
    return {**tiny_dict, "baselines": {**tiny_dict["baselines"], "ms": ms}}


def test_a_run_names_its_miner_and_rho_regularisation_needs_a_triplet_miner(tiny_dict):
    params = params_from_dict(with_miner(tiny_dict, {"name": "semihard"}, 0.2))
    assert type(params.baselines["ms"].miner) is SemihardMinerParams
    with pytest.raises(ParamsError, match=r"needs a miner in \['distance_weighted', 'random', 'semihard'"):
        params_from_dict(with_miner(tiny_dict, {"name": "multi_similarity"}, 0.2))
    with pytest.raises(ParamsError, match="miner"):
        params_from_dict(with_miner(tiny_dict, {"name": "hardest"}))


def test_register_miner_refuses_a_second_owner_of_a_name_and_a_schema_without_a_tag():
    @section
    class Impostor:
        name: Literal["random"] = "random"

    with pytest.raises(TypeError, match="miner 'random' is already registered by pipeline.miners.revisiting"):
        register_miner(Impostor)(lambda cfg: None)

    @section
    class Untagged:
        epsilon: float = 0.1

    with pytest.raises(TypeError, match="needs a name"):
        register_miner(Untagged)(lambda cfg: None)
