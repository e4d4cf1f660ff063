"""Benchmark: what a tuning study costs (trials a minute, minutes a study), by part, with and without the pruner.

Runs real studies as `dml tune` does (pipeline/studies/tuning.py run_study with its validation objective: every MLRC
fold of a trial trained in the stage's worker processes, kept across the trials) in a temporary journal, for a
baseline, a CCP and a PROFS run of a composed params file on its feature cache, once per pruner setting, and times
every trial and every fold model inside it. Per run and setting it prints:
- trials, minutes for them, trials a minute, and the minutes of a `--study-trials` study at that rate (an estimate
  when fewer trials ran: the first trials are random ones, never pruned, so a short run understates pruning);
- the parts' shares of the workers' time: training the fold models (per epoch: `s/epoch`), the workers idle while a
  trial waits for its slowest fold (4 folds on 2 workers), and the rest (the study's own work between trials:
  the sampler, the journal, starting the worker processes once);
- the epochs the fold models trained and how many trials were pruned.

    python benchmarks/bench_tune.py                               # digit default: data/prepared, data/features
    python benchmarks/bench_tune.py --params P --data D --features F --runs ms c2_ccp ms_profs --trials 20
    python benchmarks/bench_tune.py --pruners none percentile     # before and after (default: both)
    python benchmarks/bench_tune.py --screen-logs reports/emoji     # the rule on a finished run's train logs
    python benchmarks/bench_tune.py --journals J --pruners none     # keep the studies; again: replay other settings
"""

from __future__ import annotations

import pipeline  # noqa: F401  (first: it pins the CPU numerics before numpy and torch load)

# isort: split
import argparse
import dataclasses
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import input_arguments, raw_params

from pipeline.infra.parallel import Workers
from pipeline.infra.runtime import train_workers
from pipeline.params.root import params_from_dict
from pipeline.studies import tuning


def timed_fold_job(job):
    """A fold job in a worker (pipeline/training/worker.py) with its wall seconds."""
    from pipeline.training.worker import run_fold_job

    start = time.perf_counter()
    outcome = run_fold_job(job)
    return outcome, time.perf_counter() - start


class TimedWorkers(Workers):
    """`dml tune`'s workers, keeping each fold job's seconds and epochs."""

    def __init__(self, *args):
        super().__init__(*args)
        self.folds: list[tuple[float, int]] = []

    def run(self, fn, jobs, desc="jobs"):
        results = super().run(timed_fold_job, jobs, desc)
        self.folds += [(seconds, len(outcome.history) - 1) for outcome, seconds in results]
        return [outcome for outcome, _ in results]


def bench_study(params, run: str, data: str, features: str, trials: int, journal: Path) -> dict:
    """One study of `run` at params.yaml's values of the keys it would inherit: the figures above."""
    times: list[float] = []
    with TimedWorkers(train_workers(params.train), params.train.threads_per_worker) as workers:
        objective = tuning.validation_objective(params, run, data, features, workers)

        def timed(values, floors):
            start = time.perf_counter()
            result = objective(values, floors)
            times.append(time.perf_counter() - start)
            return result

        start = time.perf_counter()
        study = tuning.run_study(params, run, timed, journal, trials)
        wall = time.perf_counter() - start
        history = tuning.completed_trials(study)
    rule = params.tune.pruner
    replayed = replay(study, dataclasses.replace(rule, rule="percentile")) if rule.rule == "none" else None
    fold_seconds = sum(s for s, _ in workers.folds)
    epochs = sum(e for _, e in workers.folds)
    return {
        "trials": len(history),
        "pruned": sum(t["val_map_at_r"] is None for t in history),
        "minutes": wall / 60,
        "trial_s": np.array(times or [0.0]),  # none when the journal held a finished study (--journals)
        "train": fold_seconds / (workers.count * wall),
        "idle": (workers.count * sum(times) - fold_seconds) / (workers.count * wall),
        "rest": (wall - sum(times)) / wall,
        "epochs": epochs,
        "s_per_epoch": fold_seconds / max(1, epochs),
        "best": max(t["val_map_at_r"] for t in history if t["val_map_at_r"] is not None),
        "replayed": replayed,
    }


class Recorded:
    """A completed trial as `pruning_floors` reads it."""

    def __init__(self, curves):
        self.user_attrs = {"curves": curves}


