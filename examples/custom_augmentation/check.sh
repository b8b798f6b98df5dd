#!/usr/bin/env bash
# The example's test: the installed CLI describes the plugin from its schema.
# Usage: check.sh YOLOFLOW_CLI PLUGIN_DIR COCO128_DIR WORK_DIR
set -euo pipefail
cli="$1"; plugins="$2"
ls "$plugins"/yoloflow_grayscale.so >/dev/null
out="$("$cli" --plugin-path "$plugins" describe grayscale)"
echo "$out"
echo "$out" | grep -q "grayscale (augmentation, plugin example_grayscale 1.0.0)"
echo "$out" | grep -q "p: float in \[0, 1\], default 0.01"
echo "custom_augmentation: OK"
