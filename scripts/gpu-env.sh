# Sourced by the GPU scripts from the repository root: the build environment and the data.
# - YOLOFLOW_GPU_ENV: a script that points CMake and the loader at LibTorch with CUDA, OpenCV
#   and oneTBB; default gpu-bundle/env.sh when scripts/gpu-bundle.sh made one, else nothing
#   (the machine's own installation).
# - YOLOFLOW_SHARED_DIR: the folder with datasets/coco128 and fixtures/; default
#   gpu-bundle/shared when present, else ../shared.
if [ -n "${YOLOFLOW_GPU_ENV:-}" ]; then
  . "$YOLOFLOW_GPU_ENV"
elif [ -f gpu-bundle/env.sh ]; then
  . gpu-bundle/env.sh
fi
if [ -z "${YOLOFLOW_SHARED_DIR:-}" ]; then
  if [ -d gpu-bundle/shared ]; then YOLOFLOW_SHARED_DIR="$PWD/gpu-bundle/shared"; else YOLOFLOW_SHARED_DIR="$(cd .. && pwd)/shared"; fi
fi
export YOLOFLOW_SHARED_DIR
COCO="$YOLOFLOW_SHARED_DIR/datasets/coco128"
