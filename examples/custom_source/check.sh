#!/usr/bin/env bash
# The example's test: a few coco128 images and their YOLO labels converted to a COCO JSON
# (sparse COCO category ids listed in reverse, boxes in pixels) plus bad annotations; the
# same images read by coco_json and by the built-in yolo_dataset must give the same samples:
# byte-equal `yoloflow preview` grids (pixels, boxes, class names drawn) and the same label
# statistics; every bad annotation is reported with the file and its index, a missing image
# with its path.
# Usage: check.sh YOLOFLOW_CLI PLUGIN_DIR COCO128_DIR WORK_DIR
set -euo pipefail
cli="$1"; plugins="$2"; coco="$3"; work="$4"
data="$work/data"
# copy_labelled DATASET FOLDER N: the first N labelled train images of DATASET, with their labels
# (the yolo_dataset side), into FOLDER/images and FOLDER/labels.
copy_labelled() {
  mkdir -p "$2/images" "$2/labels"
  local n=0 img label
  for img in $(ls "$1"/images/train2017/*.jpg | sort); do
    label="$1/labels/train2017/$(basename "${img%.jpg}").txt"
    [ -s "$label" ] || continue
    cp "$img" "$2/images/"; cp "$label" "$2/labels/"
    n=$((n + 1)); [ "$n" -lt "$3" ] || break
  done
}
copy_labelled "$coco" "$data" 6
# Width and height of a JPEG from its first start-of-frame marker, for both COCO files written here.
cat > "$work/jpeg_size.py" <<'PY'
import struct

def jpeg_size(path):
    with open(path, "rb") as f:
        b = f.read()
    i = 2
    while i < len(b):
        marker, length = b[i + 1], struct.unpack(">H", b[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", b[i + 5:i + 9])
            return w, h
        i += 2 + length
    raise ValueError(path)
PY
{ printf 'path: .\ntrain: images\nval: images\nnames:\n'; sed -n '/^names:/,$p' "$coco/data.yaml" | grep '^  '; } \
  > "$data/data.yaml"

PYTHONPATH="$work" python3 - "$data" <<'PY'
import json, os, sys
from jpeg_size import jpeg_size
data = sys.argv[1]

names = []
for line in open(os.path.join(data, "data.yaml")):
    if line.startswith("  "):
        names.append(line.split(":", 1)[1].strip())
# COCO's own category ids for its 80 classes (1..90 with gaps).
coco_ids = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32,
            33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59,
            60, 61, 62, 63, 64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90]
assert len(names) == 80 == len(coco_ids)
doc = {"images": [], "annotations": [],
       "categories": [{"id": coco_ids[c], "name": names[c]} for c in reversed(range(80))]}
for k, file in enumerate(sorted(os.listdir(os.path.join(data, "images")))):
    w, h = jpeg_size(os.path.join(data, "images", file))
    image_id = 1000 + k
    doc["images"].append({"id": image_id, "file_name": file, "width": w, "height": h})
    for line in open(os.path.join(data, "labels", file[:-4] + ".txt")):
        c, cx, cy, bw, bh = line.split()
        cx, cy, bw, bh = float(cx), float(cy), float(bw), float(bh)
        doc["annotations"].append({"id": len(doc["annotations"]) + 1, "image_id": image_id,
                                   "category_id": coco_ids[int(c)], "iscrowd": 0,
                                   "bbox": [(cx - bw / 2) * w, (cy - bh / 2) * h, bw * w, bh * h]})
# An image the JSON lists but the folder lacks: skipped and reported.
doc["images"].append({"id": 5000, "file_name": "missing.jpg", "width": 10, "height": 10})
good = len(doc["annotations"])
bad = [{"image_id": 1000, "category_id": 12, "bbox": [1, 1, 5, 5]},     # no such category
       {"image_id": 1000, "category_id": 1, "bbox": [1, 1, -5, 5]},     # negative width
       {"image_id": 9999, "category_id": 1, "bbox": [1, 1, 5, 5]},      # no such image
       {"image_id": 1000, "category_id": 1, "bbox": [1, 1, 5]},         # not 4 numbers
       {"image_id": 1000, "category_id": 1, "iscrowd": 1, "bbox": [1, 1, 5, 5]}]  # crowd: skipped, no issue
doc["annotations"] += bad
json.dump(doc, open(os.path.join(data, "instances.json"), "w"))
open(os.path.join(data, "first_bad_index"), "w").write(str(good))
PY
first_bad=$(cat "$data/first_bad_index")

pipeline() {  # $1: name, $2: the source stage, $3: the augmentation's plugin and params (letterbox)
  local augment=${3:-'"plugin": "letterbox"'}
  cat <<JSON
{
  "name": "$1", "epochs": 1, "imgsz": 640, "seed": 0, "shuffle": false, "ordered": true, "workers": 1,
  "stages": {
    "source": $2,
    "augment": {$augment, "input": "source"},
    "batch": {"plugin": "collate", "input": "augment", "params": {"batch": 3}},
    "sink": {"plugin": "throughput", "input": "batch", "params": {"top_classes": 80}}
  }
}
JSON
}
pipeline yolo '{"plugin": "yolo_dataset", "params": {"data": "data/data.yaml"}}' > "$work/yolo.json"
pipeline coco '{"plugin": "coco_json", "params": {"folder": "data"}}' > "$work/coco.json"

for p in yolo coco; do
  "$cli" --plugin-path "$plugins" preview "$work/$p.json" --out "$work/preview-$p" --per-grid 6 --max-side 8192 \
    --format png > "$work/preview-$p.log" 2>&1 || { cat "$work/preview-$p.log"; exit 1; }
  "$cli" --plugin-path "$plugins" run "$work/$p.json" > "$work/run-$p.log" 2>&1 || { cat "$work/run-$p.log"; exit 1; }
  sed -n '/^images: /,/^batch image sizes/p' "$work/run-$p.log" > "$work/stats-$p.txt"
done
# Same pixels, boxes and class names drawn (the classes came back as yolo's indices).
cmp "$work/preview-yolo/preview_0.png" "$work/preview-coco/preview_0.png" || {
  echo "coco_json's samples differ from yolo_dataset's (see $work/preview-*/)"; exit 1; }
diff "$work/stats-yolo.txt" "$work/stats-coco.txt" || { echo "label statistics differ"; exit 1; }
grep -q "^boxes: " "$work/stats-coco.txt" || { cat "$work/run-coco.log"; exit 1; }
cat "$work/stats-coco.txt"

# Every bad annotation is reported with the file and its index; the crowd one is not.
log="$work/run-coco.log"
json_file="$work/data/instances.json"
for expect in "annotations\[$first_bad\]: category_id 12 is not in categories -> dropped box" \
              "annotations\[$((first_bad + 1))\]: bbox width and height must be positive" \
              "annotations\[$((first_bad + 2))\]: image_id 9999 is not a usable image of this file -> dropped box" \
              "annotations\[$((first_bad + 3))\]: bbox is not \[x, y, width, height\] -> dropped box"; do
  grep -q "$json_file: $expect" "$log" || { echo "missing report: $expect"; cat "$log"; exit 1; }
done
if grep -q "annotations\[$((first_bad + 4))\]" "$log"; then echo "crowd annotation reported"; exit 1; fi
grep -q "$work/data/images/missing.jpg: image missing (images\[6\]) -> skipped image" "$log" || {
  echo "missing image not reported"; cat "$log"; exit 1; }
described=$("$cli" --plugin-path "$plugins" describe coco_json)
grep -q "coco_json (source, plugin example_coco_json 1.0.0)" <<<"$described"

# A third-party source trains and validates: the train sink's val_source names it too, and the
# epoch's metrics come from its annotations.
cat > "$work/train.json" <<JSON
{
  "name": "coco-train", "epochs": 1, "imgsz": 64, "seed": 0, "ordered": true, "workers": 1, "device": "cpu",
  "data": "data/data.yaml",
  "stages": {
    "source": {"plugin": "coco_json", "params": {"folder": "data"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 3}},
    "train": {"plugin": "train", "input": "batch", "params": {
      "model": {"plugin": "yolo11", "params": {"scale": "n"}},
      "optimizer": {"plugin": "sgd"}, "precision": {"plugin": "fp32"}, "scheduler": {"plugin": "linear"},
      "val_source": {"plugin": "coco_json", "params": {"folder": "data"}}}}
  }
}
JSON
"$cli" --plugin-path "$plugins" train "$work/train.json" --run-dir "$work/train-run" > "$work/train.log" 2>&1 || {
  cat "$work/train.log"; exit 1; }
grep -q "validation: 6 images from coco_json" "$work/train.log" || { echo "validation did not read coco_json"; cat "$work/train.log"; exit 1; }
python3 - "$work/train-run/results.csv" <<'PY'
import csv, sys
row = list(csv.DictReader(open(sys.argv[1])))[-1]
assert row["metrics/mAP50-95(B)"] != "", "no validation metrics in results.csv"
print("validated with coco_json: mAP50-95", row["metrics/mAP50-95(B)"])
PY
# Outlines: coco128-seg's polygons written as COCO segmentations, read by coco_json and, as YOLO
# segment labels, by yolo_dataset, then rotated and sheared by random_perspective: both sources'
# samples carry the same outlines, so the boxes taken from the moved outlines, and the drawn
# grids, are the same.
seg="$coco/../coco128-seg"
if [ -d "$seg/labels" ]; then
  sdata="$work/seg"
  copy_labelled "$seg" "$sdata" 3
  cp "$data/data.yaml" "$sdata/data.yaml"
  PYTHONPATH="$work" python3 - "$sdata" "$data/instances.json" <<'PY'
import json, os, sys
from jpeg_size import jpeg_size
sdata, ref = sys.argv[1], json.load(open(sys.argv[2]))
ids = {c["name"]: c["id"] for c in ref["categories"]}
names = [line.split(":", 1)[1].strip() for line in open(os.path.join(sdata, "data.yaml")) if line.startswith("  ")]
doc = {"images": [], "annotations": [], "categories": ref["categories"]}
for k, file in enumerate(sorted(os.listdir(os.path.join(sdata, "images")))):
    w, h = jpeg_size(os.path.join(sdata, "images", file))
    doc["images"].append({"id": k + 1, "file_name": file, "width": w, "height": h})
    for line in open(os.path.join(sdata, "labels", file[:-4] + ".txt")):
        v = line.split()
        xy = [float(t) * (w if j % 2 == 0 else h) for j, t in enumerate(v[1:])]
        xs, ys = xy[0::2], xy[1::2]
        doc["annotations"].append({"id": len(doc["annotations"]) + 1, "image_id": k + 1, "iscrowd": 0,
                                   "category_id": ids[names[int(v[0])]], "segmentation": [xy],
                                   "bbox": [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)]})
