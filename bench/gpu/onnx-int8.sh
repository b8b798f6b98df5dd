#!/usr/bin/env bash
# The int8 QDQ export (and the float32 and float16 files beside it) checked with ONNX Runtime on
# the GPU machine, next to what `yoloflow val` measures with its own runtimes:
#   1. `yoloflow export` writes the coco128 fixture's YOLO11n at 640 as float32, float16 and int8
#      (calibrated on coco128's val images), batch 1 and batch 32;
#   2. `yoloflow val` validates each batch-1 file on coco128's train images (the fixture's; OpenCV dnn for float32,
#      the LibTorch evaluator for float16 and int8) and the .pt weights (--square);
#   3. bench/gpu/onnx_int8_check.py runs the files in ONNX Runtime: output parity against the
#      op-by-op PyTorch evaluation, latency per image at batch 1 and 32, and Ultralytics' val of
#      each file (ONNX Runtime's mAP) when ultralytics is installed.
# JSON lines in $OUT/onnx-int8.jsonl, `yoloflow val` output in $OUT/val-*.txt.
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build (see onnx-parity.sh):
#   bash bench/gpu/onnx-int8.sh            env: IMAGES (4, for parity), ITERS (20), WORK (/tmp/yoloflow-int8)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
PY="${YOLOFLOW_PYTHON:-python3}"
LOG="$OUT/onnx-int8.jsonl"
WORK="${WORK:-/tmp/yoloflow-int8}"
WEIGHTS="$YOLOFLOW_SHARED_DIR/fixtures/coco128-val-parity/coco128-yolo11n.pt"
mkdir -p "$WORK"
: > "$LOG"
if [ ! -f "$WEIGHTS" ] || [ ! -d "$COCO/images/train2017" ]; then echo "onnx-int8: needs $WEIGHTS and $COCO"; exit 1; fi
# The fixture's images (coco128's train images) as the val split, with an absolute path so that
# Ultralytics' validator, run from another folder, reads the same images as `yoloflow val`.
DATA="$WORK/coco128-train-as-val.yaml"
{ echo "path: $COCO"; echo "train: images/train2017"; echo "val: images/train2017"; sed -n '/^names:/,$p' "$COCO/data.yaml"; } > "$DATA"
if ! "$BIN/yoloflow" export --help 2>/dev/null | grep -q -- --int8; then
  echo "onnx-int8: $BIN/yoloflow has no export --int8: build this branch first (see onnx-parity.sh)"; exit 1
fi
ex() { "$BIN/yoloflow" export --weights "$WEIGHTS" --model yolo11n --imgsz 640 "$@" >>"$OUT/export.log" 2>&1 ||
  { echo "export failed: $*"; tail -5 "$OUT/export.log"; exit 1; }; }
for b in 1 32; do
  ex --batch "$b" --out "$WORK/fp32_b$b.onnx"
  ex --batch "$b" --half --out "$WORK/fp16_b$b.onnx"
  ex --batch "$b" --int8 --data "$DATA" --out "$WORK/int8_b$b.onnx"
done
grep "int8:" "$OUT/export.log" | tail -2
"$BIN/yoloflow" val --weights "$WEIGHTS" --model yolo11n --data "$DATA" --square --device cpu --out "$WORK/val-pt" \
  > "$OUT/val-pt.txt" 2>&1
for f in fp32 fp16 int8; do
  "$BIN/yoloflow" val --weights "$WORK/${f}_b1.onnx" --data "$DATA" --out "$WORK/val-$f" > "$OUT/val-$f.txt" 2>&1
done
"$PY" - "$WORK" "$LOG" <<'PYEOF'
import json, sys
work, log = sys.argv[1], sys.argv[2]
with open(log, "a") as out:
    for f in ("pt", "fp32", "fp16", "int8"):
        m = json.load(open(f"{work}/val-{f}/metrics.json"))
        out.write(json.dumps({"kind": "map", "file": f, "runtime": "yoloflow val", "mAP50": m["mAP50"],
                              "mAP50_95": m["mAP50-95"]}) + "\n")
PYEOF
"$PY" bench/gpu/onnx_int8_check.py "$WORK" "$DATA" --images "${IMAGES:-4}" --iters "${ITERS:-20}" | tee -a "$LOG"
"$PY" - "$LOG" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("\nmAP on coco128 val (640, square):")
for r in rows:
    if r["kind"] == "map" and "file" in r:
        print(f"  {r['file']:5} {r['runtime']:26} mAP50 {r['mAP50']:.4f}  mAP50-95 {r['mAP50_95']:.4f}")
print("parity, ONNX Runtime against the op-by-op evaluation (worst over the images):")
worst = {}
for r in rows:
    if r["kind"] == "parity":
        k = (r["file"], r["provider"])
        b, p = worst.get(k, (0, 0))
        worst[k] = (max(b, r["max_box"]), max(p, r["max_prob"]))
for (f, prov), (b, p) in sorted(worst.items()):
    print(f"  {f:5} {prov:22} max |box| {b:.2e} px  max |prob| {p:.2e}")
print("latency per image (ms):")
for r in rows:
    if r["kind"] == "latency":
        print(f"  {r['file']:5} {r['provider']:22} batch {r['batch']:2}  {r['ms_per_image']:.2f}")
PYEOF
