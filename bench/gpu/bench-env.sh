# Sourced first by the GPU benchmarks (from the repository root): where results go ($OUT, made
# here; default /tmp/yoloflow-out), the build environment and data (scripts/gpu-env.sh: $COCO,
# $YOLOFLOW_SHARED_DIR) and the Release build's binaries ($BUILD, default /tmp/yoloflow-build;
# $BIN its bin folder).
OUT="${OUT:-/tmp/yoloflow-out}"
mkdir -p "$OUT"
. scripts/gpu-env.sh
BUILD="${BUILD:-/tmp/yoloflow-build}"
BIN="$BUILD/bin"
