"""report: the comparison table of every run (markdown and CSV), the CCP sub-problem diagnostics and
the LANML tables."""

from pathlib import Path

from pipeline.io import read_json, write_text
from pipeline.methods import all_runs, ccp_runs, parse_ccp_run
from pipeline.reporting.lanml_table import lanml_markdown, read_reference
from pipeline.reporting.subproblems import detail_markdown, read_subproblems, summary_markdown
from pipeline.reporting.tables import markdown_table, results_frame
from stages._common import run


def main(params, args):
    runs = all_runs(params)
    metrics = {}
    for name in runs:
        path = Path(args.metrics) / f"{name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: metrics not found (run the evaluate stage of {name})")
        metrics[name] = read_json(path)
    lanml = []
    for name in params.lanml.datasets:
        path = Path(args.lanml) / f"{name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: LANML results not found (run lanml@{name})")
        lanml.append(read_json(path))
    info = read_json(Path(args.features) / "info.json")
    frame = results_frame(metrics, params.eval.recall_at, params.train.embedding_dim)
    order = ["_last"] + ([params.report.sort_by] if params.report.sort_by != "none" else [])
    frame = frame.assign(_last=frame["protocol"].str.startswith("concatenated")).sort_values(
        order, ascending=[True] + [False] * (len(order) - 1), kind="stable").drop(columns="_last")
    first = next(iter(metrics.values()))
    context = (
        f"- data set: **{params.data.name}** (the embedded default, made from scikit-learn's bundled digits; "
        "these numbers are not a reproduction of CUB / Cars196 / SOP / In-shop results)\n"
        f"- test set: {first['num_test_images']} images of {first['num_test_classes']} unseen classes\n"
        f"- backbone: {info['description']}\n"
        f"- training mode: {params.train.mode}, embedding {params.train.embedding_dim}-D, "
        f"{len(params.experiment.folds)} MLRC folds\n"
    )
    header = (
        "# Results\n\n" + context +
        "- runs: baselines `" + "`, `".join(params.experiment.methods) + "`; CCP family `<loss>_<variant>` "
        "(batch: the loss on in-batch pairs; loss_proxy: one proxy-DML, Loss-Proxy of CCP Fig. 4a; "
        "ccp: Algorithm 1; sample_ccp: sample anchors); PROFS family `<loss>_<variant>` (plain: the loss on "
        "ordinary batches; profs: Algorithm 1 with class representatives; profs_hncm: with hard negative class mining)\n"
        "- metrics in %; separated = mean ± sample std over the fold models; "
        "concatenated = the folds' L2-normalised embeddings concatenated; best per protocol in bold\n\n"
    )
    write_text(Path(args.out) / "results.md", header + markdown_table(frame, params.eval.recall_at, params.report.decimals))
    write_text(Path(args.out) / "results.csv", frame.to_csv(index=False, float_format="%.4f"))

    proxy_runs = [r for r in ccp_runs(params) if parse_ccp_run(r)[1] != "batch"]
    rows = read_subproblems(Path(args.subproblems), proxy_runs, params.experiment.folds)
    text = (
        "# CCP sub-problems\n\n" + context +
        "- a sub-problem (projection) ends after `ccp.patience` epochs without validation MAP@R improvement; "
        "loss_proxy runs have one sub-problem\n"
        "- covering radius (CCP Prop. 4.2, Cor. 4.3): per class, the largest distance from a training sample "
        "to its nearest same-class proxy, at the end of the sub-problem; max and mean over classes\n\n"
        "## Summary over folds\n\n" + summary_markdown(rows, params.report.decimals)
    )
    details = [r for r in proxy_runs if parse_ccp_run(r)[1] != "loss_proxy"]
    if details and not rows.empty:
        text += "\n## Every sub-problem of the first fold\n\n" + "\n".join(
            detail_markdown(rows, r, params.experiment.folds[0], params.report.decimals) for r in details)
    write_text(Path(args.out) / "ccp_subproblems.md", text)
    write_text(Path(args.out) / "lanml.md", (
        "# LANML on UCI data (ANML section 7.1)\n\n"
        f"- {params.lanml.repeats} random {100 - 100 * params.lanml.test_fraction:.0f}/"
        f"{100 * params.lanml.test_fraction:.0f} splits; z-score and PCA to {params.lanml.pca_dims} dims fitted on "
        "the training part; hyperparameters and K (1.."
        f"{params.lanml.max_k}) chosen by {params.lanml.cv_folds}-fold cross-validation on the training part\n"
        "- accuracy in %, mean ± sample std over the splits; the paper reports the best K on the test part, "
        "shown in its own column for a like-for-like comparison\n\n"
        + lanml_markdown(lanml, read_reference(Path(args.reference)), params.report.decimals)))


def configure(p):
    p.add_argument("--metrics", default="reports/metrics")
    p.add_argument("--subproblems", default="reports/subproblems")
    p.add_argument("--lanml", default="reports/lanml", help="folder with lanml@<dataset> results")
    p.add_argument("--reference", default="reference/anml_table2.csv", help="ANML Table 2 values")
    p.add_argument("--features", default="data/features")
    p.add_argument("--out", default="reports")


if __name__ == "__main__":
    run(__doc__, configure, main)
