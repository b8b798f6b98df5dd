"""Prints bench/gpu/summary-table.sh's table from the JSON lines its parts wrote.

usage: python3 bench/gpu/summary_table.py SUMMARY_DIR REFERENCE_JSON
SUMMARY_DIR holds one folder per part (shipped, speed, memory, nocache, fourcore, whole, first,
autobatch); a part that has not run shows as "not run". Ultralytics' figures come from the same
invocation where it ran, else from REFERENCE_JSON, marked "ref".
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
    fourcore = rows(os.path.join(base, "fourcore", "no-cache-data-path.jsonl"))
    whole = rows(os.path.join(base, "whole", "whole-run.jsonl"))
    first = rows(os.path.join(base, "first", "first-step.jsonl"))
    autobatch = rows(os.path.join(base, "autobatch", "auto-batch.jsonl"))
    seg = rows(os.path.join(base, "seg", "compare-seg.jsonl"))

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

    def faster(r, what=""):
        return "%s faster%s" % (r, what) if r else ""

    def ultralytics(part, name, key):
        """Ultralytics' run `name` of `part` in this invocation, else the reference `key`, and its note."""
        u = part.get(name, {})
        if u.get("img_s"):
            return u, "this run"
        return ref[key], "ref" + (" (%s)" % u["error"] if u.get("error") else "")

    r = speed.get("n32")
    what = "speed options, RAM cache, YOLO11n b32 (max-throughput-coco128.json)"
    if r and "img_s" in r:
        n, note = ultralytics(speed, "ultralytics-n32", "n32")
        add(what, "%s img/s, %s%% GPU busy, %s GiB" % (num(r["img_s"]), num(r.get("gpu_util")), num(r.get("peak_reserved_GiB"), "%.2f")),
            "%s img/s, %s%% busy, %s GiB (%s)" % (num(n["img_s"]), num(n.get("gpu_util")), num(n.get("peak_reserved_GiB"), "%.2f"), note),
            "%s speed, %s memory" % (ratio(r["img_s"], n["img_s"]), ratio(r.get("peak_reserved_GiB"), n.get("peak_reserved_GiB"))))
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
    r = fourcore.get("recent")
    what = "same, 4 of the 16 cores (taskset -c 0-3, 3 workers), 20,000 JPEG files"
    if r and "img_s" in r:
        add(what, "%s img/s steady (%s per core), %s%% GPU busy, data wait %s ms" % (
            num(r["img_s"]), num(r.get("img_s_per_core")), num(r.get("gpu_util")), num(r.get("data_wait_ms"))), "-")
    else:
        add(what, missing(r), "")

    for name, key, what in (("n32", "n32_val_each_epoch", "speed options validating every epoch, YOLO11n b32: peak memory"),
                            ("m32", "m32_val_each_epoch", "same, YOLO11m b32")):
        r = memory.get(name)
        if r and "img_s" in r:
            u, note = ultralytics(memory, "ultralytics-" + name, key)
            u_peak = u.get("peak_reserved_GiB")
            add(what, "%s GiB peak reserved, %s img/s" % (num(r.get("peak_reserved_GiB"), "%.2f"), num(r["img_s"])),
                "%s GiB, %s img/s (%s)" % (num(u_peak, "%.2f"), num(u.get("img_s")), note),
                "%s memory" % ratio(r.get("peak_reserved_GiB"), u_peak))
        else:
            add(what, missing(r), "")

    for name, what in (("n32", "YOLO11n-seg b32, coco128-seg x20, speed options, RAM cache"),
                       ("m32", "YOLO11m-seg b32, same"),
                       ("crowded", "YOLO11n-seg b8, 300 instances an image at 640: a step's peak memory")):
        r = seg.get(name)
        if r and "img_s" in r:
            u = seg.get("ultralytics-" + name, {})
            add(what, "%s img/s, %s%% GPU busy, %s GiB" % (num(r["img_s"]), num(r.get("gpu_util")), num(r.get("peak_reserved_GiB"), "%.2f")),
                "%s img/s, %s%% busy, %s GiB (this run)" % (num(u.get("img_s")), num(u.get("gpu_util")), num(u.get("peak_reserved_GiB"), "%.2f"))
                if u.get("img_s") else missing(u),
                "%s speed, %s memory" % (ratio(r["img_s"], u.get("img_s")), ratio(r.get("peak_reserved_GiB"), u.get("peak_reserved_GiB"))))
        elif seg:
            add(what, missing(r), "")

    y, u = whole.get("yoloflow", {}), whole.get("ultralytics", {})
    what = "whole run, start to exit: YOLO11n, 1,280 images an epoch at 320, b32, 60 epochs, validation each epoch"
    if y.get("wall_s"):
        add(what, "%s s (first optimizer step at %s s), mAP50-95 %s" % (num(y["wall_s"]), num(y.get("first_step_s")), num(y.get("mAP50_95"), "%.4f")),
            "%s s, mAP50-95 %s" % (num(u.get("wall_s")), num(u.get("mAP50_95"), "%.4f")) if u.get("wall_s") else missing(u),
            faster(ratio(u.get("wall_s"), y["wall_s"])))
    else:
        add(what, missing(y), "")

    what = "first optimizer step after the process starts, YOLO11n b32 at 640: default / cudnn_benchmark=true / eager (profiled)"
    if first:
        add(what, " / ".join("%s s" % num(first.get(n, {}).get("first_step_s"), "%.2f") for n in ("default", "bench", "profile")), "-")
    else:
        add(what, "not run", "")

    y, u = autobatch.get("yoloflow", {}), autobatch.get("ultralytics", {})
    what = "batch=-1, YOLO11x at 1280 (0.60 of the GPU): time to a built run / to the first step, batch, peak reserved"
    if y.get("batch"):
        add(what, "%s s / %s s, batch %s (target %s GiB), %s GiB" % (
            num(y.get("resolved_s")), num(y.get("first_step_s")), y["batch"], num(y.get("target_GiB")), num(y.get("peak_reserved_GiB"), "%.2f")),
            "- / %s s, batch %s, %s GiB" % (num(u.get("first_step_s")), u.get("batch"), num(u.get("peak_reserved_GiB"), "%.2f"))
            if u.get("first_step_s") else missing(u),
            faster(ratio(u.get("first_step_s"), y.get("first_step_s")), " to the first step"))
    else:
        add(what, missing(y), "")

    print("\n| what a user runs | yoloflow | Ultralytics %s | yoloflow / Ultralytics |" % ref["version"])
    print("|---|---|---|---|")
    for row in table:
        print("| %s | %s | %s | %s |" % row)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
