"""report: everything under reports/ that a reviewer reads, rendered from the cached results under data/.

Reads every input first (metrics, per-class scores, training logs, sub-problem logs, spectra, ablation
tables, LANML results, the proof of concept, the published numbers) and stops with one line naming the
first missing file, before anything is written. Then writes: the claims table, the training budgets,
the results table (markdown, CSV), the comparison tables per protocol beside the papers' numbers
(markdown, CSV, LaTeX), the CCP sub-problem diagnostics, the LANML tables, the figures, and
reports/README.md, an index of all of it; and publishes byte-for-byte copies of the inputs a reader wants
beside them (reports/train_logs, metrics, spectra, per_class, subproblems, ablations, lanml, tuned, tuning:
pipeline/reporting/publish.py); the headline metrics beside them are the evaluate stage's. The pages:
pipeline/reporting/pages/ (one module per page); every file is replaced atomically.
"""

from pathlib import Path

from pipeline.params.root import Params
from pipeline.reporting.inputs import load, published
from pipeline.reporting.pages import write_report
from pipeline.reporting.publish import check_sources, publish
from stages._common import run


def main(params, args):
    inputs = load(params, args)
    copies = published(params, args)
    check_sources(copies)
    out = Path(args.out)
    write_report(params, inputs, out)
    publish(copies, out)


def configure(p):
    p.add_argument("--metrics", default="data/evaluation/metrics")
    p.add_argument("--backbone", default="data/evaluation/backbone.json", help="the backbone features' metrics")
    p.add_argument("--spectra", default="data/evaluation/spectra")
    p.add_argument("--per-class", default="data/evaluation/per_class", help="per-class scores of every run (evaluate)")
    p.add_argument("--train-logs", default="data/train_logs", help="per-epoch training logs of every run")
    p.add_argument("--subproblems", default="data/subproblems")
    p.add_argument("--ablations", default="data/ablations")
    p.add_argument("--lanml", default="data/lanml", help="folder with lanml@paper-<dataset> results")
    p.add_argument("--poc", default="reports/ccp_poc.json")
    p.add_argument("--reference", default="reference/published.csv", help="the papers' numbers")
    p.add_argument("--features", default="data/features")
    p.add_argument("--tuned", default="data/tuned", help="the values each run trained at (tune)")
    p.add_argument("--tuning", default="data/tuning", help="tuning records of every run (tune)")
    p.add_argument("--pictures", default="data/pictures", help="retrieval grids and t-SNE maps per run (pictures)")
    p.add_argument("--out", default="reports")


if __name__ == "__main__":
    run(__doc__, configure, main, Params)
