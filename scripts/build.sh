#!/usr/bin/env bash
# Configures and builds yoloflow into build/ (Release, Ninja, ccache when installed).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${YOLOFLOW_BUILD_DIR:-build}"
JOBS="${YOLOFLOW_JOBS:-$(nproc)}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" "$@" >/dev/null
ninja -C "$BUILD_DIR" -j "$JOBS"
