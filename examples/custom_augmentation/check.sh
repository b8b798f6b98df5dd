#!/usr/bin/env bash
# The example's tests: the installed CLI describes the plugin from its schema, and the plugin's
# own test (grayscale_test, with yoloflow/testing.h) passes on coco128 images.
# Usage: check.sh YOLOFLOW_CLI PLUGIN_DIR COCO128_DIR WORK_DIR
set -euo pipefail
cli="$1"; plugins="$2"; coco="$3"
ls "$plugins"/yoloflow_grayscale.so >/dev/null
out="$("$cli" --plugin-path "$plugins" describe grayscale)"
echo "$out"
echo "$out" | grep -q "grayscale (augmentation, plugin example_grayscale 1.0.0)"
echo "$out" | grep -q "p: float in \[0, 1\], default 0.01"
"$plugins"/grayscale_test "$plugins"/yoloflow_grayscale.so $(ls "$coco"/images/train2017/*.jpg | head -4)
echo "custom_augmentation: OK"
