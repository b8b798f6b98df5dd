#!/usr/bin/env bash
# The example's test: the installed CLI trains one epoch of the built-in recipe with the
# centre_cell loss: its components are logged and written to results.csv (training and
# validation) in the built-in loss's place; a bad parameter is refused at its JSON path.
# Usage: check.sh YOLOFLOW_CLI PLUGIN_DIR COCO128_DIR WORK_DIR
set -euo pipefail
cli="$1"; plugins="$2"; coco="$3"; work="$4"
ls "$plugins"/yoloflow_centre_cell.so >/dev/null
described=$("$cli" --plugin-path "$plugins" describe centre_cell)
grep -q "centre_cell (loss, plugin example_centre_cell 1.0.0)" <<<"$described"
mkdir -p "$work"
common=(data="$coco/data.yaml" imgsz=64 batch=16 device=cpu workers=1 epochs=1)

"$cli" --plugin-path "$plugins" train "${common[@]}" 'stages.train.params.loss={"plugin": "centre_cell", "params": {"box": 2.0}}' \
  --run-dir "$work/run" > "$work/train.log" 2>&1 || { cat "$work/train.log"; echo "custom_loss: training failed"; exit 1; }
grep -Eq "box_l1 [0-9.]+  cls [0-9.]+" "$work/train.log" || { cat "$work/train.log"; echo "custom_loss: no progress line with the loss's components"; exit 1; }
python3 - "$work/run/results.csv" <<'PY' || { cat "$work/run/results.csv"; echo "custom_loss: results.csv lacks the loss's columns"; exit 1; }
import csv, math, sys
row = list(csv.DictReader(open(sys.argv[1])))[0]
for column in ("train/box_l1_loss", "train/cls_loss", "val/box_l1_loss", "val/cls_loss"):
    assert math.isfinite(float(row[column])) and float(row[column]) > 0, column
# results.csv's loss columns are the loss's own: the built-in loss's are not there.
assert "train/box_loss" not in row and "train/dfl_loss" not in row, "the built-in loss's columns are there"
assert list(row)[2:4] == ["train/box_l1_loss", "train/cls_loss"], list(row)[:6]
PY

if "$cli" --plugin-path "$plugins" train "${common[@]}" 'stages.train.params.loss={"plugin": "centre_cell", "params": {"box": -1}}' \
  --run-dir "$work/bad" > "$work/bad.log" 2>&1; then
  echo "custom_loss: a negative gain was accepted"; exit 1
fi
grep -q "stages.train.params.loss.params.box" "$work/bad.log" || { cat "$work/bad.log"; exit 1; }
echo "custom_loss: OK"
