#!/usr/bin/env bash
# A whole training run as a user waits for it, yoloflow beside Ultralytics 8.4.56 in the same
# invocation: wall time from process start to exit, coco128's 128 train images listed 10 times
# (1,280 images an epoch), imgsz 320, batch 32, validation on coco128's val images after every
# epoch, from scratch, each tool with its defaults otherwise (the same words on both command
# lines). Prints one JSON line per run (also in $OUT/whole-run.jsonl) and the ratio.
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build:
#   bash bench/gpu/whole-run.sh [RUNS]     RUNS: comma list of yoloflow, ultralytics (default both)
#   env: EPOCHS (60), EXTRA (more words for yoloflow's run)
# Ultralytics runs when `python3 -c "import ultralytics"` works (../shared/anchors says how).
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
RUNS="${1:-yoloflow,ultralytics}"
EPOCHS="${EPOCHS:-60}"
read -r -a EXTRA_WORDS <<< "${EXTRA:-}"
LOG="$OUT/whole-run.jsonl"
want() { [[ ",$RUNS," == *",$1,"* ]]; }
DATA=/tmp/coco128x10
mkdir -p "$DATA"
: > "$DATA/train.txt"
for _ in $(seq 10); do ls "$COCO"/images/train2017/*.jpg >> "$DATA/train.txt"; done
ls "$COCO"/images/val2017/*.jpg > "$DATA/val.txt"
{ echo "path: $DATA"; echo "train: train.txt"; echo "val: val.txt"; sed -n '/^names:/,$p' "$COCO/data.yaml"; } > "$DATA/data.yaml"

summary() {  # summary NAME RC START END RESULTS_CSV LOG
  python3 - "$@" <<'PY' | tee -a "$LOG"
import csv, json, re, sys
name, rc, start, end, results, log = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
out = {"name": name, "exit": rc, "wall_s": round(end - start, 1)}
try:
    rows = [{k.strip(): v for k, v in r.items()} for r in csv.DictReader(open(results))]
    out.update(epochs=len(rows), mAP50=float(rows[-1]["metrics/mAP50(B)"]), mAP50_95=float(rows[-1]["metrics/mAP50-95(B)"]))
except (OSError, KeyError, ValueError, IndexError) as e:
    out["error"] = str(e)
m = re.search(r"first optimizer step ([0-9.]+) s after", open(log, errors="replace").read())
if m:
    out["first_step_s"] = float(m.group(1))
print(json.dumps(out))
PY
}

if want yoloflow; then
  dir="$OUT/whole-yoloflow"
  rm -rf "$dir"
  start=$(date +%s.%N)
  timeout 590 "$BIN/yoloflow" train data="$DATA/data.yaml" model=yolo11n.yaml imgsz=320 batch=32 epochs="$EPOCHS" \
    --run-dir "$dir" "${EXTRA_WORDS[@]}" > "$dir.log" 2>&1
  rc=$?
  summary yoloflow "$rc" "$start" "$(date +%s.%N)" "$dir/results.csv" "$dir.log"
fi
if want ultralytics; then
  dir="$OUT/whole-ultralytics"
  rm -rf "$dir"
  if python3 -c "import ultralytics" 2>/dev/null; then
    start=$(date +%s.%N)
    ( cd "$OUT" && timeout 590 python3 - "$DATA/data.yaml" "$EPOCHS" "$dir" > "$dir.log" 2>&1 <<'PY'
import sys
import ultralytics.engine.trainer as trainer
trainer.check_amp = lambda *a, **k: True  # no network here: skip the download it would try
from ultralytics import YOLO
data, epochs, project = sys.argv[1], int(sys.argv[2]), sys.argv[3]
YOLO("yolo11n.yaml").train(data=data, epochs=epochs, batch=32, imgsz=320, device=0, project=project, name="r",
                           exist_ok=True, plots=False)
PY
    )
    rc=$?
    summary ultralytics "$rc" "$start" "$(date +%s.%N)" "$dir/r/results.csv" "$dir.log"
  else
    echo '{"name": "ultralytics", "error": "python3 cannot import ultralytics on this machine"}' | tee -a "$LOG"
  fi
fi
python3 - "$LOG" <<'PY'
import json, sys
rows = {r["name"]: r for r in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{"))}
y, u = rows.get("yoloflow", {}), rows.get("ultralytics", {})
if y.get("wall_s") and u.get("wall_s"):
    print(f"whole run: yoloflow {y['wall_s']} s, Ultralytics {u['wall_s']} s: {u['wall_s'] / y['wall_s']:.2f}x "
          f"(mAP50-95 {y.get('mAP50_95')} vs {u.get('mAP50_95')})")
PY
