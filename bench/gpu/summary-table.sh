#!/usr/bin/env bash
# The whole speed and memory picture in one command, yoloflow beside Ultralytics: what a user
# gets from the shipped pipeline as it is (with and without a RAM cache), the speed options from
# a RAM cache and from JPEG files without one, and peak memory over runs that validate every epoch.
#
# Parts (a comma list; default all of them), each run by its own bench script with its results
# in $SUMMARY_DIR/PART (default $OUT/summary), so a part can run alone and the table still shows
# the others' last figures:
#   shipped   pipelines/train-coco128.json as it is, and with a RAM cache; Ultralytics' defaults in
#             the same invocation when `python3 -c "import ultralytics"` works
#             (shipped-vs-ultralytics.sh ultralytics,shipped,shipped-ram; EPOCHS 3)
#   speed     the speed options (max-throughput-coco128.json), RAM cache, YOLO11n b32
#             (compare-ultralytics.sh n32; EPOCHS 4)
#   memory    the speed options validating every epoch, YOLO11n and YOLO11m b32
#             (compare-ultralytics.sh n32,m32 with val_every=1; EPOCHS 2)
#   nocache   the speed options from 100,000 JPEG files without a RAM cache, the mosaic's other
#             images among the recent samples (default) and among all (no-cache-data-path.sh)
#   table     runs nothing: prints the table from what is in $SUMMARY_DIR
# Ultralytics' column: its run in the same invocation where there is one, else its figure from
# bench/gpu/ultralytics-reference.json (measured on the same machine and setup), marked "ref".
#
# On the GPU machine, from the repo root, after building /tmp/yoloflow-build (scripts/device-build.sh):
#   bash bench/gpu/summary-table.sh [PARTS]
# Takes about 15 minutes in all (the no-cache part makes 16 GB of files first).
set -uo pipefail
cd "$(dirname "$0")/../.."
PARTS="${1:-shipped,speed,memory,nocache}"
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
want speed && EPOCHS=4 part speed bash bench/gpu/compare-ultralytics.sh n32
want memory && EPOCHS=2 EXTRA="stages.train.params.val_every=1" part memory bash bench/gpu/compare-ultralytics.sh n32,m32
want nocache && part nocache bash bench/gpu/no-cache-data-path.sh

python3 bench/gpu/summary_table.py "$BASE" bench/gpu/ultralytics-reference.json
