#!/usr/bin/env bash
# YOLO11-seg, yoloflow beside Ultralytics 8.4.56 in one invocation on the GPU machine:
#   n32, m32           yoloflow: yolo11n-seg / yolo11m-seg, batch 32 at 640, coco128-seg's train
#                      images listed 20 times per epoch (2,560 images), RAM cache, AMP fp16, the
#                      speed options (max-throughput chain, CUDA graph), validation after the last
#                      epoch only (EPOCHS, default 4)
#   ultralytics-n32, ultralytics-m32
#                      Ultralytics on the same setup (batch 32, RAM cache, 8 workers, AMP;
#                      bench/gpu/ultralytics_train.py measures it as the yoloflow runs are measured)
#   crowded            one training epoch of each tool on CROWDED_IMAGES (64) synthetic 640 x 640
#                      images with CROWDED_INSTANCES (300) polygons each, batch CROWDED_BATCH (8):
#                      the peak memory reserved by a step on crowded images (the segmentation
#                      loss's memory)
#   quality            QUALITY_EPOCHS (100) epochs on coco128-seg validated on its train images
#                      after the last epoch, yoloflow's shipped recipe and Ultralytics' own
#                      training, seeds QUALITY_SEEDS ("0 1"), the four runs side by side on the GPU
#                      (QUALITY_WORKERS, default 4, each), from scratch or from QUALITY_START (an
#                      Ultralytics YOLO11n-seg checkpoint both tools fine-tune from, e.g. the
#                      seg-parity-ultralytics.pt of seg-val-parity.sh): box and mask mAP50-95 (run it alone;
#                      Ultralytics' last.pt of each seed stays in $OUT/ultralytics-seg-quality-s<seed>)
# Prints each part as it finishes (a JSON line in $OUT/compare-seg.jsonl), then the table: img/s,
# GPU util, peak reserved and each against Ultralytics' figure from this invocation.
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build (scripts/device-build.sh):
#   bash bench/gpu/compare-ultralytics-seg.sh [PARTS]     (default n32,m32,ultralytics-n32,ultralytics-m32,crowded)
# Environment: EPOCHS (4), WORKERS (12), EXTRA (overrides added to every yoloflow run), TIMEOUT
# (590 s, each run's limit).
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
PARTS="${1:-n32,m32,ultralytics-n32,ultralytics-m32,crowded}"
ROOT="$PWD"
EPOCHS="${EPOCHS:-4}"
WORKERS="${WORKERS:-12}"
TIMEOUT="${TIMEOUT:-590}"
read -r -a EXTRA_OVERRIDES <<< "${EXTRA:-}"
SEG="$YOLOFLOW_SHARED_DIR/datasets/coco128-seg"
# Its data.yaml with an absolute path (Ultralytics reads a relative one under its datasets folder).
SEG_YAML=/tmp/coco128seg/data.yaml
mkdir -p /tmp/coco128seg
sed "s|^path: .*|path: $SEG|" "$SEG/data.yaml" > "$SEG_YAML"
want() { [[ ",$PARTS," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

# coco128-seg's train images listed 20 times (train), validated on its train images.
DATA=/tmp/coco128seg-x20
mkdir -p "$DATA"
: > "$DATA/train.txt"
for _ in $(seq 20); do ls "$SEG"/images/train2017/*.jpg >> "$DATA/train.txt"; done
ls "$SEG"/images/train2017/*.jpg > "$DATA/val.txt"
{ echo "path: $DATA"; echo "train: train.txt"; echo "val: val.txt"; sed -n '/^names:/,$p' "$SEG/data.yaml"; } > "$DATA/data.yaml"

FAST=(pipelines/max-throughput-coco128.json stages.train.params.precision.plugin=amp_fp16
      stages.train.params.cuda_graph=true stages.train.params.val_every=0)

# run NAME EPOCHS DATA_YAML WORDS... -> one JSON line
run() {
  local name="$1" epochs="$2" data="$3"; shift 3
  local dir="$OUT/seg-$name" start
  rm -rf "$dir"
  start=$(date +%s)
  timeout "$TIMEOUT" "$BIN/yoloflow" train "$@" --run-dir "$dir" epochs="$epochs" workers="${RUN_WORKERS:-$WORKERS}" data="$data" \
    stages.source.params.cache=ram stages.source.params.cache_fill=eager stages.train.params.log_every=40 \
    'monitors=[{"plugin":"gpu"}]' "${EXTRA_OVERRIDES[@]}" > "$dir.log" 2>&1
  local rc=$?
  python3 bench/gpu/run_summary.py "$dir" "$name" "$rc" "$(( $(date +%s) - start ))" | tee -a "$OUT/compare-seg.jsonl"
  grep -E "cuda_graph: (captured|capture failed)|error" "$dir.log" | grep -v data.issues | head -3
  rm -rf "$dir/weights"
}

# ultra NAME DATA_YAML MODEL_YAML EPOCHS BATCH IMAGES_PER_EPOCH [KEY=VALUE...] -> one JSON line
ultra() {
  local name="$1" data="$2" model="$3" epochs="$4" batch="$5" images="$6"; shift 6
  local dir="$OUT/ultralytics-seg-$name"
  rm -rf "$dir"
  ( cd "$OUT" && timeout "$TIMEOUT" python3 "$ROOT/bench/gpu/ultralytics_train.py" "ultralytics-$name" "$data" "$model" \
      "$epochs" "$batch" 640 "$images" "$dir" "$@" > "$dir.log" 2>&1 )
  grep '^{"name"' "$dir.log" | tail -1 | tee -a "$OUT/compare-seg.jsonl"
  [ -n "${KEEP_WEIGHTS:-}" ] || rm -rf "$dir/r/weights"
}

want n32 && run n32 "$EPOCHS" "$DATA/data.yaml" "${FAST[@]}" model=yolo11n-seg.yaml stages.batch.params.batch=32
want m32 && run m32 "$EPOCHS" "$DATA/data.yaml" "${FAST[@]}" model=yolo11m-seg.yaml stages.batch.params.batch=32
want ultralytics-n32 && ultra n32 "$DATA/data.yaml" yolo11n-seg.yaml "$EPOCHS" 32 2560 cache=ram workers=8 val=False
want ultralytics-m32 && ultra m32 "$DATA/data.yaml" yolo11m-seg.yaml "$EPOCHS" 32 2560 cache=ram workers=8 val=False

if want crowded; then
  # CROWDED_IMAGES images of 640 x 640, each with CROWDED_INSTANCES small random polygons.
  CROWD=/tmp/crowded-seg
  python3 - "$CROWD" "${CROWDED_IMAGES:-64}" "${CROWDED_INSTANCES:-300}" <<'PY'
import os, sys
import cv2, numpy as np
root, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(root + "/images/train", exist_ok=True); os.makedirs(root + "/labels/train", exist_ok=True)
rng = np.random.default_rng(0)
for i in range(n):
    img = rng.integers(0, 255, (640, 640, 3), dtype=np.uint8)
    lines = []
    for _ in range(k):
        cx, cy = rng.uniform(0.05, 0.95, 2); r = rng.uniform(0.01, 0.04)
        t = np.sort(rng.uniform(0, 2 * np.pi, 8))
        pts = np.stack([cx + r * np.cos(t), cy + r * np.sin(t)], 1).clip(0, 1)
        lines.append(str(int(rng.integers(0, 80))) + " " + " ".join("%.5f" % v for v in pts.ravel()))
    cv2.imwrite(f"{root}/images/train/{i:04d}.jpg", img)
    open(f"{root}/labels/train/{i:04d}.txt", "w").write("\n".join(lines) + "\n")
PY
  { echo "path: $CROWD"; echo "train: images/train"; echo "val: images/train"; sed -n '/^names:/,$p' "$SEG/data.yaml"; } > "$CROWD/data.yaml"
  batch="${CROWDED_BATCH:-8}"
  run crowded 1 "$CROWD/data.yaml" pipelines/train-coco128.json model=yolo11n-seg.yaml \
    stages.train.params.precision.plugin=amp_fp16 stages.batch.params.batch="$batch" stages.train.params.val_every=0
  ultra crowded "$CROWD/data.yaml" yolo11n-seg.yaml 1 "$batch" "${CROWDED_IMAGES:-64}" cache=ram workers=8 val=False
fi

if want quality; then
  start="${QUALITY_START:-yolo11n-seg.yaml}"
  for seed in ${QUALITY_SEEDS:-0 1}; do
    RUN_WORKERS="${QUALITY_WORKERS:-4}" run "quality-s$seed" "${QUALITY_EPOCHS:-100}" "$SEG_YAML" pipelines/train-coco128.json \
      model="$start" stages.train.params.precision.plugin=amp_fp16 stages.batch.params.batch=16 seed="$seed" \
      stages.train.params.val_every=0 &
    KEEP_WEIGHTS=1 ultra "quality-s$seed" "$SEG_YAML" "$start" "${QUALITY_EPOCHS:-100}" 16 128 seed="$seed" \
      workers="${QUALITY_WORKERS:-4}" val=False &
  done
  wait
fi

python3 - "$OUT/compare-seg.jsonl" <<'PY'
import json, os, sys
if not os.path.exists(sys.argv[1]): sys.exit()
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line); runs[r["name"]] = r
print("\n%-10s %9s %10s %9s %15s %10s" % ("run", "img/s", "vs Ultra.", "GPU util", "peak reserved", "vs Ultra."))
for name in ("n32", "m32", "crowded"):
    r, u = runs.get(name), runs.get("ultralytics-" + name, {})
    if not r or "img_s" not in r: continue
    vs = "%.2fx" % (r["img_s"] / u["img_s"]) if u.get("img_s") else "-"
    mem = "%.2fx" % (r["peak_reserved_GiB"] / u["peak_reserved_GiB"]) if u.get("peak_reserved_GiB") else "-"
    print("%-10s %9.0f %10s %8s%% %11.2f GiB %10s" % (name, r["img_s"], vs, r.get("gpu_util"), r["peak_reserved_GiB"], mem))
    if u.get("img_s"):
        print("%-10s %9.0f %10s %8s%% %11.2f GiB" % ("  Ultra.", u["img_s"], "", u.get("gpu_util"), u.get("peak_reserved_GiB") or 0))
for k in sorted(k for k in runs if k.startswith("quality-") or k.startswith("ultralytics-quality-")):
    r = runs[k]
    print("%-24s box mAP50-95 %s  mask mAP50-95 %s" % (k, r.get("mAP50_95"), r.get("mAP50_95_M", "-")))
PY