json.dump(doc, open(os.path.join(sdata, "instances.json"), "w"))
PY
  warp='"plugin": "random_perspective", "params": {"degrees": 10, "shear": 5}'
  pipeline seg-yolo '{"plugin": "yolo_dataset", "params": {"data": "seg/data.yaml"}}' "$warp" > "$work/seg-yolo.json"
  pipeline seg-coco '{"plugin": "coco_json", "params": {"folder": "seg"}}' "$warp" > "$work/seg-coco.json"
  for p in seg-yolo seg-coco; do
    "$cli" --plugin-path "$plugins" preview "$work/$p.json" --out "$work/preview-$p" --per-grid 3 --max-side 8192 \
      --format png > "$work/preview-$p.log" 2>&1 || { cat "$work/preview-$p.log"; exit 1; }
  done
  cmp "$work/preview-seg-yolo/preview_0.png" "$work/preview-seg-coco/preview_0.png" || {
    echo "coco_json's outlines differ from yolo_dataset's after random_perspective (see $work/preview-seg-*/)"; exit 1; }
  listing=$("$cli" --plugin-path "$plugins" plugins)
  grep "coco_json" <<<"$listing" | grep -q "gives boxes, polygons" || {
    echo "coco_json does not declare its outlines"; exit 1; }
  echo "coco_json outlines: the same boxes as yolo_dataset's after a rotation and shear"
else
  echo "no $seg: the outline check is skipped"
fi
echo "custom_source: OK"
