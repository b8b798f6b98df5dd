#!/usr/bin/env bash
# Copies what the GPU machine needs and cannot reach into .device/ (git-ignored): the
# dependency bundle from ../shared/device, coco128 and the fixtures the GPU runs use. The device tool must
# carry ".device". About 60 MiB of the 64 MiB a call may carry.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${YOLOFLOW_SHARED_DIR:-../shared}"
mkdir -p .device/shared/datasets .device/shared/fixtures
cp -r "$SHARED"/device/* .device/
cp -r "$SHARED"/datasets/coco128 .device/shared/datasets/
# Every fixture but the validation-parity one (12 MB; its tests run on the CPU).
for f in "$SHARED"/fixtures/*; do
  [ "$(basename "$f")" = coco128-val-parity ] || cp -r "$f" .device/shared/fixtures/
done
chmod -R u+w .device
du -sh .device
