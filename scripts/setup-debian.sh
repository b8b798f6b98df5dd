#!/usr/bin/env bash
# Installs what yoloflow needs on Debian 12 (only the packages that are missing).
# Used by run.sh, test.sh and CI; safe to run again.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev                 # LibTorch 1.13 (CPU)
  libopenblas0-openmp          # the BLAS LibTorch calls: the reference libblas3 trains small CPU batches 4x slower
  libopencv-dev                # OpenCV 4.6 (core, imgproc, imgcodecs, videoio: predict reads and writes videos; dnn runs exported ONNX files in tests)
  libopencv-dnn-dev            # (part of libopencv-dev; named because the export tests need it)
  libonnx-dev libprotobuf-dev  # ONNX 1.12 protobuf classes, checker, shape inference: yoloflow export
  libtbb-dev                   # oneTBB 2021.8 (flow graph)
  libboost-dev                 # Boost.DLL (header-only with std::filesystem)
  libgloo-dev                  # gloo headers for c10d's ProcessGroupGloo (data-parallel on CPU)
  nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev libcli11-dev doctest-dev
  libcurl4-openssl-dev         # model=yolo11n.pt, data=coco8.yaml: released files fetched on first use
  zlib1g-dev                   # unpacking fetched datasets (zip)
  python3-torch                # tests check that Python's torch.load reads our exports
  python3-onnx                 # tests read exported ONNX files' metadata as Python tools do
  pybind11-dev python3-dev     # the Python module (from yoloflow import YOLO), for Debian's python3
  python3-pytest python3-numpy # its tests
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
