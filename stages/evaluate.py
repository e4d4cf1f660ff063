"""evaluate: MLRC Separated and Concatenated metrics of one method on the test classes, and the
singular value spectrum of each fold's test embeddings (Revisiting section 5)."""

from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.data.manifest import DataError
from pipeline.evaluation.protocol import mlrc_protocol
from pipeline.evaluation.spectrum import singular_value_spectrum
from pipeline.io import write_json, write_text
from stages._common import run


def main(params, args):
    embeddings, labels = [], None
    for fold in params.experiment.folds:
        path = Path(args.models) / f"fold-{fold}" / "test_embeddings.npz"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: test embeddings not found (run train@{args.method}-{fold})")
        with np.load(path) as z:
            if labels is not None and not np.array_equal(labels, z["labels"]):
                raise DataError(f"{path}: test labels differ from fold 0's")
            embeddings.append(z["embeddings"])
            labels = z["labels"]
    result = mlrc_protocol(embeddings, labels, params.eval, params.seed)
    result["num_test_images"] = int(len(labels))
    result["num_test_classes"] = int(len(np.unique(labels)))
    write_json(args.out, result)
    spectra = pd.concat([pd.DataFrame({"fold": fold, "index": np.arange(1, x.shape[1] + 1),
                                       "singular_value": singular_value_spectrum(x)})
                         for fold, x in zip(params.experiment.folds, embeddings)])
    write_text(args.spectrum, spectra.to_csv(index=False, float_format="%.6g"))


def configure(p):
    p.add_argument("--method", required=True)
    p.add_argument("--models", required=True, help="folder with fold-<k>/test_embeddings.npz")
    p.add_argument("--out", required=True, help="metrics JSON")
    p.add_argument("--spectrum", required=True, help="CSV of the normalised singular values per fold")


if __name__ == "__main__":
    run(__doc__, configure, main)
