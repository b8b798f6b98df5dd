#!/usr/bin/env bash
# ONNX export checked with ONNX Runtime on the GPU machine, and its speed against LibTorch.
# For YOLO11n (the parity fixture's weights, so Ultralytics' own output is checked too) and
# YOLO11s (weights randomised with a fixed seed: weights no test saw):
#   1. yoloflow_bench_onnx_reference writes the weights, inputs of three shapes and yoloflow's
#      LibTorch outputs for them (CPU, fp32), and times LibTorch's eager forward + decode on the
#      GPU at batch 1 and 32 (640, fp32, input on the GPU);
#   2. `yoloflow export` writes fixed-shape files for those shapes, one --dynamic file, one --half,
#      one --nms, and batch 1 and 32 files at 640 for timing;
#   3. bench/gpu/onnx_parity.py runs them with ONNX Runtime's CPU and CUDA providers: max |box| and
#      max |prob| against LibTorch (and Ultralytics for n), NMS against NMS done in Python, and
#      ORT CUDA latency per image (IO binding, fp32).
# Prints a table at the end; JSON lines in $OUT/onnx-parity.jsonl. About 3 minutes after the build.
#
# On the GPU machine, from the repo root (scripts/gpu-env.sh: the bundle made by
# scripts/gpu-bundle.sh carries libonnx and protobuf for the build), after building
# /tmp/yoloflow-build (scripts/device-build.sh, or cmake + ninja with -DYOLOFLOW_BUILD_TESTS=OFF):
#   bash bench/gpu/onnx-parity.sh            env: MODELS ("n s"), ITERS (50), WORK (/tmp/yoloflow-onnx)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
MODELS="${MODELS:-n s}"
ITERS="${ITERS:-50}"
CPU_ITERS="${CPU_ITERS:-5}"
PY="${YOLOFLOW_PYTHON:-python3}"
LOG="$OUT/onnx-parity.jsonl"
WORK="${WORK:-/tmp/yoloflow-onnx}"
: > "$LOG"

if [ "$YOLOFLOW_ONNX_CMAKE" != ON ]; then
  echo "onnx-parity: no libonnx for the build here; run scripts/gpu-bundle.sh on a Debian machine with libonnx-dev first"
  exit 1
fi
if ! "$PY" -c 'import torch, numpy, onnx, onnxruntime' 2>"$OUT/python-check.txt"; then
  echo "onnx-parity: this Python lacks a module the check needs (torch, numpy, onnx, onnxruntime):"
  cat "$OUT/python-check.txt"
  exit 1
fi
"$PY" -c 'import onnxruntime as o; p = o.get_available_providers(); print("onnxruntime", o.__version__, p);
import sys; sys.exit(0 if "CUDAExecutionProvider" in p else 3)' ||
  echo "onnx-parity: WARNING: onnxruntime has no CUDAExecutionProvider here: CPU parity only, no GPU latency"

if [ ! -x "$BIN/yoloflow_bench_onnx_reference" ] || ! "$BIN/yoloflow" export --help >/dev/null 2>&1; then
  echo "onnx-parity: building $BUILD"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
    -DYOLOFLOW_BUILD_TESTS=OFF -DYOLOFLOW_WITH_ONNX="$YOLOFLOW_ONNX_CMAKE" >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  ninja -C "$BUILD" -j "$(nproc)" yoloflow yoloflow_bench_onnx_reference all >"$OUT/build.log" 2>&1 ||
    { grep -E -B2 -A12 "error|FAILED" "$OUT/build.log" | head -80; exit 1; }
fi

