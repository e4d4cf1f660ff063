"""The report's inputs: every cached result it reads (checked before anything is written), what it publishes
beside its tables, and the lines that say what was run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pipeline.config import ParamsError
from pipeline.datasets import datasets
from pipeline.infra.io import read_json
from pipeline.reporting import budgets, comparison, selection
from pipeline.reporting.reference import read_published
from pipeline.reporting.subproblems import read_subproblems
from pipeline.runs import all_runs, alternating_ccp_runs, ccp_runs, model_ids, parse_run, run_train_config
from pipeline.studies import ablation
from pipeline.studies.tuning import tuning_order


def _need(path: Path, what: str, hint: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: {what} not found ({hint})")
    return path


@dataclass(frozen=True)
class ReportInputs:
    """Every cached result the report reads (`load`), each named for what it holds."""

    metrics: dict[str, dict]  # run -> the evaluate stage's metrics JSON
    backbone: dict  # the backbone's features with no head trained: the same metrics (evaluate)
    per_class: dict[str, pd.DataFrame]  # run -> per-class test scores (index: class)
    logs: pd.DataFrame  # every epoch row of every model (budgets.read_logs)
    patience: dict[str, int]  # run -> its early-stopping patience
    max_epochs: dict[str, int]  # run -> its epoch cap
    budgets: pd.DataFrame  # one row per model: best / stop epoch, cut while improving, failed
    reruns: pd.DataFrame  # run -> the chosen configuration's validation MAP@R beside its rerun seeds' (selection)
    map_at_r: pd.DataFrame  # run -> separated test MAP@R (column `value`)
    spectral_decay: dict[str, float]  # report.spectrum_runs -> mean spectral decay
    spectra: dict[str, pd.DataFrame]  # report.spectrum_runs -> singular values per model
    subproblems: pd.DataFrame  # CCP sub-problem rows of the Loss-Proxy and alternating runs
    alternating_runs: list[str]  # the CCP runs that re-initialise their proxies (Algorithm 1)
    alternating_rows: pd.DataFrame  # `subproblems` of those runs
    ablations: dict[str, pd.DataFrame]  # study (ccp, profs) -> its sweep table
    lanml: list[dict]  # one LANML result per lanml.datasets
    poc: dict  # the 2-D proof of concept (reports/ccp_poc.json)
    info: dict  # the feature cache's info.json (backbone description)
    tuning: list[dict]  # one tuning record per run, in tuning order
    settings: dict[str, dict]  # run -> the settings it trained at, its tuned values applied (data/tuned/<run>.json)
    published: pd.DataFrame  # the papers' numbers (reference/published.csv)


def load(params, args) -> ReportInputs:
    """Every input of the report, or a FileNotFoundError naming the first one missing."""
    runs = all_runs(params)
    missing = [r for r in params.report.spectrum_runs if r not in runs]
    if missing:
        raise ParamsError(
            f"{Path(args.params).name}: report.spectrum_runs: {', '.join(missing)} not among the "
            f"trained runs ({', '.join(runs)})"
        )
    proxy_runs = [r for r in ccp_runs(params) if parse_run(r)[2] != "batch"]
    metrics = {r: read_json(_need(Path(args.metrics) / f"{r}.json", "metrics", "run the evaluate stage")) for r in runs}
    per_class = {
        r: pd.read_csv(
            _need(Path(args.per_class) / f"{r}.csv", "per-class scores", "run the evaluate stage"), index_col="class"
        )
        for r in runs
    }
    subproblems = read_subproblems(Path(args.subproblems), proxy_runs, model_ids(params))
    alternating = alternating_ccp_runs(params)
    logs = budgets.read_logs(Path(args.train_logs), runs, model_ids(params))
    patience = {r: run_train_config(params, r).patience for r in runs}
    models = budgets.per_model(logs, patience, params.train.min_delta)
    return ReportInputs(
        metrics=metrics,
        backbone=read_json(_need(Path(args.backbone), "backbone features' metrics", "run the evaluate stage")),
        per_class=per_class,
        logs=logs,
        patience=patience,
        max_epochs={r: run_train_config(params, r).max_epochs for r in runs},
        budgets=models,
        reruns=selection.reruns(selection.kept_scores(models, logs)),
        map_at_r=comparison.measured(metrics, [("separated:map_at_r", "MAP@R")]).set_index("run"),
        spectral_decay={r: metrics[r]["separated"]["mean"]["spectral_decay"] for r in params.report.spectrum_runs},
        spectra={
            r: pd.read_csv(_need(Path(args.spectra) / f"{r}.csv", "spectrum", "run the evaluate stage"))
            for r in params.report.spectrum_runs
        },
        subproblems=subproblems,  # Loss-Proxy and the alternating runs
        alternating_runs=alternating,
        alternating_rows=subproblems[subproblems.run.isin(alternating)] if len(subproblems) else subproblems,
        ablations={
            s: pd.read_csv(_need(Path(args.ablations) / f"{s}.csv", "ablation table", f"run ablation@paper-{s}"))
            for s in ablation.studies()
        },
        lanml=[
            read_json(_need(Path(args.lanml) / f"{d}.json", "LANML results", f"run lanml@paper-{d}"))
            for d in params.lanml.datasets
        ],
        poc=read_json(_need(Path(args.poc), "proof-of-concept results", "run the poc stage")),
        info=read_json(_need(Path(args.features) / "info.json", "feature cache info", "run the embed stage")),
        tuning=[
            read_json(_need(Path(args.tuning) / f"{r}.json", "tuning record", "run the values stage"))
            for r in tuning_order(params)
        ],
        settings={
            r: read_json(_need(Path(args.tuned) / f"{r}.json", "tuned settings", "run the values stage"))["settings"]
            for r in runs
        },
        published=read_published(Path(args.reference)),
    )


def context_lines(params, inputs) -> str:
    first = next(iter(inputs.metrics.values()))
    where = f"**{params.data.name}** ({datasets()[params.data.name].description.format(data=params.data)})"
    return (
        f"- data set: {where}\n"
        f"- test set: {first['num_test_images']} images of {first['num_test_classes']} unseen classes\n"
        f"- backbone: {inputs.info['description']}\n"
        f"- training mode: {params.train.mode}, embedding {params.train.embedding_dim}-D, "
        f"{len(params.experiment.folds)} MLRC folds x {len(params.experiment.seeds)} replicate seeds "
        f"({', '.join(map(str, params.experiment.seeds))})\n"
        f"- hyperparameters: {_tuned_line(inputs.tuning)}\n"
    )


def _tuned_line(records: list[dict]) -> str:
    tuned = [r["run"] for r in records if r["trials"]]
    if not tuned:
        return "not tuned (`tune.trials` 0): each run at params.yaml's values, `tune.start`'s for the searched keys"
    counts = sorted({r["trials"] for r in records if r["trials"]})
    studies = ", ".join(f"{sum(r['trials'] == n for r in records)} of {n} trials" for n in counts)
    return (
        f"tuned on the validation folds, never the test classes ({len(tuned)} studies: {studies}; the values each run "
        "trained at: [tuning.md](tuning.md))"
    )


def published(params, args) -> dict[str, list[Path]]:
    """What the report copies into reports/: name -> sources (pipeline/reporting/publish.py)."""
    runs, ccp = all_runs(params), ccp_runs(params)
    return {
        "train_logs": [Path(args.train_logs) / r for r in runs],
        "subproblems": [Path(args.subproblems) / r for r in ccp],
        "metrics": [Path(args.metrics) / f"{r}.json" for r in runs],
        "spectra": [Path(args.spectra) / f"{r}.csv" for r in runs],
        "per_class": [Path(args.per_class) / f"{r}.csv" for r in runs],
        "ablations": [Path(args.ablations) / f"{s}.csv" for s in ablation.studies()],
        "lanml": [Path(args.lanml) / f"{d}.json" for d in params.lanml.datasets],
        "tuned": sorted(Path(args.tuned).glob("*.json")),
        "tuning": sorted(Path(args.tuning).glob("*.json")),
        "pictures": [Path(args.pictures) / "retrieval", Path(args.pictures) / "maps"],
    }
