#!/usr/bin/env bash
# yoloflow against Ultralytics 8.4.56 on one GPU machine in one command: Ultralytics' figures
# (bench/gpu/ultralytics-reference.json) were measured on the same H200 machine, on the same setup
# (coco128's train images listed 20 times per epoch = 2,560 images, imgsz 640, AMP, RAM cache,
# from scratch).
# Prints, per configuration: steady img/s (results.csv, epochs after the first), mean GPU
# utilisation over the steady epochs (the gpu monitor's NVML readings in gpu.csv; the second to
# the one before last: the last one also validates), peak memory
# reserved by the CUDA caching allocator, each against Ultralytics' figure and the target;
# then the training step alone (yoloflow_bench_train_step: eager, graph, activation
# checkpointing) and mAP after equal epochs with and without the speed options.
#
# On the GPU machine, from the repo root (scripts/gpu-env.sh), after building
# /tmp/yoloflow-build (scripts/device-build.sh, or cmake + ninja with -DYOLOFLOW_BUILD_TESTS=OFF):
#   bash bench/gpu/compare-ultralytics.sh [PARTS]        PARTS: comma list of
#     step, n32, n128, m32, map, ultralytics-n32, ultralytics-m32 (default: all). The
#     ultralytics-* parts train Ultralytics on the same setup in this invocation (batch 32, RAM
#     cache, 8 workers, AMP; bench/gpu/ultralytics_train.py measures it as the yoloflow runs are
#     measured), where python3 can import it; their figures then replace the reference ones.
#     ULTRA_VAL=True makes them validate every epoch (else only after the last). Env: EPOCHS (4), MAP_EPOCHS (20), WORKERS (12),
#     MAP_SEEDS ("0 1": each seed trains both configurations, so that the seed-to-seed spread
#     says what "within noise" means for the mAP comparison), MAP_CONFIGS ("fast plain"), EXTRA
#     (overrides added to every training run, e.g. "max_in_flight=88").
# Each part prints as it finishes and appends a JSON line to $OUT/compare.jsonl.
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/gpu/bench-env.sh
PARTS="${1:-step,n32,n128,m32,map,ultralytics-n32,ultralytics-m32}"
ROOT="$PWD"
EPOCHS="${EPOCHS:-4}"
MAP_EPOCHS="${MAP_EPOCHS:-20}"
WORKERS="${WORKERS:-12}"   # of 16 cores: the rest launch GPU work, collate and copy
MAP_SEEDS="${MAP_SEEDS:-0 1}"
MAP_CONFIGS="${MAP_CONFIGS:-fast plain}"
read -r -a EXTRA_OVERRIDES <<< "${EXTRA:-}"
SHARED="$YOLOFLOW_SHARED_DIR"
. bench/gpu/coco128x20.sh
want() { [[ ",$PARTS," == *",$1,"* ]]; }

# The speed options: mosaic_perspective chain, CUDA graph, cuDNN benchmark, TF32, channels_last,
# RAM cache, AMP fp16 (as Ultralytics' AMP). Validation only after the last epoch, so that the
# GPU utilisation of the other epochs is the training's (gpu_util_with_val includes it).
# Both keep their close_mosaic schedule (mosaic off for the last 10 epochs; runs of 10 epochs or
# fewer keep it on throughout).
FAST=(pipelines/max-throughput-coco128.json stages.train.params.precision.plugin=amp_fp16 stages.train.params.cuda_graph=true stages.train.params.val_every=0)
# No speed options: the default chain, eager, no cuDNN benchmark, default layout; AMP fp16 as the
# setup says (train-coco128.json itself trains in fp32).
PLAIN=(pipelines/train-coco128.json stages.train.params.precision.plugin=amp_fp16 stages.train.params.cudnn_benchmark=false
       stages.train.params.val_every=0)

# run NAME EPOCHS DATA_YAML PIPELINE OVERRIDES... -> one JSON line and a printed summary
run() {
  local name="$1" epochs="$2" data="$3"; shift 3
  local dir="$OUT/run-$name" start
  rm -rf "$dir"
  start=$(date +%s)
  timeout 300 "$BIN/yoloflow" train "$@" --run-dir "$dir" epochs="$epochs" workers="$WORKERS" \
    data="$data" stages.source.params.cache=ram stages.source.params.cache_fill=eager \
    stages.train.params.log_every=40 'monitors=[{"plugin":"gpu"}]' \
    "${EXTRA_OVERRIDES[@]}" > "$dir.log" 2>&1
  local rc=$?
  python3 bench/gpu/run_summary.py "$dir" "$name" "$rc" "$(( $(date +%s) - start ))" | tee -a "$OUT/compare.jsonl"
  grep -E "cuda_graph: (captured|capture failed)|error" "$dir.log" | grep -v data.issues | head -3
  rm -rf "$dir/weights"
}

# ultra NAME MODEL_YAML: Ultralytics on the n32/m32 setup, one JSON line named ultralytics-NAME.
ultra() {
  local name="$1" model="$2" dir="$OUT/ultralytics-$1"
  rm -rf "$dir"
  ( cd "$OUT" && timeout 600 python3 "$ROOT/bench/gpu/ultralytics_train.py" "ultralytics-$name" "$DATA/data.yaml" "$model" \
      "$EPOCHS" 32 640 2560 "$dir" cache=ram workers=8 val="${ULTRA_VAL:-False}" > "$dir.log" 2>&1 )
  grep '^{"name"' "$dir.log" | tail -1 | tee -a "$OUT/compare.jsonl"
  rm -rf "$dir/r/weights"
}

