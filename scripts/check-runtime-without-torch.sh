#!/usr/bin/env bash
# Checks that the host runtime library (core: plugin loading, pipelines, the flow graph,
# sweeps) stays free of LibTorch, as core/CMakeLists.txt declares it:
#   - libyoloflow_runtime.so needs no LibTorch library (its dynamic section's NEEDED entries);
#   - none of its objects was compiled with a torch, ATen or c10 header (the compiler's
#     dependency records, as Ninja keeps them).
# Usage: scripts/check-runtime-without-torch.sh BUILD_DIR   (a built Ninja build folder)
set -uo pipefail
build="${1:?usage: $0 BUILD_DIR}"
lib="$build/lib/libyoloflow_runtime.so"
status=0
if [ ! -f "$lib" ]; then
  echo "runtime: $lib not found (build first)"
  exit 1
fi
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
torch_libs=$(grep -E "torch|c10" <<< "$needed" || true)
if [ -n "$torch_libs" ]; then
  echo "runtime: $lib links LibTorch: $torch_libs"
  status=1
else
  echo "runtime: links $(wc -l <<< "$needed") libraries, none of LibTorch's"
fi
if [ -f "$build/build.ninja" ]; then
  deps=$(ninja -C "$build" -t deps 2>/dev/null | awk '
    /^[^ ].*yoloflow_runtime\.dir\/.*\.o: / { obj = $1; objects++ ; next }
    /^[^ ]/ { obj = "" ; next }
    obj != "" && /\/(torch|ATen|c10)\// { print obj " " $1 }
    END { print "objects " objects }')
  objects=$(sed -n 's/^objects //p' <<< "$deps")
  offenders=$(grep -v "^objects " <<< "$deps" || true)
  if [ "${objects:-0}" -eq 0 ]; then
    echo "runtime: no dependency records for its objects in $build (not built with Ninja?)"
    status=1
  elif [ -n "$offenders" ]; then
    echo "runtime: objects compiled with LibTorch headers (object, header):"
    sed 's/^/  /' <<< "$offenders" | head -20
    status=1
  else
    echo "runtime: $objects objects, none includes a torch, ATen or c10 header"
  fi
else
  echo "runtime: $build is not a Ninja build; the header check needs Ninja's dependency records"
  status=1
fi
exit $status
