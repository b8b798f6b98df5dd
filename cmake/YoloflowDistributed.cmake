# c10d backends for data-parallel training (core/src/dist): Gloo for CPU tensors, NCCL for
# CUDA tensors. Both classes live in LibTorch's libraries; what may be missing are headers:
# Debian's LibTorch 1.13 takes gloo's from libgloo-dev, a PyTorch wheel may not ship them,
# and NCCL's nccl.h comes with the CUDA toolkit or the nvidia-nccl wheel beside torch.
# A missing backend is compiled out; asking for it at run time is a clear error.
function(yoloflow_enable_distributed target dist_source)
  set(_defs "")
  set(_incs "")
  set(_libs "")
  find_path(YOLOFLOW_C10D_GLOO_HEADER torch/csrc/distributed/c10d/ProcessGroupGloo.hpp
            HINTS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  find_path(YOLOFLOW_GLOO_INCLUDE_DIR gloo/algorithm.h HINTS ${TORCH_INCLUDE_DIRS})
  if(YOLOFLOW_C10D_GLOO_HEADER AND YOLOFLOW_GLOO_INCLUDE_DIR)
    list(APPEND _defs USE_C10D_GLOO YOLOFLOW_HAVE_GLOO)
    list(APPEND _incs ${YOLOFLOW_GLOO_INCLUDE_DIR})
    # Debian links LibTorch against the shared libgloo; the wheel carries gloo inside libtorch_cpu.
    find_library(YOLOFLOW_GLOO_LIBRARY gloo)
    if(YOLOFLOW_GLOO_LIBRARY)
      list(APPEND _libs ${YOLOFLOW_GLOO_LIBRARY})
    endif()
    set(_gloo ON)
  else()
    set(_gloo OFF)
  endif()

  set(_nccl OFF)
  if(YOLOFLOW_WITH_CUDA)
    find_path(YOLOFLOW_C10D_NCCL_HEADER torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp
              HINTS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
    # Torch_DIR is <site-packages>/torch/share/cmake/Torch for a wheel.
    get_filename_component(_site "${Torch_DIR}/../../../.." ABSOLUTE)
    find_path(YOLOFLOW_NCCL_INCLUDE_DIR nccl.h
              HINTS $ENV{NCCL_INCLUDE_DIR} $ENV{NCCL_HOME}/include "${_site}/nvidia/nccl/include"
                    ${CUDAToolkit_INCLUDE_DIRS} ${CUDA_INCLUDE_DIRS} ${TORCH_INCLUDE_DIRS})
    if(YOLOFLOW_C10D_NCCL_HEADER AND YOLOFLOW_NCCL_INCLUDE_DIR)
      list(APPEND _defs USE_C10D_NCCL YOLOFLOW_HAVE_NCCL)
      list(APPEND _incs ${YOLOFLOW_NCCL_INCLUDE_DIR})
      find_library(YOLOFLOW_NCCL_LIBRARY NAMES nccl libnccl.so.2
                   HINTS $ENV{NCCL_HOME}/lib "${_site}/nvidia/nccl/lib" "${YOLOFLOW_NCCL_INCLUDE_DIR}/../lib")
      if(YOLOFLOW_NCCL_LIBRARY)
        list(APPEND _libs ${YOLOFLOW_NCCL_LIBRARY})
      endif()
      set(_nccl ON)
    endif()
  endif()
  message(STATUS "yoloflow: data-parallel backends: gloo ${_gloo}, nccl ${_nccl}")

  # Folders the compiler or LibTorch already searches stay out: a second -isystem /usr/include
  # breaks libstdc++'s #include_next.
  if(_incs)
    list(REMOVE_ITEM _incs ${TORCH_INCLUDE_DIRS} ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES} /usr/include)
  endif()
  # Only the file that includes the backend headers sees their macros; without the shared
  # precompiled header, whose macros would differ.
  set_source_files_properties(${dist_source} PROPERTIES
    COMPILE_DEFINITIONS "${_defs}" INCLUDE_DIRECTORIES "${_incs}" SKIP_PRECOMPILE_HEADERS ON)
  target_link_libraries(${target} PRIVATE ${_libs})
endfunction()