FIXTURE="$YOLOFLOW_SHARED_DIR/fixtures/yolo11n-parity"
SHAPES="2x640x640 1x384x640 3x320x320"
for s in $MODELS; do
  D="$WORK/yolo11$s"  # exported files and arrays stay out of $OUT (hundreds of MB)
  mkdir -p "$D"
  W=()
  [ "$s" = n ] && [ -f "$FIXTURE/yolo11n.pt" ] && W=(--weights "$FIXTURE/yolo11n.pt")
  echo "== yolo11$s: reference outputs and LibTorch latency"
  "$BIN/yoloflow_bench_onnx_reference" --model "yolo11$s" --out "$D" "${W[@]}" --iters "$ITERS" \
    --shapes "${SHAPES// /,}" | tee -a "$LOG" || exit 1
  # LibTorch on the CPU, against ONNX Runtime's CPU provider (the same files again).
  "$BIN/yoloflow_bench_onnx_reference" --model "yolo11$s" --out "$D" "${W[@]}" --iters "$CPU_ITERS" \
    --shapes "${SHAPES// /,}" --device cpu | tee -a "$LOG" || exit 1
  ex() { "$BIN/yoloflow" export --weights "$D/weights.pt" --model "yolo11$s" --format onnx "$@" >>"$OUT/export.log" 2>&1 ||
    { echo "export failed: $*"; tail -5 "$OUT/export.log"; exit 1; }; }
  for t in $SHAPES; do
    IFS=x read -r b h w <<< "$t"
    ex --imgsz "$h" "$w" --batch "$b" --out "$D/fixed_$t.onnx"
  done
  ex --dynamic --out "$D/dynamic.onnx"
  ex --half --imgsz 640 --batch 2 --out "$D/half.onnx"
  ex --nms --imgsz 640 --batch 2 --out "$D/nms.onnx"
  ex --imgsz 640 --batch 1 --out "$D/latency_b1.onnx"
  ex --imgsz 640 --batch 32 --out "$D/latency_b32.onnx"
  FX=()
  if [ "$s" = n ] && [ -f "$FIXTURE/input.pt" ]; then
    ex --imgsz 320 --out "$D/fixture_320.onnx"
    FX=(--fixture "$FIXTURE")
  fi
  echo "== yolo11$s: ONNX Runtime"
  "$PY" bench/gpu/onnx_parity.py "$D" "yolo11$s" "${FX[@]}" --iters "$ITERS" | tee -a "$LOG" || exit 1
done

"$PY" - "$LOG" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("\nparity (max |box| px, max |prob|)")
print(f"{'model':8} {'file':18} {'provider':22} {'shape':10} {'box':>10} {'prob':>10}")
for r in rows:
    if r.get("kind", "").startswith("parity"):
        f = r.get("file", "vs Ultralytics")
        print(f"{r['model']:8} {f:18} {r['provider']:22} {r['shape']:10} {r['max_box']:10.2e} {r['max_prob']:10.2e}")
for r in rows:
    if r.get("kind") == "nms":
        print(f"nms {r['model']} {r['provider']}: {r['detections']} detections, {r['matched']} of them as "
              f"NMS in Python gives ({r['expected']})")
print("\nlatency per image at 640, fp32 (ms); LibTorch: eager forward + decode, input on the device")
lat = {}
for r in rows:
    if "ms_per_image" in r:
        rt = r["runtime"] + ("-" + r["device"].split(":")[0] if r["runtime"] == "libtorch-eager" else "")
        lat[(r["model"], rt, r["batch"])] = r["ms_per_image"]
print(f"{'model':8} {'batch':>5} {'device':>6} {'LibTorch eager':>15} {'ONNX Runtime':>13} {'LibTorch / ORT':>15}")
for dev in ("cuda", "cpu"):
    for (m, rt, b) in sorted(k for k in lat if k[1] == "libtorch-eager-" + dev):
        t = lat[(m, rt, b)]
        o = lat.get((m, "onnxruntime-" + dev, b))
        print(f"{m:8} {b:5} {dev:>6} {t:15.3f} {'-' if o is None else round(o, 3)!s:>13} "
              f"{'-' if o is None else f'{t / o:.2f}x':>15}")
EOF
