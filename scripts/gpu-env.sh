# Sourced by the GPU scripts from the repository root: the build environment and the data.
# - YOLOFLOW_GPU_ENV: a script that points CMake and the loader at LibTorch with CUDA, OpenCV
#   and oneTBB; default gpu-bundle/env.sh when scripts/gpu-bundle.sh made one, else nothing
#   (the machine's own installation).
# - gpu-bundle/onnx.tar.xz (when gpu-bundle.sh found libonnx-dev): libonnx and protobuf for
#   export, unpacked once into /tmp/yoloflow-deps;
#   YOLOFLOW_ONNX_CMAKE says whether to configure with it (-DYOLOFLOW_WITH_ONNX=...).
# - YOLOFLOW_SHARED_DIR: the folder with datasets/coco128 and fixtures/; default
#   gpu-bundle/shared when present, else ../shared.
if [ -n "${YOLOFLOW_GPU_ENV:-}" ]; then
  . "$YOLOFLOW_GPU_ENV"
elif [ -f gpu-bundle/env.sh ]; then
  . gpu-bundle/env.sh
fi
# libonnx + protobuf for `yoloflow export`, when the bundle carries them (gpu-bundle.sh).
if [ -f gpu-bundle/onnx.tar.xz ]; then
  [ -d /tmp/yoloflow-deps/onnx ] || { mkdir -p /tmp/yoloflow-deps && tar -C /tmp/yoloflow-deps -xJf gpu-bundle/onnx.tar.xz; }
  export CMAKE_PREFIX_PATH="/tmp/yoloflow-deps/onnx${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="/tmp/yoloflow-deps/onnx/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  YOLOFLOW_ONNX_CMAKE=ON
else
  YOLOFLOW_ONNX_CMAKE=OFF  # no libonnx on the GPU machine itself: build without yoloflow export
fi
if [ -z "${YOLOFLOW_SHARED_DIR:-}" ]; then
  if [ -d gpu-bundle/shared ]; then YOLOFLOW_SHARED_DIR="$PWD/gpu-bundle/shared"; else YOLOFLOW_SHARED_DIR="$(cd .. && pwd)/shared"; fi
fi
export YOLOFLOW_SHARED_DIR
COCO="$YOLOFLOW_SHARED_DIR/datasets/coco128"
