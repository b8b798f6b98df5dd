#!/usr/bin/env bash
# What a third party does: install the SDK to a prefix, build examples/custom_augmentation
# out of tree against it, and check the installed CLI loads the plugin.
# Usage: scripts/test-sdk-example.sh BUILD_DIR
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$src/build}" && pwd)"
work="$(mktemp -d /tmp/yoloflow-sdk-example.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/examples/custom_augmentation" -B "$work/example" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/example" >/dev/null
ls "$work/example"/yoloflow_grayscale.so >/dev/null
out="$("$work/prefix/bin/yoloflow" --plugin-path "$work/example" describe grayscale)"
echo "$out"
echo "$out" | grep -q "grayscale (augmentation, plugin example_grayscale 1.0.0)"
echo "$out" | grep -q "p: float in \[0, 1\], default 0.01"
# The installed CLI finds the installed built-in plugins too.
"$work/prefix/bin/yoloflow" plugins | grep -q "lib/yoloflow/plugins" || {
  echo "installed CLI did not load installed plugins"; exit 1; }
echo "sdk example: OK"
