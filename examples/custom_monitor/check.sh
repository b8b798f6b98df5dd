#!/usr/bin/env bash
# The example's test, as its user would check it: a tiny CPU training (4 coco128 images,
# imgsz 64) with the plugin as the pipeline's monitor; every line of epochs.jsonl must
# carry the values of the same epoch's results.csv row; a stop file ends the next run
# after its first epoch, resumably.
# Usage: check.sh YOLOFLOW_CLI PLUGIN_DIR COCO128_DIR WORK_DIR
set -euo pipefail
cli="$1"; plugins="$2"; coco="$3"; work="$4"
mkdir -p "$work"
# The first 4 images (a glob is sorted). Not `ls | sort | head`: under pipefail, head exiting after
# 4 lines can kill sort with SIGPIPE before it has written the rest, which ended this script
# silently (193 of 3,000 runs of that line on the 2-core dev machine).
images=("$coco"/images/train2017/*.jpg)
printf '%s\n' "${images[@]:0:4}" > "$work/images.txt"
{ printf 'path: .\ntrain: images.txt\nval: images.txt\nnames:\n'; sed -n '/^names:/,$p' "$coco/data.yaml" | grep '^  '; } \
  > "$work/data.yaml"
cat > "$work/train.json" <<'JSON'
{
  "name": "monitor-example", "epochs": 2, "imgsz": 64, "seed": 0, "device": "cpu", "workers": 1,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": "data.yaml"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 2}},
    "train": {"plugin": "train", "input": "batch",
              "params": {"data": "data.yaml", "scheduler": {"plugin": "linear"}, "val_batch": 4, "warmup_epochs": 0}}
  },
  "monitors": [{"plugin": "epoch_jsonl", "params": {"file": "log/epochs.jsonl"}}]
}
JSON
run() { OMP_NUM_THREADS=1 "$cli" --plugin-path "$plugins" train "$work/train.json" --run-dir "$@"; }

run "$work/full" > "$work/full.log" 2>&1 || { cat "$work/full.log"; exit 1; }
python3 - "$work/full" <<'PY'
import csv, json, math, sys
run = sys.argv[1]
rows = list(csv.DictReader(open(run + "/results.csv")))
lines = [json.loads(l) for l in open(run + "/log/epochs.jsonl")]
assert len(rows) == 2 and len(lines) == 2, (len(rows), len(lines))
for row, line in zip(rows, lines):
    row = {k.strip(): v.strip() for k, v in row.items()}
    assert line["epoch"] == int(float(row["epoch"])) and line["epochs"] == 2, line
    values = line["values"]
    for name in ["train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/precision(B)",
                 "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)", "val/box_loss", "lr/pg0"]:
        assert name in values, (name, sorted(values))
        # results.csv rounds to its printed digits; the JSON line holds the full value.
        assert math.isclose(values[name], float(row[name]), rel_tol=1e-4, abs_tol=1e-5), (name, values[name], row[name])
    assert values["samples"] == 4 and line["seconds"] > 0, line
print("epochs.jsonl: 2 lines, each equal to its results.csv row")
PY

# A stop file present at the first epoch end: the run stops there, resumably.
mkdir -p "$work/stopped" && touch "$work/stopped/STOP"
run "$work/stopped" > "$work/stopped.log" 2>&1 || { cat "$work/stopped.log"; exit 1; }
grep -q "stopped: stop file $work/stopped/STOP found after epoch 1" "$work/stopped.log" || { cat "$work/stopped.log"; exit 1; }
grep -q "yoloflow train --resume" "$work/stopped.log" || { cat "$work/stopped.log"; exit 1; }
[ "$(wc -l < "$work/stopped/log/epochs.jsonl")" -eq 1 ] || { echo "expected 1 line after the stop"; exit 1; }
[ "$(tail -n +2 "$work/stopped/results.csv" | wc -l)" -eq 1 ] || { echo "expected 1 results.csv row after the stop"; exit 1; }
echo "custom_monitor: OK"
