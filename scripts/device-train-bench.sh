#!/usr/bin/env bash
# Training throughput on the GPU machine, set up as REFERENCE.md measured Ultralytics:
# coco128's train images listed 20 times per epoch (2,560 images), imgsz 640, RAM cache,
# from scratch. Prints steady img/s (results.csv `images_per_second`, epochs after the
# first) and peak GPU memory for each configuration given as "name|overrides".
# On the GPU machine, after scripts/device-build.sh has built /tmp/yoloflow-build:
#   bash scripts/device-train-bench.sh [EPOCHS ["name override..." ...]]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/yoloflow-out}"
mkdir -p "$OUT"
. scripts/gpu-env.sh
BIN=/tmp/yoloflow-build/bin/yoloflow
EPOCHS="${1:-3}"
WORKERS="${WORKERS:-16}"   # graph workers; leave cores to the thread that launches GPU work
DATA=/tmp/coco128x20
mkdir -p "$DATA"
: > "$DATA/train.txt"
for _ in $(seq 20); do ls "$COCO"/images/train2017/*.jpg >> "$DATA/train.txt"; done
ls "$COCO"/images/val2017/*.jpg > "$DATA/val.txt"
{ echo "path: $DATA"; echo "train: train.txt"; echo "val: val.txt"; sed -n '/^names:/,$p' "$COCO/data.yaml"; } > "$DATA/data.yaml"
# Labels are found beside the images (images/ -> labels/), so the lists can live anywhere.

run() {
  local name="$1"; shift
  local dir="$OUT/train-$name"
  rm -rf "$dir"
  local start=$(date +%s)
  "$BIN" train pipelines/train-coco128.json --run-dir "$dir" epochs="$EPOCHS" workers="$WORKERS" \
    data="$DATA/data.yaml" stages.source.params.cache=ram stages.source.params.cache_fill=eager \
    stages.train.params.log_every=20 "$@" > "$dir.log" 2>&1
  local rc=$?
  python3 - "$dir/results.csv" "$name" "$rc" "$(( $(date +%s) - start ))" <<'PY'
import csv, sys
path, name, rc, wall = sys.argv[1:5]
try:
    rows = list(csv.DictReader(open(path)))
except OSError:
    print(f"{name}: no results.csv (exit {rc})"); sys.exit()
ips = [float(r["images_per_second"]) for r in rows]
steady = ips[1:] or ips
mem = max(float(r.get("gpu_mem_GiB") or 0) for r in rows)
last = rows[-1]
print(f"{name}: exit {rc}, wall {wall} s, epochs {len(rows)}, img/s per epoch {[round(x) for x in ips]}, "
      f"steady {sum(steady)/len(steady):.0f} img/s, peak allocated {mem:.2f} GiB, "
      f"mAP50 {float(last['metrics/mAP50(B)']):.4f} mAP50-95 {float(last['metrics/mAP50-95(B)']):.4f}")
PY
}

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
# The data path alone: the same pipeline ending in the throughput sink.
python3 - "$DATA/data.yaml" "$WORKERS" <<'PY' > /tmp/data-only.json
import json, sys
p = json.load(open("pipelines/train-coco128.json"))
for k in ("_doc",):
    p.pop(k, None)
p["stages"]["source"]["params"]["data"] = sys.argv[1]
p["stages"]["source"]["params"]["cache"] = "ram"
p["stages"]["source"]["params"]["cache_fill"] = "eager"
p["stages"]["batch"]["params"]["batch"] = 32
p["stages"]["train"] = {"plugin": "throughput", "input": "batch"}
p["workers"] = int(sys.argv[2])
print(json.dumps(p))
PY
sed -i "s#\.\./\.\./shared#$YOLOFLOW_SHARED_DIR#g" /tmp/data-only.json
echo "data path alone ($WORKERS workers, batch 32, 640, RAM cache):"
"$BIN" run /tmp/data-only.json epochs=2 2>&1 | grep -E "^epoch|done" | tail -3
# Configurations: "name overrides..." per argument after EPOCHS, or the default three.
shift || true
if [ "$#" -eq 0 ]; then
  set -- "n-b32-fp16 stages.batch.params.batch=32 stages.train.params.precision.plugin=amp_fp16" \
         "n-b32-bf16-cl stages.batch.params.batch=32 stages.train.params.precision.plugin=amp_bf16 stages.train.params.model.params.channels_last=true" \
         "n-b64-bf16-cl stages.batch.params.batch=64 stages.train.params.precision.plugin=amp_bf16 stages.train.params.model.params.channels_last=true"
fi
for cfg in "$@"; do
  # shellcheck disable=SC2086
  run $cfg
done
