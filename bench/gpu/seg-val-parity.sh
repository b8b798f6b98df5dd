#!/usr/bin/env bash
# yoloflow val beside Ultralytics 8.4.56's SegmentationValidator on the same YOLO11n-seg weights,
# on the GPU machine in one invocation:
#   1. yoloflow trains yolo11n-seg for EPOCHS (default 30) on coco128-seg's 128 images listed 20
#      times (the speed options, as compare-ultralytics-seg.sh), so that boxes and masks score
#      well above zero;
#   2. `yoloflow weights export --format ultralytics` writes its best.pt as an Ultralytics
#      checkpoint ($OUT/seg-parity-ultralytics.pt, kept: the weights of a CPU fixture);
#   3. Ultralytics' SegmentationValidator and `yoloflow val` score that one file on coco128-seg's
#      128 images (imgsz 640, batch 32, conf 0.001, iou 0.7), rect and square batches;
#   4. bench/gpu/seg_val_parity.py prints both tools' box and mask P, R, mAP50, mAP50-95 and the
#      differences ($OUT/seg-val-parity.json: Ultralytics' results, per-class AP50-95);
#   5. the run's best.pt exported to ONNX (fp32, dynamic, fp16) in ONNX Runtime against
#      Ultralytics' model of the same weights (bench/gpu/seg_onnx_parity.py).
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build with ONNX off or on,
# Ultralytics importable (PYTHONPATH=/tmp/ua:/tmp/ua/stubs, ../shared/anchors/README.md):
#   bash bench/gpu/seg-val-parity.sh            env: EPOCHS (30), TIMEOUT (400 s for the training)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
EPOCHS="${EPOCHS:-30}"
SEG="$YOLOFLOW_SHARED_DIR/datasets/coco128-seg"
WORK=/tmp/seg-val-parity
rm -rf "$WORK" && mkdir -p "$WORK"
sed "s|^path: .*|path: $SEG|" "$SEG/data.yaml" > "$WORK/data.yaml"
: > "$WORK/train.txt"
for _ in $(seq 20); do ls "$SEG"/images/train2017/*.jpg >> "$WORK/train.txt"; done
ls "$SEG"/images/train2017/*.jpg > "$WORK/val.txt"
{ echo "path: $WORK"; echo "train: train.txt"; echo "val: val.txt"; sed -n '/^names:/,$p' "$SEG/data.yaml"; } > "$WORK/x20.yaml"

start=$(date +%s)
timeout "${TIMEOUT:-400}" "$BIN/yoloflow" train pipelines/max-throughput-coco128.json model=yolo11n-seg.yaml \
  data="$WORK/x20.yaml" epochs="$EPOCHS" stages.batch.params.batch=32 stages.train.params.precision.plugin=amp_fp16 \
  stages.train.params.cuda_graph=true stages.train.params.val_every=0 stages.source.params.cache=ram \
  --run-dir "$WORK/run" > "$WORK/train.log" 2>&1 || { tail -20 "$WORK/train.log"; exit 1; }
grep "final validation" -A1 "$WORK/train.log" | head -2
echo "trained $EPOCHS epochs in $(( $(date +%s) - start )) s"
W="$OUT/seg-parity-ultralytics.pt"
"$BIN/yoloflow" weights export --format ultralytics --weights "$WORK/run/weights/best.pt" --out "$W" || exit 1
for mode in rect square; do
  "$BIN/yoloflow" val --weights "$W" --data "$WORK/data.yaml" --imgsz 640 --batch 32 --conf 0.001 --iou 0.7 \
    --"$mode" --no-plots --out "$WORK/val-$mode" > "$WORK/val-$mode.log" 2>&1 || { tail -5 "$WORK/val-$mode.log"; exit 1; }
done
python3 bench/gpu/seg_val_parity.py "$W" "$WORK/data.yaml" "$OUT/seg-val-parity.json" \
  "$WORK/val-rect/metrics.json" "$WORK/val-square/metrics.json"
rc=$?
# 5. The same weights exported to ONNX (fixed 640 fp32, --dynamic, --half) in ONNX Runtime against
#    Ultralytics' model of the exported checkpoint (bench/gpu/seg_onnx_parity.py), where this build
#    has export and the Python has onnxruntime.
if [ "$YOLOFLOW_ONNX_CMAKE" = ON ] && python3 -c 'import onnxruntime' 2>/dev/null; then
  B="$WORK/run/weights/best.pt"
  "$BIN/yoloflow" export --weights "$B" --imgsz 640 --out "$WORK/seg.onnx" > "$WORK/export.log" 2>&1 &&
    "$BIN/yoloflow" export --weights "$B" --imgsz 640 --dynamic --out "$WORK/seg-dynamic.onnx" >> "$WORK/export.log" 2>&1 &&
    "$BIN/yoloflow" export --weights "$B" --imgsz 640 --half --out "$WORK/seg-half.onnx" >> "$WORK/export.log" 2>&1 ||
    { tail -5 "$WORK/export.log"; exit 1; }
  python3 bench/gpu/seg_onnx_parity.py "$W" "$WORK/seg.onnx" "$WORK/seg-dynamic.onnx" "$WORK/seg-half.onnx" || rc=1
else
  echo "seg-val-parity: no ONNX export in this build or no onnxruntime: the ONNX Runtime check is skipped"
fi
exit $rc
