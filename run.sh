#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (apt), builds yoloflow and trains YOLO11n on coco128:
# the full recipe on the GPU when there is one (pipelines/train-coco128.json), otherwise a
# CPU-sized run that finishes in minutes (pipelines/train-coco128-cpu.json).
# Usage: ./run.sh [PIPELINE.json] [overrides...]   (outputs: runs/<pipeline name>/<N>/)
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup-debian.sh
./scripts/build.sh
if [ "$#" -gt 0 ]; then
  pipeline="$1"
  shift
elif command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then
  pipeline=pipelines/train-coco128.json
else
  pipeline=pipelines/train-coco128-cpu.json
fi
exec ./build/bin/yoloflow train "$pipeline" "$@"
