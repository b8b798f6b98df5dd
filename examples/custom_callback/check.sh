#!/usr/bin/env bash
# The example's test: the installed CLI trains one epoch of the built-in recipe with the
# callback, resumes the run for a second epoch (the history in the checkpoint continues), and
# a threshold stops a third run after its first epoch.
# Usage: check.sh YOLOFLOW_CLI PLUGIN_DIR COCO128_DIR WORK_DIR
set -euo pipefail
cli="$1"; plugins="$2"; coco="$3"; work="$4"
ls "$plugins"/yoloflow_loss_history.so >/dev/null
described=$("$cli" --plugin-path "$plugins" describe loss_history)
grep -q "loss_history (callback, plugin example_loss_history 1.0.0)" <<<"$described"
mkdir -p "$work"
train() {
  local log="$1"; shift
  "$cli" --plugin-path "$plugins" train "$@" > "$log" 2>&1 || { cat "$log"; echo "custom_callback: training failed"; exit 1; }
}
values() { python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["values"]))' "$1"; }
common=(data="$coco/data.yaml" imgsz=64 batch=16 device=cpu workers=1)

train "$work/one.log" "${common[@]}" epochs=1 'stages.train.params.callbacks=[{"plugin": "loss_history"}]' --run-dir "$work/run"
[ "$(values "$work/run/loss_history.json")" = 1 ] || { cat "$work/run/loss_history.json"; exit 1; }
[ -f "$work/run/weights/lowest.pt" ] || { echo "custom_callback: no lowest.pt"; exit 1; }

train "$work/two.log" --resume "$work/run" epochs=2
[ "$(values "$work/run/loss_history.json")" = 2 ] || { cat "$work/run/loss_history.json"; echo "custom_callback: the resumed run lost the history"; exit 1; }

train "$work/stop.log" "${common[@]}" epochs=3 \
  'stages.train.params.callbacks=[{"plugin": "loss_history", "params": {"stop_below": 1000}}]' --run-dir "$work/stop"
grep -q "loss_history: train/box_loss .* is below 1000" "$work/stop.log" || { cat "$work/stop.log"; exit 1; }
[ "$(values "$work/stop/loss_history.json")" = 1 ] || { cat "$work/stop/loss_history.json"; exit 1; }
echo "custom_callback: OK"
