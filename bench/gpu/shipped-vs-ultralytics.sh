#!/usr/bin/env bash
# What a user gets without asking: the shipped training pipeline as it is, against Ultralytics'
# defaults, in one command on one GPU machine, and the same pipeline with single switches
# changed, to show what each default is worth.
#
# Data: coco128's train images listed 20 times per epoch (2,560 images), imgsz 640, validation
# on coco128's val images each epoch (both tools), from scratch, no RAM cache (both defaults).
# Prints one line per configuration: steady images/s over whole epochs (2,560 images over an
# epoch's time in results.csv's `time` column, validation included, epochs after the first; the
# same rule for both tools; yoloflow's training-only figure beside it), peak memory reserved by the CUDA caching allocator
# (yoloflow's results.csv; Ultralytics' progress column GPU_mem, which is reserved memory), and
# the ratio to Ultralytics' defaults measured in the same run.
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build (scripts/device-build.sh):
#   bash bench/gpu/shipped-vs-ultralytics.sh [CONFIGS]
# CONFIGS: comma list of names below (default: all); EPOCHS (3), BATCH (16), EXTRA (overrides
# added to every yoloflow run, e.g. "workers=8").
# Ultralytics runs when `python3 -c "import ultralytics"` works; otherwise its line says so.
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
EPOCHS="${EPOCHS:-3}"
BATCH="${BATCH:-16}"
read -r -a EXTRA_OVERRIDES <<< "${EXTRA:-}"
CONFIGS="${1:-ultralytics,shipped,shipped-no-shared-pool,shipped-fixed-segments,shipped-others-any,shipped-no-channels_last,shipped-eager,shipped-workers8,shipped-fp32,shipped-bf16,shipped-ram}"
. bench/gpu/coco128x20.sh
want() { [[ ",$CONFIGS," == *",$1,"* ]]; }
RESULTS="$OUT/shipped-vs-ultralytics.jsonl"
: > "$RESULTS"

# yoloflow NAME OVERRIDES...: the shipped pipeline (pipelines/train-coco128.json) with OVERRIDES.
yoloflow() {
  local name="$1"; shift
  local dir="$OUT/run-$name"
  rm -rf "$dir"
  timeout 400 "$BIN/yoloflow" train pipelines/train-coco128.json --run-dir "$dir" epochs="$EPOCHS" \
    data="$DATA/data.yaml" batch="$BATCH" "${EXTRA_OVERRIDES[@]}" "$@" > "$dir.log" 2>&1
  local rc=$?
  python3 - "$dir" "$name" "$rc" <<'PY' | tee -a "$RESULTS"
import csv, json, sys
d, name, rc = sys.argv[1:4]
out = {"name": name, "tool": "yoloflow", "exit": int(rc)}
try:
    rows = list(csv.DictReader(open(d + "/results.csv")))
    ips = [float(r["images_per_second"]) for r in rows]
    steady = ips[1:] or ips
    t = [float(r["time"]) for r in rows]
    per_epoch = [t[0]] + [b - a for a, b in zip(t, t[1:])]
    wall = per_epoch[1:] or per_epoch
    out.update(epochs=len(rows), img_s=round(2560 / (sum(wall) / len(wall)), 1),
               train_img_s=round(sum(steady) / len(steady), 1),
               peak_reserved_GiB=round(max(float(r.get("gpu_peak_reserved_GiB") or 0) for r in rows), 2),
               mAP50_95=float(rows[-1]["metrics/mAP50-95(B)"] or 0))
except (OSError, KeyError, ValueError) as e:
    out["error"] = str(e)
print(json.dumps(out))
PY
  grep -E "^\[.*(warning|error)|cuda_graph: (captured|capture failed)|amp:" "$dir.log" | head -4
  rm -rf "$dir/weights"
}