if want step; then
  for m in n m; do
    echo "== the training step alone: yolo11$m batch 32, amp_fp16 (eager is the baseline of the same run)"
    timeout 200 "$BIN/yoloflow_bench_train_step" --data "$COCO/data.yaml" --model $m --batch 32 --configs eager,graph,checkpoint 2>&1 |
      grep -E "^(train step|config|eager|graph|checkpoint)|error|capture failed" | tee "$OUT/step-$m.txt"
  done
fi
want n32 && run n32 "$EPOCHS" "$DATA/data.yaml" "${FAST[@]}" stages.batch.params.batch=32
want n128 && run n128 "$EPOCHS" "$DATA/data.yaml" "${FAST[@]}" stages.batch.params.batch=128 stages.train.params.nominal_batch=128
want m32 && run m32 "$EPOCHS" "$DATA/data.yaml" "${FAST[@]}" stages.batch.params.batch=32 stages.train.params.model.params.scale=m
want ultralytics-n32 && ultra n32 yolo11n.yaml
want ultralytics-m32 && ultra m32 yolo11m.yaml
if want map; then
  for seed in $MAP_SEEDS; do
    [[ " $MAP_CONFIGS " == *" fast "* ]] &&
      run "map-fast-s$seed" "$MAP_EPOCHS" "$DATA/data-trainval.yaml" "${FAST[@]}" stages.batch.params.batch=32 seed="$seed"
    [[ " $MAP_CONFIGS " == *" plain "* ]] &&
      run "map-plain-s$seed" "$MAP_EPOCHS" "$DATA/data-trainval.yaml" "${PLAIN[@]}" stages.batch.params.batch=32 seed="$seed"
  done
fi

# The table: each figure against Ultralytics' figure on the same machine and the target.
python3 - "$OUT" bench/gpu/ultralytics-reference.json <<'PY'
import json, os, re, sys
out = sys.argv[1]
runs = {}
if os.path.exists(out + "/compare.jsonl"):
    for line in open(out + "/compare.jsonl"):
        r = json.loads(line); runs[r["name"]] = r
reference = json.load(open(sys.argv[2]))  # Ultralytics 8.4.56, same machine
# Ultralytics measured in this invocation where it ran, else its reference figure.
ref, source = {}, {}
for k in ("n32", "m32"):
    u = runs.get("ultralytics-" + k, {})
    if u.get("img_s"):
        ref[k], source[k] = (u["img_s"], u.get("gpu_util"), u.get("peak_reserved_GiB")), "this run"
    else:
        ref[k], source[k] = (reference[k]["img_s"], reference[k]["gpu_util"], reference[k]["peak_reserved_GiB"]), "ref"
target = {"n32": ">= 1,000 img/s, util >= 90%, peak <= 6.3 GiB", "n128": ">= 1,400 img/s",
          "m32": ">= 400 img/s, peak <= 19 GiB"}
for k in ("n32", "m32"):
    if k in runs:
        print("Ultralytics %s (%s): %.1f img/s, GPU util %s%%, peak reserved %s GiB"
              % (k, source[k], ref[k][0], ref[k][1], ref[k][2]))
print("\n%-6s %9s %12s %9s %9s %15s %8s  %s" % ("run", "img/s", "vs Ultra.", "GPU util", "+val", "peak reserved", "mAP50",
                                                 "target"))
for name in ("n32", "n128", "m32"):
    r = runs.get(name)
    if not r or "img_s" not in r: continue
    u = ref.get(name)
    vs = "%.2fx" % (r["img_s"] / u[0]) if u else "-"
    print("%-6s %9.0f %12s %8s%% %8s%% %11.2f GiB %8.4f  %s" % (name, r["img_s"], vs, r.get("gpu_util"),
                                                             r.get("gpu_util_with_val"), r["peak_reserved_GiB"],
                                                             r["mAP50"], target[name]))
for m, ultra in (("n", reference["step_n32"]["img_s"]), ("m", reference["step_m32"]["img_s"])):
    p = out + "/step-%s.txt" % m
    if not os.path.exists(p): continue
    rows = {l.split()[0]: l.split() for l in open(p) if re.match(r"(eager|graph|checkpoint) ", l)}
    for cfg, f in rows.items():
        print("step yolo11%s b32 %-10s %7s img/s = %.2fx Ultralytics' step (%d), peak reserved %s GiB, allocated %s GiB"
              % (m, cfg, f[2], float(f[2]) / ultra, ultra, f[4], f[6]))
    if "eager" in rows and "checkpoint" in rows:
        e, c = float(rows["eager"][6]), float(rows["checkpoint"][6])
        print("  activation checkpointing, yolo11%s b32: peak allocated %.2f -> %.2f GiB (%.0f%% lower; target >= 40%%)"
              % (m, e, c, 100 * (1 - c / e)))
maps = {k: v for k, v in runs.items() if k.startswith("map-") and "mAP50_95" in v}
for k in sorted(maps):
    r = maps[k]
    print("mAP after %d epochs (validated on the train images), %-13s mAP50 %.4f  mAP50-95 %.4f  at %.0f img/s"
          % (r["epochs"], k, r["mAP50"], r["mAP50_95"], r["img_s"]))
for cfg in ("fast", "plain"):
    v = [r["mAP50_95"] for k, r in maps.items() if k.startswith("map-%s-" % cfg)]
    if len(v) > 1:
        print("  seed-to-seed spread, %s: mAP50-95 %.4f .. %.4f" % (cfg, min(v), max(v)))
f = [r["mAP50_95"] for k, r in maps.items() if k.startswith("map-fast-")]
p = [r["mAP50_95"] for k, r in maps.items() if k.startswith("map-plain-")]
if f and p:
    print("  mean mAP50-95: speed options %.4f, none %.4f (difference %+.4f)" % (sum(f) / len(f), sum(p) / len(p),
                                                                            sum(f) / len(f) - sum(p) / len(p)))
PY
