"""One yoloflow training run of a GPU bench as one JSON line, from its run folder: steady img/s
(results.csv's images_per_second, epochs after the first), peak reserved and allocated memory,
the last epoch's box mAP50 and mAP50-95 (and mask mAP50-95 for a segmentation run), out-of-memory
retries, and GPU utilisation from the gpu monitor's gpu.csv: gpu_util over the steady epochs (the
second to the one before last, whole: their checkpoints and results included, as REFERENCE.md's
"over a whole epoch"), gpu_util_with_val from the second epoch to the end (the last epoch's
validation included).

usage: python3 bench/gpu/run_summary.py RUN_DIR NAME EXIT_CODE WALL_SECONDS
"""
import csv
import json
import sys


def main(d, name, rc, wall):
    out = {"name": name, "exit": int(rc), "wall_s": int(wall)}
    try:
        rows = list(csv.DictReader(open(d + "/results.csv")))
    except OSError:
        print(json.dumps(out))
        return
    ips = [float(r["images_per_second"]) for r in rows]
    steady = ips[1:] or ips
    out.update(epochs=len(rows), img_s=round(sum(steady) / len(steady), 1), img_s_per_epoch=[round(x) for x in ips],
               peak_reserved_GiB=round(max(float(r.get("gpu_peak_reserved_GiB") or 0) for r in rows), 2),
               peak_allocated_GiB=round(max(float(r.get("gpu_mem_GiB") or 0) for r in rows), 2),
               mAP50=float(rows[-1]["metrics/mAP50(B)"]), mAP50_95=float(rows[-1]["metrics/mAP50-95(B)"]))
    if "metrics/mAP50-95(M)" in rows[-1]:
        out["mAP50_95_M"] = float(rows[-1]["metrics/mAP50-95(M)"])
    out["oom_retries"] = sum(int(float(r.get("oom_retries") or 0)) for r in rows)
    try:
        samples = [(int(r["epoch"]), float(r["gpu_util"])) for r in csv.DictReader(open(d + "/gpu.csv"))]
        last = max(e for e, _ in samples)
        mean = lambda v: round(sum(v) / len(v), 1) if v else None
        out["gpu_util"] = mean([u for e, u in samples if 2 <= e < last])
        out["gpu_util_with_val"] = mean([u for e, u in samples if e >= 2])
    except (OSError, KeyError, ValueError):
        out["gpu_util"] = None
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:5])
