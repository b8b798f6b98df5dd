#!/usr/bin/env bash
# Does validation inside training report what `yoloflow val` reports for the same weights?
# Trains yolo11n on coco128's train images listed 20 times per epoch (2,560 images, imgsz 640,
# max-throughput-coco128.json at batch 32, validating every epoch on the 128 train images in
# rectangular batches), then runs `yoloflow val` on best.pt (rect and --square) and prints
# results.csv's best row beside it. Training validates under fp16 autocast, `yoloflow val` in
# fp32: the two agree to rounding.
#
# On the GPU machine, from the repo root (scripts/gpu-env.sh), after /tmp/yoloflow-build is
# built (scripts/device-build.sh):   SEED=0 EPOCHS=30 bash bench/gpu/train-val-agreement.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
BIN="$BIN/yoloflow"
EPOCHS="${EPOCHS:-30}"
DATA=/tmp/coco128x20; mkdir -p "$DATA"
: > "$DATA/train.txt"; for _ in $(seq 20); do ls "$COCO"/images/train2017/*.jpg >> "$DATA/train.txt"; done
ls "$COCO"/images/train2017/*.jpg > "$DATA/val.txt"
{ echo "path: $DATA"; echo "train: train.txt"; echo "val: val.txt"; sed -n '/^names:/,$p' "$COCO/data.yaml"; } > "$DATA/data.yaml"
run=/tmp/train-val-agreement; rm -rf $run
start=$(date +%s)
$BIN train pipelines/max-throughput-coco128.json --run-dir $run epochs=$EPOCHS workers=12 seed=${SEED:-0} \
  data=$DATA/data.yaml \
  stages.batch.params.batch=32 stages.train.params.val_every=1 > $OUT/train.log 2>&1
echo "train exit $? wall $(( $(date +%s) - start )) s"
grep -E "final validation" $OUT/train.log
cp $run/results.csv $OUT/results.csv
for mode in "" "--square"; do
  s=$(date +%s)
  $BIN val --weights $run/weights/best.pt --data $DATA/data.yaml --device cuda --out /tmp/val$mode $mode > $OUT/val$mode.log 2>&1
  echo "val $mode exit $? wall $(( $(date +%s) - s )) s"; grep -E "Speed" $OUT/val$mode.log
  cp /tmp/val$mode/metrics.json $OUT/metrics$mode.json
done
python3 - $OUT/results.csv $OUT/metrics.json <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
best = max(rows, key=lambda r: float(r["metrics/mAP50-95(B)"]))
m = json.load(open(sys.argv[2]))
print("best epoch", best["epoch"], "results.csv P R mAP50 mAP50-95:",
      [round(float(best[k]), 5) for k in ("metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)")])
print("yoloflow val best.pt P R mAP50 mAP50-95:", [round(m[k], 5) for k in ("precision", "recall", "mAP50", "mAP50-95")])
PY
