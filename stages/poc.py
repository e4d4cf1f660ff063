"""poc: CCP's 2-D proof of concept (Fig. 2): Loss-Proxy vs CCP vs sample-based CCP on the ten digit classes."""

from pathlib import Path

from pipeline.io import write_json
from pipeline.poc import digit_splits, run_poc
from pipeline.reporting.figures import poc_figure
from pipeline.runtime import choose_device
from stages._common import run


def main(params, args):
    data = digit_splits(params.seed, params.poc.val_fraction, params.poc.test_fraction)
    device = choose_device(params.train.device)
    runs = {
        "(a) Loss-Proxy: one proxy-DML, trained to convergence": run_poc(params, "loss_proxy", data, device),
        "(b) CCP: Algorithm 1, re-initialised proxies": run_poc(params, "ccp", data, device),
        "(c) sample-based CCP: anchors are samples (section 5.3)": run_poc(params, "sample_ccp", data, device),
    }
    poc_figure(runs, Path(args.figure))
    keys = ("covering_radius_max", "covering_radius_mean", "next_radius_max", "next_radius_mean", "test_map_at_r",
            "subproblems", "epochs")
    names = ("loss_proxy", "ccp", "sample_ccp")
    write_json(args.out, {name: {k: r[k] for k in keys} for name, r in zip(names, runs.values())})


def configure(p):
    p.add_argument("--figure", default="reports/figures/ccp_poc.png")
    p.add_argument("--out", default="reports/ccp_poc.json")


if __name__ == "__main__":
    run(__doc__, configure, main)
