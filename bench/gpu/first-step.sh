#!/usr/bin/env bash
# How long a user waits for training to start: seconds from the process start to the first
# optimizer step (the trainer's "first optimizer step" line), YOLO11n batch 32 at 640 on
# coco128's train images, from scratch, one epoch, each configuration in a fresh process.
# Configurations (a comma list; default default,bench,no-graph):
#   default     the words a user types: `yoloflow train data=coco128 model=yolo11n.yaml batch=32`
#               (captured step, cuDNN's heuristics)
#   bench       the same with cudnn_benchmark=true (cuDNN times its algorithms per shape first)
#   no-graph    the same with cuda_graph=false (eager steps)
#   profile     cuda_graph=false profile_every=1: the first step's phases (forward + loss,
#               backward, optimizer) from its steps.csv, printed after its line
# Prints one JSON line per configuration (also in $OUT/first-step.jsonl) with the timeline.
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build:
#   bash bench/gpu/first-step.sh [CONFIGS]        env: REPEAT (2: the first run of a fresh
#   machine also reads the libraries from disk; the second is what a user sees from then on)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
CONFIGS="${1:-default,bench,no-graph}"
REPEAT="${REPEAT:-2}"
LOG="$OUT/first-step.jsonl"
: > "$LOG"
want() { [[ ",$CONFIGS," == *",$1,"* ]]; }
one() {
  local name="$1" i="$2"; shift 2
  local dir="$OUT/first-step-$name-$i" start end
  rm -rf "$dir"
  start=$(date +%s.%N)
  timeout 300 "$BIN/yoloflow" train data="$COCO/data.yaml" model=yolo11n.yaml batch=32 imgsz=640 epochs=1 \
    --run-dir "$dir" "$@" > "$dir.log" 2>&1
  local rc=$?
  end=$(date +%s.%N)
  python3 - "$name" "$i" "$rc" "$start" "$end" "$dir.log" <<'PY' | tee -a "$LOG"
import json, re, sys
name, i, rc, start, end, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
text = open(log, errors="replace").read()
out = {"name": name, "run": i, "exit": rc, "wall_s": round(end - start, 2)}
m = re.search(r"first optimizer step ([0-9.]+) s after the process started \(run built at ([0-9.-]+) s, first batch at ([0-9.-]+) s", text)
if m:
    out.update(first_step_s=float(m.group(1)), built_s=float(m.group(2)), first_batch_s=float(m.group(3)))
print(json.dumps(out))
PY
  [ "$name" = profile ] && [ -f "$dir/steps.csv" ] && head -2 "$dir/steps.csv"
  return 0
}
for i in $(seq "$REPEAT"); do
  want default && one default "$i"
  want bench && one bench "$i" stages.train.params.cudnn_benchmark=true
  want no-graph && one no-graph "$i" stages.train.params.cuda_graph=false
  want profile && one profile "$i" stages.train.params.cuda_graph=false stages.train.params.profile_every=1
done
