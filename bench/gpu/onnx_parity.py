"""ONNX Runtime side of bench/gpu/onnx-parity.sh.

For one model folder made by yoloflow_bench_onnx_reference and the files `yoloflow export`
wrote there, runs ONNX Runtime (CPU and CUDA providers) and prints JSON lines:
  parity: max |box| (pixels) and max |prob| against yoloflow's LibTorch outputs, per file,
          provider and input shape (and against Ultralytics' fixture output when given)
  nms:    the --nms file's detections against NMS done here on the raw output
  latency: ms per image, ORT CUDA with input and output bound on the GPU (IO binding), and ORT
           CPU (against LibTorch on the CPU)
usage: onnx_parity.py DIR MODEL [--fixture DIR]
"""
import argparse
import glob
import json
import os
import time

import numpy as np
import onnx
import onnxruntime as ort


def providers():
    have = ort.get_available_providers()
    return [p for p in ("CPUExecutionProvider", "CUDAExecutionProvider") if p in have]


def session(path, provider):
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(path, opts, providers=[provider])


def shape_tag(path):
    """BxHxW of a fixed-shape file's input, as the input files are named."""
    dims = onnx.load(path, load_external_data=False).graph.input[0].type.tensor_type.shape.dim
    return "x".join(str(dims[i].dim_value) for i in (0, 2, 3))


def errors(out, ref):
    out = out.astype(np.float32)
    return float(np.abs(out[:, :4] - ref[:, :4]).max()), float(np.abs(out[:, 4:] - ref[:, 4:]).max())


def emit(**kw):
    print(json.dumps(kw), flush=True)