# Ultralytics' defaults (amp, no cache, cudnn.benchmark off, NCHW), same data, epochs and batch.
ultralytics() {
  local dir="$OUT/run-ultralytics"
  rm -rf "$dir"
  if ! python3 -c "import ultralytics" 2>/dev/null; then
    echo '{"name": "ultralytics", "tool": "ultralytics", "error": "python3 cannot import ultralytics on this machine"}' | tee -a "$RESULTS"
    return
  fi
  local version
  version=$(python3 -c "import ultralytics; print(ultralytics.__version__)")
  ( cd "$OUT" && timeout 500 python3 - "$DATA/data.yaml" "$EPOCHS" "$BATCH" "$dir" > "$dir.log" 2>&1 <<'PY'
import sys
from ultralytics import YOLO
data, epochs, batch, project = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
YOLO("yolo11n.yaml").train(data=data, epochs=epochs, batch=batch, imgsz=640, device=0, workers=8,
                           project=project, name="r", exist_ok=True, plots=False)
PY
  )
  local rc=$?
  python3 - "$dir/r" "$rc" "$version" "$dir.log" "$EPOCHS" <<'PY' | tee -a "$RESULTS"
import csv, json, re, sys
d, rc, version, log, epochs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
out = {"name": "ultralytics", "tool": "ultralytics " + version, "exit": rc}
try:
    rows = list(csv.DictReader(open(d + "/results.csv")))
    rows = [{k.strip(): v for k, v in r.items()} for r in rows]
    t = [float(r["time"]) for r in rows]
    per_epoch = [t[0]] + [b - a for a, b in zip(t, t[1:])]
    steady = per_epoch[1:] or per_epoch
    out.update(epochs=len(rows), img_s=round(2560 / (sum(steady) / len(steady)), 1),
               mAP50_95=float(rows[-1]["metrics/mAP50-95(B)"]))
    # Progress lines: "1/3  3.15G  ..." (GPU_mem is torch.cuda.memory_reserved()).
    mem = [float(m) for m in re.findall(r"\b\d+/%d\s+([0-9.]+)G\b" % epochs, open(log, errors="replace").read())]
    out["peak_reserved_GiB"] = max(mem) if mem else None
except (OSError, KeyError, ValueError) as e:
    out["error"] = str(e)
print(json.dumps(out))
PY
  grep -iE "error|warning" "$dir.log" | grep -v "^\s*$" | head -4
}

want ultralytics && ultralytics
want shipped && yoloflow shipped
# One default changed each: validation and eager steps beside the captured step's memory pool,
# the allocator's fixed segments instead of expandable ones,
# the mosaic's other images drawn among all samples (each decoded again), NCHW, eager steps,
# 8 graph workers instead of 12.
want shipped-no-shared-pool && yoloflow shipped-no-shared-pool stages.train.params.cuda_graph_shared_pool=false
want shipped-fixed-segments && yoloflow shipped-fixed-segments stages.train.params.cuda_alloc_conf=expandable_segments:False
want shipped-others-any && yoloflow shipped-others-any stages.mosaic.params.others=any
want shipped-no-channels_last && yoloflow shipped-no-channels_last stages.train.params.model.params.channels_last=false
want shipped-eager && yoloflow shipped-eager stages.train.params.cuda_graph=false
want shipped-workers8 && yoloflow shipped-workers8 workers=8
want shipped-fp32 && yoloflow shipped-fp32 stages.train.params.precision.plugin=fp32
want shipped-bf16 && yoloflow shipped-bf16 stages.train.params.precision.plugin=amp_bf16
want shipped-ram && yoloflow shipped-ram stages.source.params.cache=ram

python3 - "$RESULTS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
base = next((r for r in rows if r["name"] == "ultralytics" and r.get("img_s")), None)
ours = next((r for r in rows if r["name"] == "shipped" and r.get("img_s")), None)
print("\n| configuration | img/s (whole epochs) | vs Ultralytics | vs shipped | img/s (training only) | peak reserved GiB | mAP50-95 after the run |")
print("|---|---|---|---|---|---|---|")
ratio = lambda r, b: "%.2fx" % (r["img_s"] / b["img_s"]) if b and r.get("img_s") else ""
for r in rows:
    print("| %s | %s | %s | %s | %s | %s | %s |" % (r["name"], r.get("img_s", r.get("error", "")), ratio(r, base), ratio(r, ours),
                                                   r.get("train_img_s", ""), r.get("peak_reserved_GiB", ""), r.get("mAP50_95", "")))
PY
