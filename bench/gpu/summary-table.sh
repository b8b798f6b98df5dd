#!/usr/bin/env bash
# The whole speed and memory picture in one command, yoloflow beside Ultralytics run in the same
# invocation: what a user gets from the shipped pipeline as it is (with and without a RAM cache),
# the speed options from a RAM cache and from JPEG files without one (on all cores and on 4),
# peak memory over runs that validate every epoch, a whole run from start to exit, the wait for
# the first step, and auto batch.
#
# Parts (a comma list; default all of them), each run by its own bench script with its results
# in $SUMMARY_DIR/PART (default $OUT/summary), so a part can run alone and the table still shows
# the others' last figures:
#   shipped   pipelines/train-coco128.json as it is, and with a RAM cache; Ultralytics' defaults in
#             the same invocation when `python3 -c "import ultralytics"` works
#             (shipped-vs-ultralytics.sh ultralytics,shipped,shipped-ram; EPOCHS 3)
#   speed     the speed options (max-throughput-coco128.json), RAM cache, YOLO11n b32, and
#             Ultralytics on the same setup (compare-ultralytics.sh n32,ultralytics-n32; EPOCHS 4)
#   memory    the speed options validating every epoch, YOLO11n and YOLO11m b32, and Ultralytics
#             validating every epoch (compare-ultralytics.sh n32,m32,ultralytics-n32,ultralytics-m32
#             with val_every=1 and ULTRA_VAL=True; EPOCHS 3)
#   nocache   the speed options from 100,000 JPEG files without a RAM cache, the mosaic's other
#             images among the recent samples (default) and among all (no-cache-data-path.sh)
#   fourcore  the same from 20,000 files on 4 of the machine's cores (taskset -c 0-3, 3 workers)
#   whole     a whole 60-epoch run at 320 from start to exit, both tools (whole-run.sh)
#   first     seconds to the first optimizer step, YOLO11n b32 at 640 (first-step.sh
#             default,bench,profile; REPEAT 1)
#   autobatch batch=-1 for yolo11x at 1280, both tools (auto-batch.sh)
#   seg       YOLO11n-seg and YOLO11m-seg b32 on coco128-seg x20 with the speed options and a RAM
#             cache, and a step's peak memory on crowded images (300 instances), both tools
#             (compare-ultralytics-seg.sh; EPOCHS 4)
#   table     runs nothing: prints the table from what is in $SUMMARY_DIR
# Ultralytics' column: its run in the same invocation where there is one, else its figure from
# bench/gpu/ultralytics-reference.json (measured on the same machine and setup), marked "ref"
# (where python3 cannot import Ultralytics).
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build (scripts/device-build.sh):
#   bash bench/gpu/summary-table.sh [PARTS]
# Takes about 35 minutes in all (the no-cache part makes 16 GB of files first); a part runs alone
# in a few minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
PARTS="${1:-shipped,speed,memory,nocache,fourcore,whole,first,autobatch,seg}"
BASE="${SUMMARY_DIR:-${OUT:-/tmp/yoloflow-out}/summary}"
want() { [[ ",$PARTS," == *",$1,"* ]]; }
part() {  # part NAME COMMAND...: runs COMMAND with OUT=$BASE/NAME, its output in NAME.log
  local name="$1"; shift
  rm -rf "${BASE:?}/$name" && mkdir -p "$BASE/$name"
  echo "== $name: $*"
  OUT="$BASE/$name" "$@" > "$BASE/$name.log" 2>&1
  echo "   exit $?, log $BASE/$name.log"
}
mkdir -p "$BASE"
want shipped && EPOCHS=3 part shipped bash bench/gpu/shipped-vs-ultralytics.sh ultralytics,shipped,shipped-ram
want speed && EPOCHS=4 part speed bash bench/gpu/compare-ultralytics.sh n32,ultralytics-n32
want memory && EPOCHS=3 EXTRA="stages.train.params.val_every=1" ULTRA_VAL=True part memory \
  bash bench/gpu/compare-ultralytics.sh n32,m32,ultralytics-n32,ultralytics-m32
want nocache && part nocache bash bench/gpu/no-cache-data-path.sh
want fourcore && FILES=20000 RUNS=recent WORKERS=3 part fourcore taskset -c 0-3 bash bench/gpu/no-cache-data-path.sh
want whole && EPOCHS=60 part whole bash bench/gpu/whole-run.sh
want first && REPEAT=1 part first bash bench/gpu/first-step.sh default,bench,profile
want autobatch && part autobatch bash bench/gpu/auto-batch.sh
want seg && EPOCHS=4 part seg bash bench/gpu/compare-ultralytics-seg.sh n32,m32,ultralytics-n32,ultralytics-m32,crowded

python3 bench/gpu/summary_table.py "$BASE" bench/gpu/ultralytics-reference.json