def replay(study, rule) -> dict:
    """The pruner `rule` replayed on a study that ran without it (every trial complete, its fold curves recorded):
    in trial order, the floors of the trials it would have kept; a trial is cut when one of its fold models falls
    below its floor, and all its fold models are counted as stopped at that epoch (the siblings stop at their next
    epoch, or at their first when they had not started: this is an estimate of the saving). The sampler would have
    proposed other trials after a cut one, so this tells what the rule cuts among these trials, not the study it
    would have run."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    ranked = sorted((t.value for t in trials), reverse=True)
    kept, cut, trained, saved = [], [], 0, 0
    for n, trial in enumerate(trials):
        curves = trial.user_attrs["curves"]
        trained += sum(len(c) - 1 for c in curves)
        floors = tuning.pruning_floors(kept, rule, list(range(len(curves))))
        stops = [
            next((e for e in range(len(c)) if floors[i].below(c[: e + 1])), None) if floors else None
            for i, c in enumerate(curves)
        ]
        first = min((e for e in stops if e is not None), default=None)
        if first is None:
            kept.append(Recorded(curves))
        else:
            cut.append((n, first, ranked.index(trial.value) + 1))
            saved += sum(max(0, len(c) - 1 - first) for c in curves)
    return {"cut": cut, "saved": saved / max(1, trained), "trials": len(trials)}


def screen_logs(reports: Path, rule) -> None:
    """The rule on a finished report's models (`<reports>/train_logs/<run>/fold-<k>-seed-<s>.csv`), each judged
    against the field of every model in the report on its fold: at each checkpoint the floor is the
    `rule.percentile` of all those models' best validation MAP@R so far at that epoch (a model that stopped holds its
    last best), as if the report's runs were the completed trials of one study. A study's trials are one method at
    many values, the field here is many methods at their tuned values, so this is a harsher test of the rule than a
    study: a cut model that ends above the field's median final value is a late bloomer the rule would have lost.
    Prints every cut model with the epoch, how far it climbed after and whether it was a late bloomer."""
    import csv

    from pipeline.training.pruning import Floor

    curves: dict[tuple[str, str], list[float]] = {}
    for log in sorted((reports / "train_logs").glob("*/fold-*-seed-*.csv")):
        with open(log) as fh:
            curves[log.parent.name, log.stem] = [float(row["val_map_at_r"]) for row in csv.DictReader(fh)]
    cut = []
    for fold in sorted({model.split("-")[1] for _, model in curves}):
        field = {key: c for key, c in curves.items() if key[1].split("-")[1] == fold}
        length = max(len(c) for c in field.values())
        held = np.stack([np.pad(np.maximum.accumulate(c), (0, length - len(c)), mode="edge") for c in field.values()])
        floor = Floor(tuple(np.percentile(held, rule.percentile, axis=0)), rule.warmup, rule.interval, rule.window)
        median_final = float(np.median(held[:, -1]))
        for key, c in field.items():
            stop = next((e for e in range(len(c)) if floor.cuts(c[: e + 1])), None)
            if stop is not None:
                cut.append((*key, stop, len(c) - 1, max(c[: stop + 1]), max(c), max(c) > median_final))
    late = [row for row in cut if row[-1]]
    print(
        f"{reports}: {len(curves)} models, each against the field of its fold: {len(cut)} cut, {len(late)} of them "
        "late bloomers (ending above the field's median)"
    )
    for run, model, stop, epochs, then, best, bloomer in cut:
        print(
            f"- {run} {model}: cut at epoch {stop} of {epochs} (best then {100 * then:.2f}, at the end "
            f"{100 * best:.2f}){' LATE BLOOMER' if bloomer else ''}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    input_arguments(parser)
    parser.add_argument("--trials", type=int, default=20, help="trials to run per study")
    parser.add_argument("--study-trials", type=int, default=20, help="the study size the estimate is for")
    parser.add_argument("--pruners", nargs="+", default=["none", "percentile"], choices=["none", "percentile"])
    parser.add_argument("--screen-logs", type=Path, metavar="REPORTS", help="instead: screen a report's train logs")
    parser.add_argument(
        "--journals",
        type=Path,
        help="keep the studies' journals here (default: a temporary folder); run again with the same folder, the "
        "finished studies resume without training: `--pruners none` then replays the params' pruner settings on them",
    )
    args = parser.parse_args()
    raw = raw_params(args.params)
    base = params_from_dict(raw)
    if args.screen_logs:
        return screen_logs(args.screen_logs, base.tune.pruner)
    print(
        f"{base.data.name}: {args.trials} trials a study, folds {base.experiment.folds}, "
        f"{train_workers(base.train)} workers x {base.train.threads_per_worker} thread, {os.cpu_count()} cores"
    )
    header = ["run", "pruner", "trials", "pruned", "min", "trials/min", f"min/{args.study_trials}", "s/trial (max)"]
    header += ["train %", "idle %", "rest %", "epochs", "ms/epoch", "best val"]
    rows, replays = [], []
    with tempfile.TemporaryDirectory() as scratch:
        journals = args.journals or Path(scratch)
        for run in args.runs:
            for rule in args.pruners:
                tune = dataclasses.replace(base.tune, pruner=dataclasses.replace(base.tune.pruner, rule=rule))
                params = dataclasses.replace(base, tune=tune)
                r = bench_study(params, run, args.data, args.features, args.trials, journals / f"{run}-{rule}")
                rate = r["trials"] / r["minutes"]
                rows.append(
                    [run, rule, r["trials"], r["pruned"], f"{r['minutes']:.2f}", f"{rate:.2f}"]
                    + [f"{args.study_trials / rate:.1f}", f"{r['trial_s'].mean():.1f} ({r['trial_s'].max():.1f})"]
                    + [f"{100 * r[k]:.0f}" for k in ("train", "idle", "rest")]
                    + [r["epochs"], f"{1e3 * r['s_per_epoch']:.0f}", f"{100 * r['best']:.2f}"]
                )
                print(" | ".join(map(str, rows[-1])), flush=True)
                if r["replayed"]:
                    replays.append((run, r["replayed"]))
                    print(_replay_line(*replays[-1]), flush=True)
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")
    if replays:
        pruner = base.tune.pruner
        print(
            f"\nThe percentile rule ({pruner.percentile:g}th, checks from epoch {pruner.warmup} every "
            f"{pruner.interval}, window {pruner.window}, after {pruner.min_trials} trials) replayed on the studies "
            "run without it:"
        )
        for run, replayed in replays:
            print(f"- {_replay_line(run, replayed)}")


def _replay_line(run: str, replayed: dict) -> str:
    cut = ", ".join(f"trial {n} at epoch {e} (rank {rank})" for n, e, rank in replayed["cut"]) or "none"
    best = any(rank == 1 for _, _, rank in replayed["cut"])
    return (
        f"{run}: would cut {len(replayed['cut'])} of {replayed['trials']} trials ({cut}; rank = its final value's "
        f"place among the trials), {100 * replayed['saved']:.0f}% of their epochs; the best trial cut: {best}"
    )


if __name__ == "__main__":
    main()
