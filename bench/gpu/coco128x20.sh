# Sourced by the GPU benchmarks after scripts/gpu-env.sh: the 2,560-image setup, coco128's 128
# train images listed 20 times per epoch, in /tmp/coco128x20:
# - data.yaml: train = that list, val = coco128's val images;
# - data-trainval.yaml: the same train list, validated on the train images (mAP after a short
#   run means something only on images the model has seen; Ultralytics' coco128.yaml also
#   validates on its train images).
DATA=/tmp/coco128x20
mkdir -p "$DATA"
: > "$DATA/train.txt"
for _ in $(seq 20); do ls "$COCO"/images/train2017/*.jpg >> "$DATA/train.txt"; done
ls "$COCO"/images/train2017/*.jpg > "$DATA/trainval.txt"
ls "$COCO"/images/val2017/*.jpg > "$DATA/val.txt"
{ echo "path: $DATA"; echo "train: train.txt"; echo "val: val.txt"; sed -n '/^names:/,$p' "$COCO/data.yaml"; } > "$DATA/data.yaml"
{ echo "path: $DATA"; echo "train: train.txt"; echo "val: trainval.txt"; sed -n '/^names:/,$p' "$COCO/data.yaml"; } > "$DATA/data-trainval.yaml"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
