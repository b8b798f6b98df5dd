#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (apt), builds yoloflow and runs the default pipeline.
# Usage: ./run.sh [PIPELINE.json] [overrides...]
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup-debian.sh
./scripts/build.sh
pipeline="${1:-pipelines/inspect-coco128.json}"
[ "$#" -gt 0 ] && shift
exec ./build/bin/yoloflow run "$pipeline" "$@"
