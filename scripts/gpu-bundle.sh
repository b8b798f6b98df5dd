#!/usr/bin/env bash
# Gathers, inside the checkout, what a GPU machine without network access needs beside the
# sources: a dependency bundle with its env.sh (OpenCV, oneTBB and the exports that point CMake
# at them and at LibTorch with CUDA), coco128 and the test fixtures the GPU runs use (listed
# below), all in gpu-bundle/ (git-ignored). The GPU scripts find it there (scripts/gpu-env.sh).
# Usage: YOLOFLOW_DEPS=DIR scripts/gpu-bundle.sh   (DIR holds env.sh and its archive;
#        default ../shared/device). Data from $YOLOFLOW_SHARED_DIR (default ../shared).
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${YOLOFLOW_SHARED_DIR:-../shared}"
DEPS="${YOLOFLOW_DEPS:-$SHARED/device}"
mkdir -p gpu-bundle/shared/datasets gpu-bundle/shared/fixtures
cp -r "$DEPS"/* gpu-bundle/
cp -r "$SHARED"/datasets/coco128 gpu-bundle/shared/datasets/
# The fixtures the GPU runs use, by name: yolo11n-parity (the model and ONNX parity tests,
# bench/gpu/onnx-parity.sh). The others are CPU-only and stay behind (coco128-val-parity, 12 MB;
# ultralytics-checkpoints, 13 MB), and so does any fixture added later until it is listed here;
# scripts/device-build.sh leaves their tests out.
GPU_FIXTURES="yolo11n-parity"
for f in $GPU_FIXTURES; do
  cp -r "$SHARED/fixtures/$f" gpu-bundle/shared/fixtures/
done
# libonnx and protobuf from this Debian machine (libonnx-dev, libprotobuf-dev) for `yoloflow export`:
# the GPU machine has neither. Same layout as /usr, so ONNX's CMake package finds its libraries;
# packed as gpu-bundle/onnx.tar.xz (11 MB unpacked, 2 MB packed), unpacked by scripts/gpu-env.sh.
ARCH_LIB=lib/x86_64-linux-gnu
rm -rf gpu-bundle/onnx gpu-bundle/onnx.tar.xz
if [ -f /usr/$ARCH_LIB/cmake/ONNX/ONNXConfig.cmake ]; then
  STAGE=$(mktemp -d)
  mkdir -p "$STAGE"/onnx/include/google "$STAGE"/onnx/$ARCH_LIB/cmake "$STAGE"/onnx/lib
  cp -r /usr/include/onnx "$STAGE"/onnx/include/
  cp -r /usr/include/google/protobuf "$STAGE"/onnx/include/google/
  cp -a /usr/$ARCH_LIB/libonnx.so* /usr/$ARCH_LIB/libonnx_proto.so* /usr/$ARCH_LIB/libprotobuf.so* \
    /usr/$ARCH_LIB/libonnxifi_dummy.so /usr/$ARCH_LIB/libonnxifi_loader.a "$STAGE"/onnx/$ARCH_LIB/
  cp -a /usr/lib/libonnxifi.so "$STAGE"/onnx/lib/  # ONNX's CMake package checks that its files exist
  cp -r /usr/$ARCH_LIB/cmake/ONNX "$STAGE"/onnx/$ARCH_LIB/cmake/
  tar -C "$STAGE" -cJf gpu-bundle/onnx.tar.xz onnx
  rm -rf "$STAGE"
else
  echo "gpu-bundle: libonnx-dev is not installed here: the GPU build will have no yoloflow export"
fi
chmod -R u+w gpu-bundle
du -sh gpu-bundle
