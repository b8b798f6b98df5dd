# Finds every dependency. Works with Debian 12's packages (LibTorch 1.13 CPU) and with the
# GPU machine (LibTorch 2.11 + CUDA from the Python wheel, OpenCV and oneTBB from the
# bundle in shared/device): see scripts/device-build.sh.
find_package(Torch REQUIRED)
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
# Videos in predict (read frame by frame, annotated video out) need OpenCV's videoio, which
# Debian's libopencv-dev has; an OpenCV without it (a minimal build) gives a yoloflow whose
# predict refuses video sources in one line.
if(TARGET opencv_videoio)
  set(YOLOFLOW_WITH_VIDEO ON)
  list(APPEND OpenCV_LIBS opencv_videoio)
else()
  set(YOLOFLOW_WITH_VIDEO OFF)
  message(STATUS "yoloflow: OpenCV without videoio: predict takes no video sources")
endif()
find_package(TBB REQUIRED)
find_package(Boost 1.70 REQUIRED CONFIG)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)

# `yoloflow export --format onnx` writes its graphs with libonnx (ONNX's protobuf classes,
# checker and shape inference): Debian's libonnx-dev, which needs libprotobuf-dev.
option(YOLOFLOW_WITH_ONNX "Build ONNX export (yoloflow export); needs libonnx-dev" ON)
if(YOLOFLOW_WITH_ONNX)
  find_package(Protobuf)
  find_package(ONNX CONFIG)
  if(NOT Protobuf_FOUND OR NOT TARGET onnx)
    message(FATAL_ERROR "yoloflow: ONNX export needs libonnx and protobuf, not found "
      "(Debian 12: apt-get install libonnx-dev libprotobuf-dev, as scripts/setup-debian.sh does). "
      "Configure with -DYOLOFLOW_WITH_ONNX=OFF to build without `yoloflow export`.")
  endif()
  message(STATUS "yoloflow: ONNX ${ONNX_VERSION} (protobuf ${Protobuf_VERSION}) for yoloflow export")
endif()

# An optional dependency: found quietly, option YOLOFLOW_WITH_<NAME> on when found; asked for but
# missing, configuration stops naming the Debian package and the way to build without it.
macro(yoloflow_optional_package package option doc debian without)
  find_package(${package} QUIET)
  option(${option} "${doc}" ${${package}_FOUND})
  if(${option} AND NOT ${package}_FOUND)
    message(FATAL_ERROR "yoloflow: ${option} needs ${package}, not found (Debian 12: apt-get install ${debian}). "
      "Configure with -D${option}=OFF to build ${without}.")
  endif()
endmacro()

# model=yolo11n.pt and data=coco8.yaml fetch Ultralytics' released files on first use
# (core/src/runtime/fetch) with libcurl. Without it yoloflow still builds, and says in one line
# where to put such a file by hand instead.
yoloflow_optional_package(CURL YOLOFLOW_WITH_CURL "Fetch released weights and datasets by name (needs libcurl)"
  libcurl4-openssl-dev "without fetching")
message(STATUS "yoloflow: fetching released weights and datasets: ${YOLOFLOW_WITH_CURL}")
# Fetched datasets are zip archives, unpacked with zlib (which LibTorch's packages pull in too).
# Without it a dataset's zip must be unpacked by hand.
yoloflow_optional_package(ZLIB YOLOFLOW_WITH_ZLIB "Unpack fetched dataset archives (needs zlib)" zlib1g-dev
  "without unpacking datasets")

# yaml-cpp's target is "yaml-cpp" in 0.7 and "yaml-cpp::yaml-cpp" in 0.8.
if(TARGET yaml-cpp::yaml-cpp)
  set(YOLOFLOW_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(YOLOFLOW_YAML_TARGET yaml-cpp)
endif()

# Torch exposes no CUDA flag target; this tells our sources whether CUDA code may build.
if(TORCH_CUDA_LIBRARIES OR TARGET torch_cuda OR CAFFE2_USE_CUDA)
  set(YOLOFLOW_WITH_CUDA ON)
else()
  set(YOLOFLOW_WITH_CUDA OFF)
endif()
message(STATUS "yoloflow: LibTorch ${Torch_VERSION}, CUDA code: ${YOLOFLOW_WITH_CUDA}")

# Our own CUDA kernels (the segmentation loss's mask term) need a CUDA compiler beside a CUDA
# LibTorch; without one, those plugins compute the same values with tensor operations.
option(YOLOFLOW_CUDA_KERNELS "Build yoloflow's CUDA kernels where LibTorch has CUDA and nvcc is found" ON)
set(YOLOFLOW_WITH_CUDA_KERNELS OFF)
if(YOLOFLOW_WITH_CUDA AND YOLOFLOW_CUDA_KERNELS)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)  # A100, H100 / H200 (and PTX for newer GPUs)
    endif()
    enable_language(CUDA)
    set(YOLOFLOW_WITH_CUDA_KERNELS ON)
  endif()
endif()
message(STATUS "yoloflow: CUDA kernels: ${YOLOFLOW_WITH_CUDA_KERNELS}")

# The torch include folder (for torch/version.h in the plugin descriptor).
set(YOLOFLOW_TORCH_INCLUDE_DIRS ${TORCH_INCLUDE_DIRS})
