# Build settings shared by every target of this tree.

if(YOLOFLOW_USE_CCACHE)
  find_program(YOLOFLOW_CCACHE ccache)
  if(YOLOFLOW_CCACHE)
    # Precompiled headers need these sloppiness settings to be cacheable.
    set(CMAKE_CXX_COMPILER_LAUNCHER
        ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
        CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} ${YOLOFLOW_CCACHE})
  endif()
endif()

set(CMAKE_RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/bin")
set(CMAKE_LIBRARY_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/lib")
set(CMAKE_ARCHIVE_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/lib")
# Executables find our libraries next to them, in the build tree and once installed.
set(CMAKE_BUILD_RPATH_USE_ORIGIN ON)
set(CMAKE_INSTALL_RPATH "$ORIGIN/../lib")

if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wno-unused-parameter>")
endif()

# Torch-heavy targets share one precompiled header (core/src/pch/torch_pch.h).
function(yoloflow_torch_pch target)
  target_precompile_headers(${target} PRIVATE "${PROJECT_SOURCE_DIR}/core/src/pch/torch_pch.h")
endfunction()

# Sources of those targets that include nothing of LibTorch, even indirectly, but its version
# macros (torch/version.h, for the SDK's plugin descriptor): loading the ~570 MB precompiled
# header costs them 7-13 s each on the 2-core dev machine (one compile each, with and without the
# header: results_csv.cpp 9.4 s and 1.8 s, graph_runner.cpp 25.1 s and 12.6 s). A file wrongly listed still builds,
# only slower; scripts/torch-free-sources.py lists the current candidates.
function(yoloflow_skip_torch_pch)
  set_source_files_properties(${ARGN} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
endfunction()

# Some LibTorch distributions (the Python wheel's) ship protobuf and ONNX headers of their own in
# their include folder; a target that includes libonnx's headers next to LibTorch's must see the
# ones libonnx was built with first.
function(yoloflow_onnx_includes_first target)
  get_target_property(_onnx_includes onnx INTERFACE_INCLUDE_DIRECTORIES)
  foreach(_dir IN LISTS Protobuf_INCLUDE_DIRS _onnx_includes)
    if(_dir AND NOT _dir STREQUAL "/usr/include")
      target_include_directories(${target} BEFORE PRIVATE "${_dir}")
    endif()
  endforeach()
endfunction()
