#!/bin/bash
# Every GPU measurement of docs/gpu.md in one script, for a GPU machine that has Python, PyTorch and a GPU but no DVC
# and no network (a lent machine; with DVC the same work is `dvc repro` / `dvc exp run`, docs/gpu.md).
#
#   benchmarks/gpu_measurements.sh OUT PART...
#
# Made beforehand on a machine with DVC and the project installed, and carried along (all git-ignored):
#   .whl/                 the packages the GPU image lacks, as cp312 wheels (docs/gpu.md: the list)
#   .gpu/cub.yaml         python -m pipeline.compose dataset=cub --output .gpu/cub.yaml
#   .gpu/stages.txt       dvc repro --dry -f > .gpu/stages.txt            (the digit default's stage commands)
#   data/uci/             the Debian package LANML's Glass is read from (a first dvc repro fetches it)
#   .gpu/emoji.yaml       python -m pipeline.compose dataset=emoji_finetune --output .gpu/emoji.yaml
#   .gpu/emoji_stages.txt cp .gpu/emoji.yaml params.yaml && dvc repro --dry -f > .gpu/emoji_stages.txt; git checkout params.yaml
#   data/downloads/npm/   the emoji sets' npm tarballs (a first emoji prepare fetches them)
#
# PART (each logged to OUT/<part>.log with its wall time in OUT/parts.txt; every step has its own time limit):
#   setup     install the wheels into /tmp/site and print the machine, torch, numpy and the square-root pinning
#   epoch     benchmarks/bench_epoch.py: ResNet50 finetuned on the digit pairs at 64 px, bf16, 4 loader workers
#   finetune  benchmarks/bench_finetune.py on .gpu/cub.yaml: the loader rows alone (both train.augment_on, beside the
#             plain torchvision loop), then ceilings, loader, and 1 / 2 / 4 models at once (augment_on device; then
#             loader for ResNet50 bf16, the eager path)
#   digit     the digit default's stages in dvc.yaml's order (benchmarks/run_stages.py), then the sha256 of every
#             file under reports/ in OUT/reports.sha256 (to compare with the committed reports)
#   emoji     the emoji default finetuned (.gpu/emoji.yaml as params.yaml, then .gpu/emoji_stages.txt); the reports
#             land in reports/, copied to OUT/emoji_reports.tar
set -u -o pipefail
out=$1
shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site TQDM_DISABLE=1
py=python3

part_setup() {
  timeout 120 $py -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
  timeout 120 $py -c "import pipeline, torch, numpy, sklearn, pipeline.numerics as n; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'numpy', numpy.__version__, 'sklearn', sklearn.__version__, 'sqrt', n.settings()['torch sqrt'])"
}

part_epoch() {
  timeout 300 $py benchmarks/bench_epoch.py --params params.yaml --backbone resnet50 --size 64 --amp bf16 \
    --num-workers 4 --epochs 5
}

part_finetune() {
  timeout 240 $py benchmarks/bench_finetune.py --params .gpu/cub.yaml --loader-only --backbones resnet50 \
    --workers 0 --steps 50
  timeout 420 $py benchmarks/bench_finetune.py --params .gpu/cub.yaml --backbones resnet50 --precisions fp32 bf16 \
    --models 1 2 4 --workers 3 --steps 200
  timeout 300 $py benchmarks/bench_finetune.py --params .gpu/cub.yaml --backbones bn_inception efficientnet_lite0 \
    --precisions bf16 --models 1 4 --workers 3 --steps 200
  timeout 240 $py benchmarks/bench_finetune.py --params .gpu/cub.yaml --backbones resnet50 --precisions bf16 \
    --models 1 4 --workers 3 --steps 200 --augment-on loader
}

part_digit() {
  timeout 3000 $py benchmarks/run_stages.py .gpu/stages.txt --log-dir "$out/digit_logs" --python $py
  find reports -type f -print0 | sort -z | xargs -0 sha256sum > "$out/reports.sha256"
}

part_emoji() {
  cp .gpu/emoji.yaml params.yaml
  timeout 36000 $py benchmarks/run_stages.py .gpu/emoji_stages.txt --log-dir "$out/emoji_logs" --python $py
  tar -cf "$out/emoji_reports.tar" reports
}

for part in "$@"; do
  start=$(date +%s)
  "part_$part" > "$out/$part.log" 2>&1
  echo "$part rc=$? seconds=$(( $(date +%s) - start ))" | tee -a "$out/parts.txt"
done
