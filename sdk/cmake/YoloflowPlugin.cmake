# yoloflow_add_plugin(<name> SOURCES <files...> [TORCH] [LINK <targets...>] [OUTPUT_DIRECTORY <dir>])
#
# Builds a plugin library the host can load: a MODULE library named yoloflow_<name>.so,
# hidden symbol visibility (only the descriptor is exported, so plugins never resolve each
# other's symbols), the same C++ standard and ABI flags as LibTorch, linked to the SDK.
# TORCH links LibTorch (Model, Optimizer and Precision plugins, or any plugin using tensors).
function(yoloflow_add_plugin name)
  cmake_parse_arguments(ARG "TORCH" "OUTPUT_DIRECTORY" "SOURCES;LINK" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "yoloflow_add_plugin(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  if(TARGET yoloflow::sdk)
    target_link_libraries(${name} PRIVATE yoloflow::sdk)
  else()
    target_link_libraries(${name} PRIVATE yoloflow_sdk yoloflow_sdk_torch)
  endif()
  if(ARG_TORCH)
    target_link_libraries(${name} PRIVATE torch)
  elseif(TORCH_CXX_FLAGS)
    # Same libstdc++ ABI as LibTorch even without linking it: the host checks it.
    separate_arguments(_yf_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
    target_compile_options(${name} PRIVATE ${_yf_torch_flags})
  endif()
  if(ARG_LINK)
    target_link_libraries(${name} PRIVATE ${ARG_LINK})
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "" OUTPUT_NAME "yoloflow_${name}"
    CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  if(YOLOFLOW_IN_TREE AND NOT ARG_OUTPUT_DIRECTORY)
    # Built-in plugins install next to the CLI: <prefix>/lib/yoloflow/plugins.
    install(TARGETS ${name} LIBRARY DESTINATION lib/yoloflow/plugins)
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED YOLOFLOW_PLUGIN_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${YOLOFLOW_PLUGIN_OUTPUT_DIR}")
  endif()
endfunction()
