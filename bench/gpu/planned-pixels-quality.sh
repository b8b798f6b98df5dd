#!/usr/bin/env bash
# Training quality with augmentations composed on the GPU (augment_on device) against the CPU
# workers making every pixel (augment_on workers): YOLO11n from scratch (yolo11n.yaml), the
# shipped pipeline's recipe (mosaic, HSV, flips; close_mosaic), imgsz 320, batch 32, EPOCHS (30)
# epochs of coco128's 128 train images listed 20 times (bench/gpu/coco128x20.sh), validated on
# the train images (mAP after a short run means something only on images the model has seen),
# for each seed of SEEDS ("0 1"). The runs go side by side on the one GPU, each pinned to its own
# 4 cores with 3 workers (GPU time is shared: this measures quality, not speed).
# Prints each run's last-epoch mAP50-95 and mAP50, then per path the mean over the seeds, the
# difference between the paths' means and the spread between seeds of one path (the seed noise).
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build:
#   bash bench/gpu/planned-pixels-quality.sh     Env: EPOCHS (30), SEEDS ("0 1"), IMGSZ (320), EXTRA
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
. bench/gpu/coco128x20.sh
EPOCHS="${EPOCHS:-30}"
SEEDS="${SEEDS:-0 1}"
read -r -a EXTRA_WORDS <<< "${EXTRA:-}"
cores=$(nproc)
slot=0
pids=()
for seed in $SEEDS; do
  for where in workers device; do
    dir="$OUT/quality-$where-seed$seed"
    rm -rf "$dir"
    first=$(( (slot * 4) % cores ))
    taskset -c "$first-$(( first + 3 ))" timeout 590 "$BIN/yoloflow" train data="$DATA/data-trainval.yaml" \
      model=yolo11n.yaml imgsz="${IMGSZ:-320}" batch=32 epochs="$EPOCHS" seed="$seed" workers=3 \
      stages.train.params.augment_on="$where" --run-dir "$dir" "${EXTRA_WORDS[@]}" > "$dir.log" 2>&1 &
    pids+=($!)
    slot=$(( slot + 1 ))
  done
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
grep -hE "augmentations (composed|made)|error|refused" "$OUT"/quality-*.log | sort | uniq -c | head -8
python3 - "$OUT" "$SEEDS" <<'PY'
import csv, json, os, statistics, sys
out, seeds = sys.argv[1], sys.argv[2].split()
runs = {}
for where in ("workers", "device"):
    for seed in seeds:
        path = os.path.join(out, "quality-%s-seed%s" % (where, seed), "results.csv")
        try:
            rows = list(csv.DictReader(open(path)))
        except OSError:
            print(json.dumps({"where": where, "seed": seed, "error": "no results.csv"}))
            continue
        last = {k.strip(): v for k, v in rows[-1].items()}
        r = {"where": where, "seed": int(seed), "epochs": int(last["epoch"]),
             "mAP50-95": float(last["metrics/mAP50-95(B)"]), "mAP50": float(last["metrics/mAP50(B)"])}
        runs.setdefault(where, []).append(r)
        print(json.dumps(r))
for metric in ("mAP50-95", "mAP50"):
    means = {w: statistics.mean(r[metric] for r in rs) for w, rs in runs.items()}
    spread = {w: max(r[metric] for r in rs) - min(r[metric] for r in rs) for w, rs in runs.items()}
    if len(means) == 2:
        print("%s: device %.4f, workers %.4f (mean of %d seeds); device - workers %+.4f; seed spread "
              "workers %.4f, device %.4f" % (metric, means["device"], means["workers"], len(seeds),
                                              means["device"] - means["workers"], spread["workers"], spread["device"]))
PY
exit $rc
