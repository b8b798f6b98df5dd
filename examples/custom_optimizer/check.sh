#!/usr/bin/env bash
# The example's test: the installed CLI trains two steps with the plugin as the optimizer, on
# the built-in recipe (`yoloflow train data=...`), and saves a checkpoint holding its state.
# Usage: check.sh YOLOFLOW_CLI PLUGIN_DIR COCO128_DIR WORK_DIR
set -euo pipefail
cli="$1"; plugins="$2"; coco="$3"; work="$4"
ls "$plugins"/yoloflow_signsgd.so >/dev/null
described=$("$cli" --plugin-path "$plugins" describe signsgd)
grep -q "signsgd (optimizer, plugin example_signsgd 1.0.0)" <<<"$described"
mkdir -p "$work"
log="$work/train.log"
"$cli" --plugin-path "$plugins" train data="$coco/data.yaml" stages.train.params.optimizer.plugin=signsgd \
  epochs=1 imgsz=64 batch=2 device=cpu workers=1 max_steps=2 --run-dir "$work/run" > "$log" 2>&1 ||
  { cat "$log"; echo "custom_optimizer: training failed"; exit 1; }
grep -q "optimizer: SignSGD(lr=0.000100, momentum=0.900000)" "$log" || { cat "$log"; exit 1; }
grep -q "stopped: max_steps" "$log" || { cat "$log"; exit 1; }
[ -f "$work/run/weights/last.pt" ] || { echo "custom_optimizer: no last.pt"; exit 1; }
echo "custom_optimizer: OK"
