#!/usr/bin/env bash
# Data-parallel scaling on the GPU machine: YOLO11n and YOLO11m trained on coco128 (its 128
# train images linked 8 times: 1024 per epoch) for 3 epochs on 1 GPU and on 2 GPUs, through
# torchrun --no-python, NCCL with NVLink multicast off. Prints images/s per GPU (rank 0's
# training rate of epochs 2-3, from results.csv: validation and start-up excluded) and the
# scaling efficiency (per-GPU rate on 2 GPUs / on 1 GPU). Logs and results under $OUT.
#
# On a machine with several GPUs, from the repo root (scripts/gpu-env.sh: build environment and data):
#   bash scripts/device-ddp.sh                 build, then all four runs
#   MODELS="n" EPOCHS=6 WORKERS=8 CUDNN_BENCHMARK=true bash scripts/device-ddp.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/yoloflow-out}"
mkdir -p "$OUT"
. scripts/gpu-env.sh
export NCCL_NVLS_ENABLE=0
BUILD=/tmp/yoloflow-build
MODELS="${MODELS:-n m}"
EPOCHS="${EPOCHS:-3}"
BATCH="${BATCH:-32}"   # per GPU
# cuDNN's per-shape benchmark makes the first epoch minutes long; short runs measure better without.
CUDNN_BENCHMARK="${CUDNN_BENCHMARK:-false}"
SKIP="${SKIP:-2}"      # warm-up epochs left out of the rate
GPUS_MAX="$(nvidia-smi --list-gpus | wc -l)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
[ "$GPUS_MAX" -ge 2 ] || echo "warning: $GPUS_MAX GPU(s) visible; the 2-GPU runs will fail"

start=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_POLICY_VERSION_MINIMUM=3.5 -DYOLOFLOW_BUILD_TESTS=OFF \
  -DYOLOFLOW_BUILD_BENCH=OFF >"$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
grep -E "yoloflow:" "$OUT/configure.log" | head -5
ninja -C "$BUILD" -j "$(nproc)" >"$OUT/build.log" 2>&1 || { grep -E -B2 -A12 "error|FAILED" "$OUT/build.log" | head -120; exit 1; }
echo "device build: $(( $(date +%s) - start )) s"

# The data: coco128's train images, linked under 8 folders (distinct paths, same labels).
DATA=/tmp/yf-ddp-data
rm -rf "$DATA" && mkdir -p "$DATA"
train_list=""
for k in 0 1 2 3 4 5 6 7; do
  mkdir -p "$DATA/images/c$k" "$DATA/labels/c$k"
  for f in "$COCO"/images/train2017/*; do ln -s "$f" "$DATA/images/c$k/"; done
  for f in "$COCO"/labels/train2017/*.txt; do ln -s "$f" "$DATA/labels/c$k/"; done
  train_list="$train_list, images/c$k"
done
{
  echo "path: $DATA"
  echo "train: [${train_list#, }]"
  echo "val: $COCO/images/val2017"
  sed -n '/^names:/,$p' "$COCO/data.yaml"
} >"$DATA/data.yaml"

if command -v torchrun >/dev/null; then TORCHRUN=(torchrun); else TORCHRUN=(python3 -m torch.distributed.run); fi

# Light CPU work per image (cached decode, letterbox, flip), so that the GPUs and their
# all-reduces set the pace rather than augmentation on the shared 16 cores.
pipeline() {  # scale workers
  cat <<JSON
{
  "name": "ddp-yolo11$1",
  "epochs": $EPOCHS,
  "imgsz": 640,
  "seed": 0,
  "device": "cuda",
  "workers": $2,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": "$DATA/data.yaml", "split": "train", "cache": "ram"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "flip": {"plugin": "flip", "input": "letterbox"},
    "batch": {"plugin": "collate", "input": "flip", "params": {"batch": $BATCH}},
    "train": {"plugin": "train", "input": "batch", "params": {
      "data": "$DATA/data.yaml",
      "model": {"plugin": "yolo11", "params": {"scale": "$1"}},
      "optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}},
      "scheduler": {"plugin": "linear"},
      "precision": {"plugin": "amp_bf16"},
      "nominal_batch": 64, "warmup_epochs": 1, "val_every": 0, "log_every": 10,
      "cudnn_benchmark": $CUDNN_BENCHMARK
    }}
  }
}
JSON
}

# Mean images/s of the epochs after the first $SKIP in a results.csv (rank 0's own rate:
# images per GPU).
rate() {
  python3 - "$1" "$SKIP" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
skip = int(sys.argv[2])
rows = rows[skip:] if len(rows) > skip else rows[-1:]
vals = [float({k.strip(): v for k, v in r.items()}["images_per_second"]) for r in rows]
print(f"{sum(vals) / len(vals):.1f}")
PY
}

# RUNS: "model:gpus" entries, run in order; the efficiency of an N-GPU entry is its per-GPU
# rate over the last 1-GPU rate of the same model. TAG labels this invocation's rows, so that
# several invocations (e.g. with different environments) can share $OUT (8 files come back).
RUNS="${RUNS:-$(for m in $MODELS; do printf '%s:1 %s:2 ' "$m" "$m"; done)}"
TAG="${TAG:-default}"
summary="$OUT/ddp-scaling.txt"
logs="$OUT/ddp-logs.txt"
[ -f "$summary" ] || echo "tag model gpus batch_per_gpu epochs img_s_per_gpu img_s_total efficiency wall_s" >"$summary"
echo "== $TAG: RUNS='$RUNS' OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset} OPENCV_FOR_THREADS_NUM=${OPENCV_FOR_THREADS_NUM:-unset}" | tee -a "$summary"
status=0
declare -A one
for entry in $RUNS; do
  m="${entry%%:*}"; gpus="${entry#*:}"
  run="/tmp/yf-ddp-runs/$TAG-yolo11$m-${gpus}gpu"
  rm -rf "$run" && mkdir -p "$run"
  pipeline "$m" "${WORKERS:-$(( $(nproc) / gpus ))}" >"$run/pipeline.json"
  t0=$(date +%s)
  "${TORCHRUN[@]}" --standalone --nnodes 1 --nproc_per_node "$gpus" --no-python \
    "$BUILD/bin/yoloflow" run "$run/pipeline.json" --run-dir "$run/out" >"$run/log.txt" 2>&1
  rc=$?
  wall=$(( $(date +%s) - t0 ))
  { echo "=== $TAG yolo11$m ${gpus} GPU(s): exit $rc, wall $wall s"; grep -E "CPU threads|step .*img/s|done in|error|Error|fail" "$run/log.txt" | tail -24; } >>"$logs"
  if [ $rc -ne 0 ] || [ ! -f "$run/out/results.csv" ]; then
    echo "$TAG yolo11$m on $gpus GPU(s) failed (exit $rc); last lines of the log:"; tail -30 "$run/log.txt"
    status=1
    continue
  fi
  per_gpu=$(rate "$run/out/results.csv")
  total=$(python3 -c "print(f'{$per_gpu * $gpus:.1f}')")
  if [ "$gpus" = 1 ]; then one[$m]=$per_gpu; eff="1.00"; else
    eff=$([ -n "${one[$m]:-}" ] && python3 -c "print(f'{$per_gpu / ${one[$m]}:.2f}')" || echo "?"); fi
  echo "$TAG yolo11$m $gpus $BATCH $EPOCHS $per_gpu $total $eff $wall" | tee -a "$summary"
done
exit $status
