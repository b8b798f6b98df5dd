# Sourced by the GPU scripts from the repository root: the build environment and the data.
# - YOLOFLOW_GPU_ENV: a script that points CMake and the loader at LibTorch with CUDA, OpenCV
#   and oneTBB; default gpu-bundle/env.sh when scripts/gpu-bundle.sh made one, else nothing
#   (the machine's own installation).
# - gpu-bundle/onnx (when gpu-bundle.sh found libonnx-dev): libonnx and protobuf for export;
#   YOLOFLOW_ONNX_CMAKE says whether to configure with it (-DYOLOFLOW_WITH_ONNX=...).
# - YOLOFLOW_SHARED_DIR: the folder with datasets/coco128 and fixtures/; default
#   gpu-bundle/shared when present, else ../shared.
if [ -n "${YOLOFLOW_GPU_ENV:-}" ]; then
  . "$YOLOFLOW_GPU_ENV"
elif [ -f gpu-bundle/env.sh ]; then
  . gpu-bundle/env.sh
fi
# libonnx + protobuf for `yoloflow export`, when the bundle carries them (gpu-bundle.sh).
if [ -d gpu-bundle/onnx ]; then
  export CMAKE_PREFIX_PATH="$PWD/gpu-bundle/onnx${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$PWD/gpu-bundle/onnx/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  YOLOFLOW_ONNX_CMAKE=ON
else
  YOLOFLOW_ONNX_CMAKE=OFF  # no libonnx on the GPU machine itself: build without yoloflow export
fi
if [ -z "${YOLOFLOW_SHARED_DIR:-}" ]; then
  if [ -d gpu-bundle/shared ]; then YOLOFLOW_SHARED_DIR="$PWD/gpu-bundle/shared"; else YOLOFLOW_SHARED_DIR="$(cd .. && pwd)/shared"; fi
fi
export YOLOFLOW_SHARED_DIR
COCO="$YOLOFLOW_SHARED_DIR/datasets/coco128"
