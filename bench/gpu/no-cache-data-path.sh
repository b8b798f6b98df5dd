#!/usr/bin/env bash
# Training without a RAM cache on a dataset far larger than the RAM cache's budget: YOLO11n,
# batch 32, imgsz 640, the max-throughput pipeline (mosaic_perspective chain, captured step,
# amp_fp16, channels_last) with `cache: none`, every image decoded from its JPEG file each
# epoch (the OS page cache allowed).
#
# Data: coco128's 128 train images copied to FILES (100,000) distinct files with their labels in
# /tmp/coco128-files (16 GB of JPEG; decoded at 640 they would need ~90 GB of RAM cache), val =
# coco128's val images. Runs, each one epoch:
#   recent   the mosaic's other images among the recent samples (the default; their decoded
#            images are kept), over all FILES files;
#   any      the baseline: the other images drawn among all samples, each decoded again, over
#            the first BASE_FILES (20,000) files (the same per-image work, a shorter epoch).
# Prints per run: the epoch's training images/s (results.csv: from its start, with the first
# steps' cuDNN autotuning and the step's capture), the steady images/s (progress lines from step
# 200 to the last before the epoch's end: batches x batch size over their wall-clock span), the same per CPU core of the
# machine and per graph worker, the mean GPU utilisation over that span (the gpu monitor's NVML
# readings), the data wait of the last progress line, peak reserved memory; then recent / any.
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build (scripts/device-build.sh):
#   bash bench/gpu/no-cache-data-path.sh        Env: FILES, BASE_FILES, WORKERS (14), BATCH (32),
#     RUNS ("recent any": which of the two), EXTRA (more overrides for both), EPOCHS (1: the
#     steady figures come from the last epoch; results.csv's epoch figure too)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
FILES="${FILES:-100000}"
BASE_FILES="${BASE_FILES:-20000}"
WORKERS="${WORKERS:-14}"
BATCH="${BATCH:-32}"
RUNS="${RUNS:-recent any}"
EXTRA="${EXTRA:-}"
EPOCHS="${EPOCHS:-1}"
DATA=/tmp/coco128-files
RESULTS="$OUT/no-cache-data-path.jsonl"
: > "$RESULTS"

start=$(date +%s)
python3 - "$COCO" "$DATA" "$FILES" "$BASE_FILES" <<'PY'
import os, shutil, sys
from concurrent.futures import ThreadPoolExecutor
coco, data, files, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
src = sorted(f for f in os.listdir(coco + "/images/train2017") if f.endswith(".jpg"))
for d in ("images/train", "labels/train"):
    os.makedirs(os.path.join(data, d), exist_ok=True)
def copy(k):
    f = src[k % len(src)]
    stem = "%06d_%s" % (k, f[:-4])
    img = os.path.join(data, "images/train", stem + ".jpg")
    if not os.path.exists(img):
        shutil.copyfile(os.path.join(coco, "images/train2017", f), img)
        lab = os.path.join(coco, "labels/train2017", f[:-4] + ".txt")
        if os.path.exists(lab):
            shutil.copyfile(lab, os.path.join(data, "labels/train", stem + ".txt"))
    return img
with ThreadPoolExecutor(32) as ex:
    images = list(ex.map(copy, range(files)))
open(os.path.join(data, "train.txt"), "w").write("\n".join(images) + "\n")
open(os.path.join(data, "train-base.txt"), "w").write("\n".join(images[:base]) + "\n")
val = sorted(os.path.join(coco, "images/val2017", f) for f in os.listdir(coco + "/images/val2017") if f.endswith(".jpg"))
open(os.path.join(data, "val.txt"), "w").write("\n".join(val) + "\n")
names = open(os.path.join(coco, "data.yaml")).read().split("names:", 1)[1]
for name, train in (("data.yaml", "train.txt"), ("data-base.yaml", "train-base.txt")):
    open(os.path.join(data, name), "w").write("path: %s\ntrain: %s\nval: val.txt\nnames:%s" % (data, train, names))
PY
sync  # the copies' write-back would otherwise run during the first measurement
echo "dataset: $FILES files in $DATA ($(du -sh "$DATA/images" | cut -f1)), made and synced in $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