def nms_reference(pred, conf, iou, max_det):
    """Ultralytics' predict NMS: best class per anchor, conf threshold, per-class IoU suppression."""
    results = []
    for p in pred:  # (4 + nc, A)
        boxes = p[:4].T.astype(np.float64)
        scores = p[4:]
        cls, score = scores.argmax(0), scores.max(0)
        keep = score > conf
        b, s, c = boxes[keep], score[keep], cls[keep]
        xyxy = np.concatenate([b[:, :2] - b[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2], 1)
        area = np.prod(xyxy[:, 2:] - xyxy[:, :2], 1)
        chosen = []
        for k in np.unique(c):
            order = np.where(c == k)[0]
            order = order[np.argsort(-s[order], kind="stable")]
            while order.size:
                i, rest = order[0], order[1:]
                chosen.append(i)
                lt = np.maximum(xyxy[i, :2], xyxy[rest, :2])
                rb = np.minimum(xyxy[i, 2:], xyxy[rest, 2:])
                inter = np.prod(np.clip(rb - lt, 0, None), 1)
                order = rest[inter / (area[i] + area[rest] - inter) <= iou]
        chosen = sorted(chosen, key=lambda i: -s[i])[:max_det]
        rows = np.zeros((max_det, 6), np.float32)
        for r, i in enumerate(chosen):
            rows[r] = [*xyxy[i], s[i], c[i]]
        results.append(rows)
    return np.stack(results)


def latency(path, batch, imgsz, iters, provider="CUDAExecutionProvider"):
    sess = session(path, provider)
    name = sess.get_inputs()[0].name
    dtype = np.float16 if sess.get_inputs()[0].type == "tensor(float16)" else np.float32
    host = np.random.rand(batch, 3, imgsz, imgsz).astype(dtype)
    if provider == "CPUExecutionProvider":
        run_once = lambda: sess.run(None, {name: host})
    else:
        x = ort.OrtValue.ortvalue_from_numpy(host, "cuda", 0)
        binding = sess.io_binding()
        binding.bind_ortvalue_input(name, x)
        binding.bind_output(sess.get_outputs()[0].name, "cuda")
        run_once = lambda: sess.run_with_iobinding(binding)  # returns after the GPU finished
    for _ in range(min(10, iters)):
        run_once()
    t0 = time.perf_counter()
    for _ in range(iters):
        run_once()
    return (time.perf_counter() - t0) * 1000 / iters / batch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("model")
    ap.add_argument("--fixture", default="")
    ap.add_argument("--iters", type=int, default=50)
    a = ap.parse_args()
    d = a.dir
    provs = providers()
    emit(kind="runtime", onnxruntime=ort.__version__, onnx=onnx.__version__, providers=provs)
    inputs = {os.path.basename(p)[6:-4]: np.load(p) for p in sorted(glob.glob(f"{d}/input_*.npy"))}
    refs = {t: np.load(f"{d}/libtorch_{t}.npy") for t in inputs}

    def run(path, provider, x):
        sess = session(path, provider)
        inp = sess.get_inputs()[0]
        if inp.type == "tensor(float16)":
            x = x.astype(np.float16)
        return sess.run(None, {inp.name: x})[0]

    for provider in provs:
        # Fixed-shape file: its own shape only.
        for tag, x in inputs.items():
            f = f"{d}/fixed_{tag}.onnx"
            if os.path.exists(f):
                box, prob = errors(run(f, provider, x), refs[tag])
                emit(kind="parity", model=a.model, file="fixed", provider=provider, shape=tag, max_box=box, max_prob=prob)
        # Dynamic file: every shape.
        for tag, x in inputs.items():
            box, prob = errors(run(f"{d}/dynamic.onnx", provider, x), refs[tag])
            emit(kind="parity", model=a.model, file="dynamic", provider=provider, shape=tag, max_box=box, max_prob=prob)
        # Half: float16 weights and activations, against the float32 reference.
        tag = shape_tag(f"{d}/half.onnx") if os.path.exists(f"{d}/half.onnx") else ""
        if os.path.exists(f"{d}/half.onnx") and tag in inputs:
            try:
                box, prob = errors(run(f"{d}/half.onnx", provider, inputs[tag]), refs[tag])
                emit(kind="parity", model=a.model, file="half", provider=provider, shape=tag, max_box=box,
                     max_prob=prob)
            except Exception as e:  # e.g. a provider without float16 kernels for an op
                emit(kind="error", model=a.model, file="half", provider=provider, error=str(e).splitlines()[0])
        # Ultralytics' own output for the fixture (n only).
        if a.fixture:
            import torch

            x = torch.load(f"{a.fixture}/input.pt").numpy()
            ref = torch.load(f"{a.fixture}/ref_eval.pt").numpy()
            box, prob = errors(run(f"{d}/fixture_320.onnx", provider, x), ref)
            emit(kind="parity-ultralytics", model=a.model, provider=provider, shape="1x320x320", max_box=box,
                 max_prob=prob)
        # NMS file against NMS done here on the raw output of the dynamic file.
        nms_file = f"{d}/nms.onnx"
        tag = shape_tag(nms_file) if os.path.exists(nms_file) else ""
        if tag in inputs:
            got = run(nms_file, provider, inputs[tag])
            want = nms_reference(run(f"{d}/dynamic.onnx", provider, inputs[tag]), 0.25, 0.7, 300)
            n_got = int((got[..., 4] > 0).sum())
            n_want = int((want[..., 4] > 0).sum())
            # Rows may swap where scores tie to float precision: match each detection to one of
            # the reference's of the same image and class (boxes within 0.01 px, score 1e-4).
            matched = 0
            for g_img, w_img in zip(got, want):
                w_valid = w_img[w_img[:, 4] > 0]
                for row in g_img[g_img[:, 4] > 0]:
                    close = (np.abs(w_valid[:, :4] - row[:4]).max(1) < 1e-2) & (np.abs(w_valid[:, 4] - row[4]) < 1e-4) \
                        & (w_valid[:, 5] == row[5])
                    matched += bool(close.any())
            emit(kind="nms", model=a.model, provider=provider, shape=tag, detections=n_got, expected=n_want,
                 matched=matched)

    for provider in provs:
        runtime = "onnxruntime-cuda" if provider == "CUDAExecutionProvider" else "onnxruntime-cpu"
        for b in (1, 32):
            f = f"{d}/latency_b{b}.onnx"
            if not os.path.exists(f):
                f = f"{d}/dynamic.onnx"
            iters = a.iters if provider == "CUDAExecutionProvider" else max(3, a.iters // (10 if b > 1 else 2))
            emit(kind="latency", model=a.model, runtime=runtime, batch=b, file=os.path.basename(f),
                 ms_per_image=latency(f, b, 640, iters, provider))


if __name__ == "__main__":
    main()
