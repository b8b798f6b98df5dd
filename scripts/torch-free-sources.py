#!/usr/bin/env python3
"""Lists the sources that get LibTorch's precompiled header but include nothing of LibTorch.

Usage: scripts/torch-free-sources.py [BUILD_DIR]   (default: build; needs compile_commands.json)

Each is preprocessed without the precompiled header (g++ -M); those whose dependencies hold no
c10/ or ATen/ header (torch/version.h alone is a few macros) belong in a yoloflow_skip_torch_pch() list (cmake/YoloflowBuild.cmake
says why). Run it after adding sources; a wrongly listed file still builds, only slower.
"""
import json
import os
import shlex
import subprocess
import sys

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for entry in json.load(open(os.path.join(build, "compile_commands.json"))):
    source, command = entry["file"], entry["command"]
    if not source.endswith(".cpp") or "cmake_pch" not in command:
        continue  # only what gets the precompiled header today
    args = shlex.split(command)
    args = args[next(i for i, a in enumerate(args) if a.endswith(("c++", "g++", "clang++"))):]
    keep, skip = [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
        elif a == "-include" and "cmake_pch" in args[i + 1] or a in ("-o", "-MF", "-MT"):
            skip = True
        elif a not in ("-c", "-MD", "-Winvalid-pch", source):
            keep.append(a)
    deps = subprocess.run(keep + ["-M", source], capture_output=True, text=True, cwd=entry["directory"])
    # torch/version.h alone (the SDK descriptor's version macros) is a few lines, not LibTorch.
    if deps.returncode == 0 and "c10/" not in deps.stdout and "ATen/" not in deps.stdout:
        print(os.path.relpath(source, root))