# run NAME DATA_YAML OTHERS
run() {
  local name="$1" data="$2" others="$3" dir="$OUT/run-nocache-$1"
  rm -rf "$dir"
  timeout $(( 120 + 300 * EPOCHS )) "$BIN/yoloflow" train pipelines/max-throughput-coco128.json --run-dir "$dir" epochs="$EPOCHS" \
    data="$data" workers="$WORKERS" batch="$BATCH" stages.source.params.cache=none \
    stages.mosaic_perspective.params.others="$others" stages.train.params.log_every=100 \
    'monitors=[{"plugin":"gpu"}]' $EXTRA > "$dir.log" 2>&1
  local rc=$?
  python3 - "$dir" "$name" "$rc" "$WORKERS" "$(nproc)" "$BATCH" <<'PY' | tee -a "$RESULTS"
import csv, json, re, sys
d, name, rc, workers, cores, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
out = {"name": name, "exit": rc, "workers": workers, "cores": cores}
clock = lambda h, m, s: int(h) * 3600 + int(m) * 60 + int(s)
try:
    row = list(csv.DictReader(open(d + "/results.csv")))[-1]
    out.update(epoch_img_s=round(float(row["images_per_second"]), 1),
               peak_reserved_GiB=round(float(row.get("gpu_peak_reserved_GiB") or 0), 2))
    log = open(d + ".log", errors="replace").read()
    # The last epoch's progress lines.
    steps = [(clock(*m[:3]), int(m[5]), float(m[7]), int(m[6])) for m in
             re.findall(r"^\[(\d+):(\d+):(\d+) info\] epoch (\d+)/(\d+)\s+step (\d+)/(\d+).*data wait ([0-9.]+) ms", log, re.M)
             if m[3] == m[4]]
    # Not the epoch's last step: a partial last batch is a new shape (eager, cuDNN autotuning).
    steady = [s[:3] for s in steps if 200 <= s[1] < s[3]]
    (t0, s0, _), (t1, s1, wait) = steady[0], steady[-1]
    ips = (s1 - s0) * batch / (t1 - t0)
    out.update(img_s=round(ips, 1), img_s_per_core=round(ips / cores, 1), img_s_per_worker=round(ips / workers, 1),
               steady_steps="%d-%d" % (s0, s1), data_wait_ms=wait)
    gpu0 = clock(*re.search(r"^\[(\d+):(\d+):(\d+) info\] gpu: sampling", log, re.M).groups())
    util = [float(r["gpu_util"]) for r in csv.DictReader(open(d + "/gpu.csv"))
            if r["gpu_util"] and t0 - gpu0 <= float(r["time"]) <= t1 - gpu0]
    out["gpu_util"] = round(sum(util) / len(util), 1)
except (OSError, KeyError, ValueError, IndexError, ZeroDivisionError, AttributeError) as e:
    out["error"] = repr(e)
print(json.dumps(out))
PY
  grep -E "^\[.*(warning|error)|cuda_graph: (captured|capture failed)" "$dir.log" | head -3
  rm -rf "$dir/weights"
}
for r in $RUNS; do
  case "$r" in
    recent) run recent "$DATA/data.yaml" recent ;;
    any) run any "$DATA/data-base.yaml" any ;;
    *) echo "RUNS: unknown run '$r' (recent, any)" >&2; exit 2 ;;
  esac
done
python3 - "$RESULTS" <<'PY'
import json, sys
r = {j["name"]: j for j in map(json.loads, open(sys.argv[1]))}
a, b = r.get("recent", {}), r.get("any", {})
if "img_s" in a and "img_s" in b:
    print("steady, recent / any: %.2fx (%.1f vs %.1f img/s; GPU busy %s%% vs %s%%)" % (a["img_s"] / b["img_s"], a["img_s"],
          b["img_s"], a.get("gpu_util"), b.get("gpu_util")))
    print("whole epoch, recent / any: %.2fx (%.1f vs %.1f img/s)" % (a["epoch_img_s"] / b["epoch_img_s"], a["epoch_img_s"],
          b["epoch_img_s"]))
PY
