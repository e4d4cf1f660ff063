"""Shared fixtures: a tiny params override and a prepared tiny data set."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from pipeline.params.root import params_from_dict

ROOT = Path(__file__).resolve().parents[1]

# A configuration small enough for CPU tests: 16 classes (8 train / 8 test), 2 folds, short training.
# the longest modules (end-to-end `dvc repro` runs) first: under `-n 2 --dist loadfile` (README, pyproject.toml) the two
# workers start the two longest at once and the short modules fill in behind them, instead of one long tail
LONGEST_FIRST = (
    "test_pipeline_e2e.py",
    "test_adding_a_method.py",
    "test_fresh_clones.py",
    "test_numerics.py",
    "test_stages.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))  # stable: the rest keep their order


TINY_OVERRIDES = {
    "experiment": {"methods": ["ms", "proxy_anchor"], "folds": [0, 1], "seeds": [0, 1]},
    "data": {"num_classes": 16, "images_per_class": 8},
    "train": {
        "embedding_dim": 8,
        "head_hidden": 16,
        "classes_per_batch": 2,
        "images_per_class": 4,
        "steps_per_epoch": 3,
        "max_epochs": 3,
        "patience": 2,
    },
    "eval": {"kmeans_niter": 5},
    # no study (the default's 30 trials a study: the tests that tune set their own, test_tuning.py): a key that reads
    # `study` trains at tune.start's value; the tiny pool of 3 proxies (2 a class) is one of them
    "tune": {"trials": 0, "start": {"ccp": {"pool_size": 3}}},
    # zero_lambda_first off: the tiny runs may have a single sub-problem, and ccp.lambda must still act there
    "ccp": {
        "losses": ["c2"],
        "variants": ["loss_proxy"],
        "alternating": ["ccp"],
        "proxies_per_class": 2,
        "zero_lambda_first": False,
    },
    "profs": {"losses": ["ms"], "variants": ["plain", "profs_hncm"]},
    "poc": {"max_epochs": 3, "max_subproblems": 2, "hidden": 8, "seeds": [0, 1]},
    "ablation": {
        "ccp": {"proxies_per_class": [1, 2], "pool_factors": [1, 2], "lambdas": [0.0, 2e-4]},
        "profs": {"loss": "ms", "lambdas": [0.0, 1e-3], "m": [5]},
    },
    # 3 queries x top-3 (12 panels, not 36): the pictures stage draws with matplotlib, a third of its run otherwise
    "report": {"spectrum_runs": ["ms", "c2_ccp"], "retrieval_queries": 3, "retrieval_k": 3},
    "lanml": {
        "datasets": ["iris"],
        "methods": ["euclidean", "lanml_minus", "lmnn"],
        "repeats": 2,
        "cv_folds": 2,
        "max_k": 5,
        "grids": {
            "lanml_minus": {"lam": [0.5], "gamma1": [-1.0], "gamma2": [2.0]},
            "lmnn": {"regularization": [0.5], "n_neighbors": [3]},
        },
    },
}

# every stage's jobs in the stage's own process, no worker processes: for the end-to-end `dvc repro` tests, whose point
# is not the workers (each worker imports torch again: about 10 s of CPU a stage). The stages' workers are tested in
# tests/test_numerics.py (the train, embed, evaluate and LANML stages on two processes), test_parallel.py, test_tuning.py
ONE_PROCESS = {"train": {"workers": 1}, "eval": {"workers": 1}, "lanml": {"workers": 1}}


def merge(base: dict, overrides: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        out[key] = merge(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def project_params() -> dict:
    """The project's params.yaml as a dict (YAML 1.2 numbers via OmegaConf), less experiment.runs: that list is
    composed from the lists the tests change (conf/config.yaml ${dml_runs:})."""
    from omegaconf import OmegaConf

    params = OmegaConf.to_container(OmegaConf.load(ROOT / "params.yaml"))
    del params["experiment"]["runs"]
    return params


@pytest.fixture
def tiny_dict() -> dict:
    return merge(project_params(), TINY_OVERRIDES)


@pytest.fixture
def tiny_params(tiny_dict):
    return params_from_dict(tiny_dict)


def write_params(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def write_params_like_dvc(path: Path, overrides: dict, template: Path = ROOT / "params.yaml") -> Path:
    """`template` (the project's params.yaml) with `overrides` set the way `dvc exp run --no-hydra -S` sets
    them (DVC's own YAML round trip), so the file keeps the template's layout and comments."""
    from dvc.utils.serialize import modify_yaml

    path.write_text(template.read_text())

    def assign(node, values):
        for key, value in values.items():
            if isinstance(value, dict) and key in node:
                assign(node[key], value)
            else:
                node[key] = value

    with modify_yaml(path) as data:
        assign(data, overrides)
    return path


@pytest.fixture
def tiny_data(tmp_path, tiny_params):
    """A prepared tiny digit-pairs set and its feature cache."""
    import torch

    from pipeline.data.manifest import read_manifest
    from pipeline.datasets.digit_pairs import write_digit_pairs
    from pipeline.models.features import extract_features

    root = tmp_path / "prepared"
    root.mkdir()
    d = tiny_params.data
    write_digit_pairs(
        root,
        d.num_classes,
        d.images_per_class,
        d.train_instance_fraction,
        len(tiny_params.experiment.folds),
        tiny_params.seed,
    )
    manifest = read_manifest(root)
    return manifest, extract_features(manifest, tiny_params.backbone, "white", torch.device("cpu"))


class FileServer:
    """A loopback HTTP server of in-memory files with Range support; `cut[name]` = bytes after which the
    next full (non-range) transfer of `name` is cut. `ranges` records the Range starts it was asked for."""

    def __init__(self, files: dict[str, bytes]):
        import http.server
        import threading

        self.files, self.cut, self.ranges, self.requests = dict(files), {}, [], []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                name = self.path.lstrip("/")
                server.requests.append(name)
                if name not in server.files:
                    self.send_error(404)
                    return
                start = 0
                if "Range" in self.headers:
                    start = int(self.headers["Range"].split("=")[1].rstrip("-"))
                    server.ranges.append(start)
                body = server.files[name][start:]
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                cut = server.cut.pop(name, None) if not start else None
                self.wfile.write(body if cut is None else body[:cut])
                if cut is not None:
                    self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def file_server():
    servers = []

    def start(files: dict[str, bytes]) -> FileServer:
        servers.append(FileServer(files))
        return servers[-1]

    yield start
    for s in servers:
        s.httpd.shutdown()


def copy_companion(repo: Path) -> None:
    """The report's companion into `repo`: the emoji default's claims table, and what the forest re-decides it from
    (its tuning records; its budgets.csv and training logs, which measure its noise)."""
    import shutil

    emoji, into = ROOT / "reports" / "emoji", repo / "reports" / "emoji"
    into.mkdir(parents=True, exist_ok=True)
    for name in ("claims.csv", "budgets.csv"):
        shutil.copy(emoji / name, into / name)
    for folder in ("tuning", "train_logs"):
        shutil.copytree(emoji / folder, into / folder)
