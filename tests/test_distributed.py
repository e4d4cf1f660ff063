"""Two processes on the gloo backend (CPU): one DDP step on each half of a global batch equals the
single-process step on the whole batch (pipeline/batching/distributed.py, pipeline/training.Stepper)."""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from pipeline.methods import build_objective
from pipeline.methods.objective import trainable
from pipeline.models.embedder import Embedder, build_head
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from pipeline.training.stepping import Stepper, make_optimizer, wrap_for_ranks
from tests.conftest import TINY_OVERRIDES, merge, project_params

CPU = torch.device("cpu")
RUNS = ["ms", "proxy_anchor", "c2_ccp", "c2_batch", "c1_xbm"]  # miner; loss parameters; proxies + regulariser
CLASSES, DIM, IN = 4, 8, 16


def _setup(run: str):
    """The same model, objective, optimiser (plain SGD: the step is the gradient) and global batch."""
    params = params_from_dict(
        merge(
            project_params(),
            merge(
                TINY_OVERRIDES,
                {
                    "train": {
                        "optimizer": "sgd",
                        "lr": 0.5,
                        "momentum": 0.0,
                        "weight_decay": 0.0,
                        "grad_clip_norm": 0.0,
                    },
                    "ccp": {"variants": ["batch"], "alternating": ["ccp"]},
                },
            ),
        )
    )
    torch.manual_seed(0)
    model = Embedder(
        None, build_head(IN, DIM, 0), params.ccp.embedding_norm if "ccp" in run or "batch" in run else "l2"
    )
    objective = build_objective(run_setup(params, run), CLASSES)
    if run == "c2_ccp":  # a later sub-problem: trained proxies and a regulariser towards theta_prev
        with torch.no_grad():
            objective.proxies.copy_(torch.randn_like(objective.proxies))
        objective.theta_prev = [p.detach() + 0.05 * torch.randn_like(p) for p in trainable(model)]
        objective.lambda_ = 0.3
    optimizer = make_optimizer(model, objective, params.train)
    x = torch.randn(16, IN)
    y = torch.arange(CLASSES).repeat(4)  # every shard holds every class
    return model, objective, optimizer, params.train, x, y


def _state(model, objective) -> dict:
    return {
        **{f"model.{k}": v.clone() for k, v in model.state_dict().items()},
        **{f"objective.{k}": v.clone() for k, v in objective.state_dict().items()},
    }


def _step(run: str, shard: slice | None = None) -> dict:
    model, objective, optimizer, cfg, x, y = _setup(run)
    step = Stepper(wrap_for_ranks(model, objective, CPU), objective, optimizer, cfg, CPU)
    loss = step(x if shard is None else x[shard], y if shard is None else y[shard])
    assert torch.isfinite(loss)
    return _state(model, objective)


def _worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        share = 16 // world
        results = {run: _step(run, slice(rank * share, (rank + 1) * share)) for run in RUNS}
        if rank == 0:
            torch.save(results, out)
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_processes_take_the_single_process_step(tmp_path):
    out = tmp_path / "ranks.pt"
    mp.spawn(_worker, args=(2, _free_port(), str(out)), nprocs=2, join=True)
    ranked = torch.load(out, weights_only=True)
    for run in RUNS:
        single, before = _step(run), _state(*_setup(run)[:2])
        for key, value in single.items():
            assert torch.allclose(ranked[run][key], value, atol=1e-6), f"{run}: {key} differs"
        moved = [k for k in single if single[k].is_floating_point() and not torch.equal(single[k], before[k])]
        assert any(k.startswith("model.") for k in moved), f"{run}: the step changed nothing"
        if run in ("proxy_anchor", "c2_ccp"):
            assert any(k.startswith("objective.") for k in moved), f"{run}: proxies did not move"


def test_methods_without_multi_process_support_are_refused():
    from pipeline.batching.distributed import DistributedError

    params = params_from_dict(merge(project_params(), TINY_OVERRIDES))
    with pytest.raises(DistributedError, match="PROFSObjective: this method does not support multi-process"):
        build_objective(run_setup(params, "ms_profs_hncm"), CLASSES).distribute()


def test_the_train_stage_under_torchrun_matches_the_single_process_stage(tmp_path, tiny_dict):
    """`train.launcher` = torchrun: 2 gloo processes train the folds with DDP, rank 0 writes; the per-epoch
    validation MAP@R follows the single-process run's (same batches, same steps)."""
    import subprocess
    import sys

    import pandas as pd

    from tests.conftest import ROOT, write_params

    params = write_params(tmp_path / "params.yaml", tiny_dict)

    def stage(*argv, launcher=(sys.executable,)):
        done = subprocess.run(
            [*launcher, "-m", *argv, "--params", str(params)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        assert done.returncode == 0, done.stderr[-2000:]

    stage("stages.prepare", "--out", str(tmp_path / "prepared"))
    stage("stages.embed", "--data", str(tmp_path / "prepared"), "--out", str(tmp_path / "features"))
    common = ["--method", "ms", "--data", str(tmp_path / "prepared"), "--features", str(tmp_path / "features")]
    stage("stages.train", *common, "--out", str(tmp_path / "single"), "--train-logs", str(tmp_path / "single_logs"))
    torchrun = (sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2")
    stage(
        "stages.train",
        *common,
        "--out",
        str(tmp_path / "ddp"),
        "--train-logs",
        str(tmp_path / "ddp_logs"),
        launcher=torchrun,
    )
    for model in ("fold-0-seed-0", "fold-1-seed-0", "fold-0-seed-1", "fold-1-seed-1"):
        assert (tmp_path / "ddp" / model / "model.pt").is_file()
        single = pd.read_csv(tmp_path / "single_logs" / f"{model}.csv")
        ddp = pd.read_csv(tmp_path / "ddp_logs" / f"{model}.csv")
        assert len(ddp) == len(single)
        assert ddp.val_map_at_r.to_numpy() == pytest.approx(single.val_map_at_r.to_numpy(), abs=1e-4)
