#!/usr/bin/env bash
# Auto batch as a user meets it, yoloflow beside Ultralytics 8.4.56 in the same invocation:
# `batch=-1` (0.60 of the GPU's memory) for MODEL (yolo11x.yaml) at IMGSZ (1280) on coco128, one
# epoch from scratch. Prints one JSON line per tool (also in $OUT/auto-batch.jsonl):
#   yoloflow     resolved_s: seconds from the process start to the built run (dataset scan, the
#                profiled steps and their check included); batch chosen, predicted and target GiB
#                (its log), first_step_s, peak_reserved_GiB over the epoch (results.csv)
#   ultralytics  batch (its "AutoBatch: Using batch-size N" line), first_step_s (the process start
#                to its first trained batch), peak_reserved_GiB (bench/gpu/ultralytics_train.py)
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build:
#   bash bench/gpu/auto-batch.sh [RUNS]     RUNS: comma list of yoloflow, ultralytics (default both)
#   env: MODEL (yolo11x.yaml), IMGSZ (1280)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
RUNS="${1:-yoloflow,ultralytics}"
MODEL="${MODEL:-yolo11x.yaml}"
IMGSZ="${IMGSZ:-1280}"
LOG="$OUT/auto-batch.jsonl"
: > "$LOG"
want() { [[ ",$RUNS," == *",$1,"* ]]; }
SAMPLES=$(ls "$COCO"/images/train2017/*.jpg | wc -l)

if want yoloflow; then
  dir="$OUT/auto-batch-yoloflow"
  rm -rf "$dir"
  timeout 590 "$BIN/yoloflow" train data="$COCO/data.yaml" model="$MODEL" imgsz="$IMGSZ" batch=-1 epochs=1 \
    --run-dir "$dir" > "$dir.log" 2>&1
  python3 - "$?" "$dir" "$dir.log" <<'PY' | tee -a "$LOG"
import csv, json, re, sys
rc, d, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
text = open(log, errors="replace").read()
out = {"name": "yoloflow", "exit": rc}
m = re.search(r"first optimizer step ([0-9.]+) s after the process started \(run built at ([0-9.]+) s", text)
if m:
    out.update(first_step_s=float(m.group(1)), resolved_s=float(m.group(2)))
m = re.search(r"target [0-9.]+ x [0-9.]+ GiB = ([0-9.]+) GiB -> batch (\d+) \(predicted ([0-9.]+) GiB\)", text)
if m:
    out.update(target_GiB=float(m.group(1)), fitted_batch=int(m.group(2)), predicted_GiB=float(m.group(3)))
try:
    rows = list(csv.DictReader(open(d + "/results.csv")))
    out.update(batch=int(float(rows[-1]["batch"])),
               peak_reserved_GiB=round(max(float(r.get("gpu_peak_reserved_GiB") or 0) for r in rows), 2))
except (OSError, KeyError, ValueError, IndexError) as e:
    out["error"] = str(e)
print(json.dumps(out))
PY
  rm -rf "$dir/weights"
fi
if want ultralytics; then
  dir="$OUT/auto-batch-ultralytics"
  rm -rf "$dir"
  root="$PWD"
  ( cd "$OUT" && timeout 590 python3 "$root/bench/gpu/ultralytics_train.py" ultralytics "$COCO/data.yaml" "$MODEL" 1 -1 \
      "$IMGSZ" "$SAMPLES" "$dir" > "$dir.log" 2>&1 )
  line=$(grep '^{"name"' "$dir.log" | tail -1)
  batch=$(grep -oE "Using batch-size [0-9]+" "$dir.log" | tail -1 | grep -oE "[0-9]+$")
  python3 -c 'import json, sys; r = json.loads(sys.argv[1] or "{\"name\": \"ultralytics\", \"error\": \"no result line\"}"); r["batch"] = int(sys.argv[2]) if sys.argv[2] else None; print(json.dumps(r))' \
    "$line" "$batch" | tee -a "$LOG"
  rm -rf "$dir/r/weights"
fi
