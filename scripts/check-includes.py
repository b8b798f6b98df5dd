#!/usr/bin/env python3
"""Checks that core/src's includes point down only: the rooms below are in order, and a file may
include its own room or rooms listed before it (the SDK is below all of them). The runtime library
comes first and never includes the training library; the CLI is on top.

Usage: scripts/check-includes.py [REPO]   (prints every include that points up; exit 1 if any)
"""
import os
import re
import sys

# Lowest first. A room is a folder under core/src.
ROOMS = [
    "log",
    "runtime/util",
    "runtime/fetch",
    "runtime/dist",
    "runtime/plugin",
    "runtime/pipeline",
    "runtime/words",  # Ultralytics' arguments and the command line's words as pipeline overrides
    "runtime/graph",
    "runtime/run",
    "runtime/sweep",
    "training/device",
    "training/compose",
    "training/components",
    "training/model",
    "training/detect",
    "training/parallel",
    "training/checkpoint",
    "training/eval",
    "training/step",  # one training step and the parts it is made of (the trainer and auto batch share it)
    "training/autobatch",
    "training/callbacks",  # the callbacks host and the built-in ones (ema)
    "training/trainer",
    "training/predict",
    "training/export",
    "training",  # builtin_components: registers the components built into the host
    "pch",
    "cli",
]

repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
src = os.path.join(repo, "core", "src")
rank = {room: i for i, room in enumerate(ROOMS)}


def room_of(rel):
    parts = rel.split("/")
    for n in (2, 1):
        if len(parts) > n and "/".join(parts[:n]) in rank:
            return "/".join(parts[:n])
    return None


problems = []
unplaced = []
for d, _, files in os.walk(src):
    for f in files:
        if not f.endswith((".h", ".cpp", ".in")):
            continue
        path = os.path.join(d, f)
        rel = os.path.relpath(path, src)
        here = room_of(rel)
        if here is None:
            unplaced.append(rel)
            continue
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            m = re.match(r'\s*#include "([^"]+)"', line)
            if not m or m.group(1).startswith("yoloflow/"):
                continue
            target = room_of(m.group(1))
            if target is None:
                continue  # generated headers, the build's own
            if rank[target] > rank[here]:
                problems.append(f"core/src/{rel}:{n}: includes {m.group(1)} ({target} is above {here})")
for rel in unplaced:
    problems.append(f"core/src/{rel}: in no room of scripts/check-includes.py")
for p in problems:
    print(p)
print(f"includes: {len(problems)} pointing up" if problems else "includes: every one points down")
sys.exit(1 if problems else 0)
