#pragma once
// Symbol visibility. Plugins are built with hidden visibility so that two plugins never
// resolve each other's symbols; only the descriptor is exported from a plugin, and only
// the SDK library exports its functions.
#if defined(_WIN32)
#define YOLOFLOW_EXPORT __declspec(dllexport)
#define YOLOFLOW_IMPORT __declspec(dllimport)
#else
#define YOLOFLOW_EXPORT __attribute__((visibility("default")))
#define YOLOFLOW_IMPORT __attribute__((visibility("default")))
#endif

#if defined(YOLOFLOW_BUILDING_SDK)
#define YOLOFLOW_SDK_API YOLOFLOW_EXPORT
#else
#define YOLOFLOW_SDK_API YOLOFLOW_IMPORT
#endif
