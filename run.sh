#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (apt), builds yoloflow and trains YOLO11n on coco128:
# the full recipe on the GPU when there is one and a CUDA LibTorch to build with
# (pipelines/train-coco128.json), otherwise a CPU-sized run that finishes in minutes
# (pipelines/train-coco128-cpu.json).
#
# Usage: ./run.sh [PIPELINE.json] [overrides...]   (outputs: runs/<pipeline name>/<N>/)
# The shipped detection pipelines start from Ultralytics' pretrained yolo11n.pt when it is here or
# can be fetched (else from scratch, said so); afterwards 4 validation images are predicted.
# Which LibTorch it builds against, first found:
#   YOLOFLOW_LIBTORCH=DIR   a LibTorch folder you name (unpacked from pytorch.org, or any folder
#                           with share/cmake/Torch), e.g. a CUDA build
#   python3's PyTorch       when this machine has an NVIDIA GPU and `python3 -c "import torch"`
#                           is a CUDA build (pip install torch)
#   Debian's libtorch-dev   LibTorch 1.13, CPU only
# A CUDA LibTorch gets its own build folder (build-cuda/), so the two never mix.
# YOLOFLOW_NO_SETUP=1 skips the apt step (a machine whose packages come from elsewhere).
set -euo pipefail
cd "$(dirname "$0")"
[ "${YOLOFLOW_NO_SETUP:-0}" = 1 ] || ./scripts/setup-debian.sh

gpu=false
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then gpu=true; fi

# The LibTorch to build against: its CMake prefix ("" = Debian's) and what to call it.
torch_prefix="" torch_cuda=false
if [ -n "${YOLOFLOW_LIBTORCH:-}" ]; then
  [ -d "$YOLOFLOW_LIBTORCH" ] || { echo "run.sh: YOLOFLOW_LIBTORCH=$YOLOFLOW_LIBTORCH is not a folder" >&2; exit 2; }
  torch_prefix="$YOLOFLOW_LIBTORCH"
  # A CUDA build of LibTorch ships libtorch_cuda (in lib/ of a pytorch.org folder, or beside
  # share/cmake in a Python wheel's torch folder).
  if [ -n "$(find "$torch_prefix" "$torch_prefix/../.." -maxdepth 2 -name 'libtorch_cuda.so' -print -quit 2>/dev/null)" ]; then
    torch_cuda=true
  fi
  torch_what="the LibTorch in $torch_prefix ($([ "$torch_cuda" = true ] && echo "with CUDA" || echo "CPU only"))"
elif [ "$gpu" = true ] && command -v python3 > /dev/null 2>&1 &&
     torch_info="$(python3 -c 'import torch; print(torch.__version__, torch.version.cuda or "", torch.utils.cmake_prefix_path)' 2>/dev/null)"; then
  read -r torch_version torch_cuda_version torch_cmake <<< "$torch_info"
  if [ -n "$torch_cuda_version" ] && [ -n "$torch_cmake" ]; then
    torch_prefix="$torch_cmake"
    torch_cuda=true
    torch_what="python3's PyTorch $torch_version (LibTorch with CUDA $torch_cuda_version)"
  fi
fi
if [ -z "$torch_prefix" ]; then
  torch_what="Debian's LibTorch 1.13 (CPU only)"
fi

if [ "$torch_cuda" = true ]; then
  echo "run.sh: building against $torch_what"
  export YOLOFLOW_BUILD_DIR=build-cuda
  # What training needs only: the tests build and run from ./test.sh, in build/.
  ./scripts/build.sh -DCMAKE_PREFIX_PATH="$torch_prefix" -DYOLOFLOW_BUILD_TESTS=OFF
elif [ "$gpu" = true ]; then
  echo "run.sh: this machine has an NVIDIA GPU, but the LibTorch to build with is $torch_what, so training" \
       "runs on the CPU with the CPU-sized pipeline; for the GPU install PyTorch with CUDA for python3" \
       "(pip install torch) or set YOLOFLOW_LIBTORCH to a CUDA LibTorch folder (pytorch.org), then run ./run.sh again"
  export YOLOFLOW_BUILD_DIR=build
  ./scripts/build.sh ${torch_prefix:+-DCMAKE_PREFIX_PATH="$torch_prefix"}
else
  echo "run.sh: no NVIDIA GPU here: building against $torch_what, training the CPU-sized pipeline"
  export YOLOFLOW_BUILD_DIR=build
  ./scripts/build.sh ${torch_prefix:+-DCMAKE_PREFIX_PATH="$torch_prefix"}
fi

# The pipeline: the first argument when it is a pipeline file, else the one for what was built.
if [ "$#" -gt 0 ] && [[ "$1" == *.json ]]; then
  pipeline="$1"
  shift
elif [ "$torch_cuda" = true ]; then
  pipeline=pipelines/train-coco128.json
else
  pipeline=pipelines/train-coco128-cpu.json
fi
yoloflow="./$YOLOFLOW_BUILD_DIR/bin/yoloflow"

# The start of the shipped detection pipelines: Ultralytics' COCO-pretrained yolo11n.pt,
# fine-tuned (a first result that detects things) at the pipeline's own image size, when it is
# here or can be fetched; otherwise YOLO11n from scratch, said so. A model= word of yours is kept.
words=("$@")
case "$pipeline" in
  pipelines/train-coco128.json | pipelines/train-coco128-cpu.json)
    if ! printf '%s\n' "$@" | grep -q '^model='; then
      if "$yoloflow" info --weights yolo11n.pt > /dev/null; then
        imgsz=$(sed -n 's/^  "imgsz": \([0-9]*\),*$/\1/p' "$pipeline" | head -1)
        echo "run.sh: fine-tuning Ultralytics' COCO-pretrained yolo11n.pt"
        words=(model=yolo11n.pt ${imgsz:+imgsz=$imgsz} "$@")
      else
        echo "run.sh: without yolo11n.pt (not fetched: the line above says why), training YOLO11n from scratch," \
             "whose first epochs detect little"
      fi
    fi
    ;;
esac

marker=$(mktemp)
"$yoloflow" train "$pipeline" "${words[@]}"
# The run just made (the newest run folder with weights written after the start), and its
# predictions on a few validation images.
newest=""
while IFS= read -r best; do
  if [ -z "$newest" ] || [ "$best" -nt "$newest" ]; then newest="$best"; fi
done < <(find runs -mindepth 4 -maxdepth 4 -path '*/weights/best.pt' -newer "$marker" 2> /dev/null)
run=""
[ -z "$newest" ] || run=$(dirname "$(dirname "$newest")")
rm -f "$marker"
[ -n "$run" ] || exit 0
val=../shared/datasets/coco128/images/val2017
if [ -d "$val" ]; then
  sources=("$val"/*.jpg)
  printf '%s\n' "${sources[@]:0:4}" > "$run/predict-sources.txt"
  "$yoloflow" predict --weights "$run/weights/best.pt" --source "$run/predict-sources.txt" --out "$run/predict" &&
    echo "run.sh: annotated images of 4 validation images in $run/predict/"
fi
