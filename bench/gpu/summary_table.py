"""Prints bench/gpu/summary-table.sh's table from the JSON lines its parts wrote.

usage: python3 bench/gpu/summary_table.py SUMMARY_DIR REFERENCE_JSON
SUMMARY_DIR holds one folder per part (shipped, speed, memory, nocache); a part that has not run
shows as "not run". Ultralytics' figures come from the same invocation where it ran (the shipped
part), else from REFERENCE_JSON, marked "ref".
"""
import json
import os
import sys


def rows(path):
    """name -> the last JSON line with that name in `path` ({} when the file is absent)."""
    out = {}
    if os.path.exists(path):
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                out[r["name"]] = r
    return out


def num(v, fmt="%.1f"):
    return fmt % v if isinstance(v, (int, float)) else "-"


def missing(r):
    """What to show for a run `r` without figures (None: the part did not run)."""
    return "not run" if not r else "failed: %s" % r.get("error", "exit %s" % r.get("exit"))


def main(base, reference_path):
    ref = json.load(open(reference_path))
    shipped = rows(os.path.join(base, "shipped", "shipped-vs-ultralytics.jsonl"))
    speed = rows(os.path.join(base, "speed", "compare.jsonl"))
    memory = rows(os.path.join(base, "memory", "compare.jsonl"))
    nocache = rows(os.path.join(base, "nocache", "no-cache-data-path.jsonl"))

    table = []  # (what, yoloflow, Ultralytics, ratio)

    def add(what, ours, ultra, ratio=""):
        table.append((what, ours, ultra, ratio))

    def ratio(a, b, unit="x"):
        return "%.2f%s" % (a / b, unit) if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else ""

    # The shipped pipeline: Ultralytics' defaults from this invocation, else the reference.
    u = shipped.get("ultralytics", {})
    if u.get("img_s"):
        u_img, u_mem, u_note = u["img_s"], u.get("peak_reserved_GiB"), u.get("tool", "ultralytics")
    else:
        u_img, u_mem = ref["shipped_b16"]["img_s"], ref["shipped_b16"]["peak_reserved_GiB"]
        u_note = "ref" + (" (%s)" % u["error"] if u.get("error") else "")
    for name, what in (("shipped", "shipped train-coco128.json as it is (b16, no RAM cache, validation each epoch)"),
                       ("shipped-ram", "same, with a RAM cache")):
        r = shipped.get(name)
        if not r or "img_s" not in r:
            add(what, missing(r), "")
            continue
        ours = "%s img/s, %s GiB peak reserved" % (num(r["img_s"]), num(r.get("peak_reserved_GiB"), "%.2f"))
        if name == "shipped":
            add(what, ours, "%s img/s, %s GiB (%s)" % (num(u_img), num(u_mem, "%.2f"), u_note),
                "%s speed, %s memory" % (ratio(r["img_s"], u_img), ratio(r.get("peak_reserved_GiB"), u_mem)))
        else:
            add(what, ours, "-")

    r = speed.get("n32")
    what = "speed options, RAM cache, YOLO11n b32 (max-throughput-coco128.json)"
    if r and "img_s" in r:
        n = ref["n32"]
        add(what, "%s img/s, %s%% GPU busy, %s GiB" % (num(r["img_s"]), num(r.get("gpu_util")), num(r.get("peak_reserved_GiB"), "%.2f")),
            "%s img/s, %s%% busy, %s GiB (ref)" % (n["img_s"], n["gpu_util"], n["peak_reserved_GiB"]),
            "%s speed" % ratio(r["img_s"], n["img_s"]))
    else:
        add(what, missing(r), "")

    for name, what in (("recent", "speed options, no RAM cache, 100,000 JPEG files, YOLO11n b32 (mosaic others: recent, default)"),
                       ("any", "same, mosaic others: any (four decodes per mosaic)")):
        r = nocache.get(name)
        if r and "img_s" in r:
            add(what, "%s img/s steady (%s per core), %s%% GPU busy, data wait %s ms" % (
                num(r["img_s"]), num(r.get("img_s_per_core")), num(r.get("gpu_util")), num(r.get("data_wait_ms"))), "-")
        else:
            add(what, missing(r), "")

    for name, key, what in (("n32", "n32_val_each_epoch", "speed options validating every epoch, YOLO11n b32: peak memory"),
                            ("m32", "m32_val_each_epoch", "same, YOLO11m b32")):
        r = memory.get(name)
        if r and "img_s" in r:
            u_peak = ref[key]["peak_reserved_GiB"]
            add(what, "%s GiB peak reserved, %s img/s" % (num(r.get("peak_reserved_GiB"), "%.2f"), num(r["img_s"])),
                "%s GiB (ref)" % u_peak, "%s memory" % ratio(r.get("peak_reserved_GiB"), u_peak))
        else:
            add(what, missing(r), "")

    print("\n| what a user runs | yoloflow | Ultralytics %s | yoloflow / Ultralytics |" % ref["version"])
    print("|---|---|---|---|")
    for row in table:
        print("| %s | %s | %s | %s |" % row)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
