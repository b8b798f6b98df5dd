#!/usr/bin/env bash
# Augmentations composed on the GPU (the train sink's augment_on device: the CPU workers decode,
# draw and move the boxes, the GPU composes the mosaic tiles, colours and flips) against the
# CPU workers making every pixel (augment_on workers), in the same invocation, on the no-cache
# data path of bench/gpu/no-cache-data-path.sh (yolo11n b32 at 640, max-throughput pipeline,
# every image decoded from its JPEG file). Prints each run's line and device / workers.
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build:
#   taskset -c 0-3 bash bench/gpu/planned-pixels.sh     (4 of the cores; without taskset, all)
#   Env: FILES (20000), WORKERS (3), BATCH (32), EXTRA (more overrides for both runs),
#   WHERE ("workers device": which runs)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
export FILES="${FILES:-20000}" WORKERS="${WORKERS:-3}" BATCH="${BATCH:-32}"
EXTRA0="${EXTRA:-}"
: > "$OUT/planned-pixels.jsonl"
echo "cores: $(nproc) (of $(nproc --all)), workers $WORKERS, files $FILES"
for where in ${WHERE:-workers device}; do
  EXTRA="stages.train.params.augment_on=$where $EXTRA0" RUNS=recent bash bench/gpu/no-cache-data-path.sh \
    > "$OUT/planned-$where.log" 2>&1
  grep -E '^\{' "$OUT/planned-$where.log" | sed "s/\"name\": \"recent\"/\"name\": \"$where\"/" | tee -a "$OUT/planned-pixels.jsonl"
  grep -E "augmentations (composed|made)|error|refused" "$OUT/planned-$where.log" | head -3
done
python3 - "$OUT/planned-pixels.jsonl" <<'PY'
import json, sys
r = {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    r[j["name"]] = j
a, b = r.get("device", {}), r.get("workers", {})
if "img_s" in a and "img_s" in b:
    print("steady, device / workers: %.2fx (%.1f vs %.1f img/s; GPU busy %s%% vs %s%%; per core %s vs %s)" % (
        a["img_s"] / b["img_s"], a["img_s"], b["img_s"], a.get("gpu_util"), b.get("gpu_util"),
        a.get("img_s_per_core"), b.get("img_s_per_core")))
    print("whole epoch, device / workers: %.2fx (%.1f vs %.1f img/s); peak reserved %s vs %s GiB" % (
        a["epoch_img_s"] / b["epoch_img_s"], a["epoch_img_s"], b["epoch_img_s"], a.get("peak_reserved_GiB"),
        b.get("peak_reserved_GiB")))
PY
