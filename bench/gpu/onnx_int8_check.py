"""ONNX Runtime side of bench/gpu/onnx-int8.sh: the float32, float16 and int8 QDQ files of one
model run by ONNX Runtime (CPU and, when installed, CUDA providers) on letterboxed coco128 images.
Prints JSON lines:
  parity:  max |box| (px) and max |prob| of ORT's output against the file evaluated op by op in
           PyTorch (tests/support/onnx_torch_eval.py, float64; QuantizeLinear in float32 as the
           operator defines it): does ORT compute what yoloflow's own evaluator computes?
  latency: ms per image at batch 1 and 32 (the b1/b32 files), per provider
  map:     Ultralytics' `val` of each file (which runs it with ONNX Runtime), when ultralytics is
           importable: the real runtime's mAP50 and mAP50-95 beside `yoloflow val`'s
usage: onnx_int8_check.py DIR DATA_YAML [--images N] [--iters N]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
EVAL = os.path.join(HERE, "..", "..", "tests", "support", "onnx_torch_eval.py")


def emit(**kw):
    print(json.dumps(kw), flush=True)


def providers():
    have = ort.get_available_providers()
    return [p for p in ("CPUExecutionProvider", "CUDAExecutionProvider") if p in have]


def session(path, provider):
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(path, opts, providers=[provider])


def letterbox(path, size):
    """Ultralytics' letterbox: longest side to `size`, centred, grey 114 (cv2 or PIL)."""
    try:
        import cv2
        im = cv2.imread(path)[:, :, ::-1]
        resize = lambda a, w, h: cv2.resize(a, (w, h), interpolation=cv2.INTER_LINEAR)
    except ImportError:
        from PIL import Image
        im = np.asarray(Image.open(path).convert("RGB"))
        resize = lambda a, w, h: np.asarray(Image.fromarray(a).resize((w, h), Image.BILINEAR))
    h, w = im.shape[:2]
    r = min(size / h, size / w)
    nh, nw = round(h * r), round(w * r)
    out = np.full((size, size, 3), 114, np.uint8)
    top, left = (size - nh) // 2, (size - nw) // 2
    out[top:top + nh, left:left + nw] = resize(np.ascontiguousarray(im), nw, nh)
    return out.transpose(2, 0, 1).astype(np.float32) / 255.0


def val_folder(data_yaml):
    """The val split's folder of a data.yaml (`path:` + `val:`, relative to the yaml's folder)."""
    fields = {}
    for line in open(data_yaml):
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("path", "val") and not line.startswith(" "):
            fields[key.strip()] = value.strip()
    root = os.path.join(os.path.dirname(os.path.abspath(data_yaml)), fields.get("path", "."))
    return os.path.join(root, fields.get("val", "images/val2017"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("data")
    ap.add_argument("--images", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    images = sorted(glob.glob(os.path.join(val_folder(a.data), "*.jpg")))[: a.images]
    if not images:
        sys.exit(f"onnx_int8_check: no .jpg images in the val split of {a.data}")
    x = np.stack([letterbox(p, 640) for p in images])
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("fp32", "fp16", "int8"):
            path = os.path.join(a.dir, f"{name}_b1.onnx")
            for i in range(len(x)):
                inp, out = os.path.join(tmp, "in.bin"), os.path.join(tmp, "out.bin")
                x[i:i + 1].tofile(inp)
                subprocess.run([sys.executable, EVAL, path, inp, "1", "3", "640", "640", out], check=True,
                               capture_output=True)
                ref = np.fromfile(out, np.float32).reshape(1, -1, 8400)
                for prov in providers():
                    s = session(path, prov)
                    feed = x[i:i + 1].astype(np.float16 if name == "fp16" else np.float32)
                    y = s.run(None, {"images": feed})[0].astype(np.float32)
                    emit(kind="parity", file=name, provider=prov, image=os.path.basename(images[i]),
                         max_box=float(np.abs(y[:, :4] - ref[:, :4]).max()),
                         max_prob=float(np.abs(y[:, 4:] - ref[:, 4:]).max()))
    for name in ("fp32", "fp16", "int8"):
        for batch in (1, 32):
            path = os.path.join(a.dir, f"{name}_b{batch}.onnx")
            for prov in providers():
                s = session(path, prov)
                feed = np.random.rand(batch, 3, 640, 640).astype(np.float16 if name == "fp16" else np.float32)
                s.run(None, {"images": feed})
                t0 = time.perf_counter()
                n = max(1, a.iters // (4 if batch > 1 else 1))
                for _ in range(n):
                    s.run(None, {"images": feed})
                emit(kind="latency", file=name, provider=prov, batch=batch,
                     ms_per_image=1000 * (time.perf_counter() - t0) / n / batch)
    try:
        from ultralytics import YOLO
    except ImportError:
        emit(kind="map", note="ultralytics is not installed here: no ONNX Runtime mAP")
        return
    for name in ("fp32", "fp16", "int8"):
        path = os.path.join(a.dir, f"{name}_b1.onnx")
        m = YOLO(path, task="detect").val(data=a.data, imgsz=640, batch=1, device="cpu", half=name == "fp16",
                                           verbose=False, plots=False)
        emit(kind="map", file=name, runtime="ultralytics+onnxruntime", mAP50=float(m.box.map50),
             mAP50_95=float(m.box.map))


if __name__ == "__main__":
    main()
