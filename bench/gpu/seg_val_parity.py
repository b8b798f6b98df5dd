"""Ultralytics 8.4.56's SegmentationValidator on one checkpoint, rect and square batches, beside
yoloflow's val of the same file (its metrics.json files); prints both and the differences.

    python3 bench/gpu/seg_val_parity.py ULTRALYTICS.pt DATA.yaml OUT.json [YOLOFLOW_RECT.json YOLOFLOW_SQUARE.json]

Imports and calls Ultralytics only (AGPL-3.0; none of its code is copied): its validator at
imgsz 640, batch 32, conf 0.001, iou 0.7, max_det 300, fp32, plots off. OUT.json holds, per mode,
its results dict, the classes with labels and their box and mask AP50-95, and "images": the rect
run's kept detections per image file, [x1, y1, x2, y2, conf, cls, mask area] in original pixels:
a fixture for a CPU test of yoloflow's validation on the same weights.
"""
import json
import sys

# yoloflow's metrics.json keys for Ultralytics' results keys.
PAIRS = [("metrics/precision(B)", "precision"), ("metrics/recall(B)", "recall"), ("metrics/mAP50(B)", "mAP50"),
         ("metrics/mAP50-95(B)", "mAP50-95"), ("metrics/precision(M)", "mask_precision"),
         ("metrics/recall(M)", "mask_recall"), ("metrics/mAP50(M)", "mask_mAP50"),
         ("metrics/mAP50-95(M)", "mask_mAP50-95")]


def main(argv):
    if len(argv) not in (4, 6):
        sys.exit(__doc__)
    weights, data, out = argv[1:4]
    from ultralytics import __version__
    from ultralytics.models.yolo.segment import SegmentationValidator
    res = {"weights": weights, "ultralytics": __version__}
    import os
    import tempfile
    from pathlib import Path

    for mode in ("rect", "square"):
        rect = mode == "rect"
        # The rect run also records its kept detections per image (original pixels, as
        # save_json writes them), with each mask's area in original pixels instead of its RLE.
        v = SegmentationValidator(save_dir=Path(tempfile.mkdtemp()),
                                  args=dict(model=weights, data=data, imgsz=640, batch=32, conf=0.001, iou=0.7,
                                            max_det=300, half=False, rect=rect, plots=False, device=os.environ.get("DEVICE", 0),
                                            verbose=False, save_json=rect))
        if rect:
            images = res.setdefault("images", {})

            def record(predn, pbatch, v=v, images=images):
                rows = []
                masks = predn["masks"]
                areas = masks.flatten(1).float().sum(1) if len(masks) else masks.new_zeros(0)
                for b, c, k, a in zip(predn["bboxes"].tolist(), predn["conf"].tolist(), predn["cls"].tolist(),
                                      areas.tolist()):
                    rows.append([round(x, 3) for x in b] + [round(c, 5), int(k), int(a)])
                images[os.path.basename(pbatch["im_file"])] = rows

            v.pred_to_json = record
        stats = v()
        res[mode] = {k: float(x) for k, x in stats.items()}
        res[mode]["classes"] = [int(c) for c in v.metrics.ap_class_index]
        res[mode]["box_ap50_95"] = [float(x) for x in v.metrics.box.ap]
        res[mode]["mask_ap50_95"] = [float(x) for x in v.metrics.seg.ap]
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    ours = {}
    if len(argv) == 6:
        for mode, path in (("rect", argv[4]), ("square", argv[5])):
            with open(path) as f:
                ours[mode] = json.load(f)
    print("%-8s %-24s %11s %11s %9s" % ("mode", "metric", "Ultralytics", "yoloflow", "diff"))
    worst = 0.0
    for mode in ("rect", "square"):
        for theirs_key, our_key in PAIRS:
            t = res[mode].get(theirs_key)
            o = ours.get(mode, {}).get(our_key)
            d = (o - t) if (o is not None and t is not None) else None
            if d is not None and "mAP" in theirs_key:
                worst = max(worst, abs(d))
            print("%-8s %-24s %11.5f %11s %9s" % (mode, theirs_key, t, "%.5f" % o if o is not None else "-",
                                                 "%+.5f" % d if d is not None else "-"))
    if ours:
        print("largest mAP difference: %.5f (the issue's bound: 0.002)" % worst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
