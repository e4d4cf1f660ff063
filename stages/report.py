"""report: the comparison table of every method (markdown and CSV) under reports/."""

from pathlib import Path

from pipeline.io import read_json, write_text
from pipeline.reporting.tables import markdown_table, results_frame
from stages._common import run


def main(params, args):
    metrics = {}
    for method in params.experiment.methods:
        path = Path(args.metrics) / f"{method}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: metrics not found (run evaluate@{method})")
        metrics[method] = read_json(path)
    info = read_json(Path(args.features) / "info.json")
    frame = results_frame(metrics, params.eval.recall_at, params.train.embedding_dim)
    concatenated_last = frame["protocol"].str.startswith("concatenated")
    frame = frame.assign(_last=concatenated_last).sort_values(
        ["_last", params.report.sort_by], ascending=[True, False], kind="stable").drop(columns="_last")
    first = next(iter(metrics.values()))
    header = (
        "# Results\n\n"
        f"- data set: **{params.data.name}** (the embedded default, made from scikit-learn's bundled digits; "
        "these numbers are not a reproduction of CUB / Cars196 / SOP / In-shop results)\n"
        f"- test set: {first['num_test_images']} images of {first['num_test_classes']} unseen classes\n"
        f"- backbone: {info['description']}\n"
        f"- training mode: {params.train.mode}, embedding {params.train.embedding_dim}-D, "
        f"{len(params.experiment.folds)} MLRC folds\n"
        "- metrics in %; separated = mean ± sample std over the fold models; "
        "concatenated = the folds' L2-normalised embeddings concatenated; best per protocol in bold\n\n"
    )
    write_text(Path(args.out) / "results.md", header + markdown_table(frame, params.eval.recall_at, params.report.decimals))
    write_text(Path(args.out) / "results.csv", frame.to_csv(index=False, float_format="%.4f"))


def configure(p):
    p.add_argument("--metrics", default="reports/metrics")
    p.add_argument("--features", default="data/features")
    p.add_argument("--out", default="reports")


if __name__ == "__main__":
    run(__doc__, configure, main)
