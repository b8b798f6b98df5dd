#!/usr/bin/env bash
# Augmentations composed on the GPU (the train sink's augment_on device: the CPU workers decode,
# draw and move the boxes, the GPU composes the mosaic tiles, colours and flips) against the
# CPU workers making every pixel (augment_on workers), in the same invocation, on the no-cache
# data path of bench/gpu/no-cache-data-path.sh (yolo11n b32 at 640, max-throughput pipeline,
# every image decoded from its JPEG file). Runs:
#   workers  the CPU workers make every pixel (one epoch);
#   device   composed on the GPU, every image decoded each epoch (device_image_cache off; one epoch);
#   kept     composed on the GPU with the device image cache (device_image_cache auto): it opens
#            after epoch 1, fills in epoch 2; measured in epoch KEPT_EPOCHS (3), where no image is
#            read or decoded.
# Prints each run's line, device / workers and kept / workers (peak reserved memory included).
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build:
#   taskset -c 0-3 bash bench/gpu/planned-pixels.sh     (4 of the cores; without taskset, all)
#   Env: FILES (20000), WORKERS (3), DEVICE_WORKERS (WORKERS: the device and kept runs' workers;
#   with the pixels composed on the GPU a worker mostly waits in the JPEG decoder, and more
#   workers than cores can help), BATCH (32), EXTRA (more overrides for every run),
#   WHERE ("workers device kept": which runs), KEPT_EPOCHS (3)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
export FILES="${FILES:-20000}" WORKERS="${WORKERS:-3}" BATCH="${BATCH:-32}"
EXTRA0="${EXTRA:-}"
: > "$OUT/planned-pixels.jsonl"
echo "cores: $(nproc) (of $(nproc --all)), workers $WORKERS (device and kept: ${DEVICE_WORKERS:-$WORKERS}), files $FILES"
for where in ${WHERE:-workers device kept}; do
  case "$where" in
    workers) set -- "augment_on=workers" 1 "$WORKERS" ;;
    device) set -- "augment_on=device stages.train.params.device_image_cache=off" 1 "${DEVICE_WORKERS:-$WORKERS}" ;;
    kept) set -- "augment_on=device stages.train.params.device_image_cache=auto" "${KEPT_EPOCHS:-3}" "${DEVICE_WORKERS:-$WORKERS}" ;;
    *) echo "WHERE: unknown run '$where' (workers, device, kept)" >&2; exit 2 ;;
  esac
  EXTRA="stages.train.params.$1 $EXTRA0" EPOCHS="$2" WORKERS="$3" RUNS=recent bash bench/gpu/no-cache-data-path.sh \
    > "$OUT/planned-$where.log" 2>&1
  grep -E '^\{' "$OUT/planned-$where.log" | sed "s/\"name\": \"recent\"/\"name\": \"$where\"/" | tee -a "$OUT/planned-pixels.jsonl"
  grep -E "augmentations (composed|made)|device image cache|error|refused" "$OUT/run-nocache-recent.log" | head -4
  cp "$OUT/run-nocache-recent.log" "$OUT/planned-$where-run.log" 2>/dev/null
done
python3 - "$OUT/planned-pixels.jsonl" <<'PY'
import json, sys
r = {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    r[j["name"]] = j
b = r.get("workers", {})
for name in ("device", "kept"):
    a = r.get(name, {})
    if "img_s" in a and "img_s" in b:
        print("steady, %s / workers: %.2fx (%.1f vs %.1f img/s; GPU busy %s%% vs %s%%; per core %s vs %s)" % (
            name, a["img_s"] / b["img_s"], a["img_s"], b["img_s"], a.get("gpu_util"), b.get("gpu_util"),
            a.get("img_s_per_core"), b.get("img_s_per_core")))
        print("last epoch, %s / workers: %.2fx (%.1f vs %.1f img/s); peak reserved %s vs %s GiB" % (
            name, a["epoch_img_s"] / b["epoch_img_s"], a["epoch_img_s"], b["epoch_img_s"], a.get("peak_reserved_GiB"),
            b.get("peak_reserved_GiB")))
PY
