"""The first stage: params.yaml checked whole, then each stage's code as one file.

Every section of params.yaml is validated with every rule (pipeline/params/root.py), so a bad value stops the run
here, before any stage replaces an output, although each later stage loads only the sections it reads. Then
`data/code/<stage module>.json` is written for each stage command of dvc.yaml: every project file the command can
import with the SHA-256 of its content (pipeline/orchestration/dvc_deps.py). This stage reruns on any edit of the code
or of params.yaml and writes the same files unless the code changed, so DVC reruns only the stages whose own
fingerprint or params changed.
"""

from pipeline.infra.io import atomic_path
from pipeline.orchestration.dvc_deps import write_fingerprints
from pipeline.params.root import Params
from stages._common import run


def main(params, args):
    with atomic_path(args.out) as tmp:
        modules = write_fingerprints(tmp)
    print(f"{args.out}: the code of {len(modules)} stage modules ({', '.join(m.split('.')[-1] for m in modules)})")


if __name__ == "__main__":
    run(__doc__, lambda p: p.add_argument("--out", default="data/code"), main, Params)
