#pragma once
// Versions of the yoloflow SDK.
//
// YOLOFLOW_SDK_ABI_VERSION changes whenever a plugin built against an older SDK could
// misbehave when loaded by a newer host: a virtual function added, removed or reordered
// in any interface, a member added to a struct that crosses the boundary, a changed
// descriptor layout. The host refuses plugins whose ABI version differs from its own.
// docs/plugin-guide.md lists the rules.
#define YOLOFLOW_SDK_ABI_VERSION 15
#define YOLOFLOW_VERSION_MAJOR 0
#define YOLOFLOW_VERSION_MINOR 1
#define YOLOFLOW_VERSION_PATCH 0
#define YOLOFLOW_VERSION_STRING "0.1.0"
