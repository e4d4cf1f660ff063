"""poc: CCP's 2-D proof of concept (Fig. 2): Loss-Proxy vs CCP vs sample-based CCP on the ten digit classes,
each from every replicate seed of ``poc.seeds`` (in ``train.workers`` processes). The figure shows the first
seed; the metrics file holds every seed's numbers and their mean."""

from pathlib import Path

import numpy as np

from pipeline.infra.io import write_json
from pipeline.infra.parallel import run_jobs
from pipeline.params.root import Params
from pipeline.reporting.figures import poc_figure
from pipeline.studies.poc import poc_job, poc_setup
from stages._common import run

PANELS = {
    "loss_proxy": "(a) Loss-Proxy: one proxy-DML, trained to convergence",
    "ccp": "(b) CCP: Algorithm 1, re-initialised proxies",
    "sample_ccp": "(c) sample-based CCP: anchors are samples (section 5.3)",
}
MEAN_KEYS = (
    "covering_radius_max",
    "covering_radius_mean",
    "next_radius_max",
    "next_radius_mean",
    "test_map_at_r",
    "test_precision_at_1",
    "subproblems",
    "epochs",
)
KEYS = MEAN_KEYS + ("best_epoch", "stop_reason", "cut_while_improving")  # per seed: where and why it stopped


def main(params, args):
    seeds = params.poc.seeds
    setup = poc_setup(params)
    jobs = [(setup, variant, seed) for seed in seeds for variant in PANELS]
    results = run_jobs(poc_job, jobs, params.train.workers, params.train.threads_per_worker, desc="poc")
    by_job = {(variant, seed): r for (_, variant, seed), r in zip(jobs, results)}
    poc_figure({title: by_job[variant, seeds[0]] for variant, title in PANELS.items()}, Path(args.figure))
    out = {}
    for variant in PANELS:
        per_seed = {f"seed_{s}": {k: by_job[variant, s][k] for k in KEYS} for s in seeds}
        out[variant] = {
            "mean": {k: float(np.mean([m[k] for m in per_seed.values()])) for k in MEAN_KEYS},
            "seeds": per_seed,
        }
    write_json(args.out, out)


def configure(p):
    p.add_argument("--figure", default="reports/figures/ccp_poc.png")
    p.add_argument("--out", default="reports/ccp_poc.json")


if __name__ == "__main__":
    run(__doc__, configure, main, Params)
