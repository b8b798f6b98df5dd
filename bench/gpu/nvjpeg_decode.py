#!/usr/bin/env python3
"""JPEG decoding on the GPU (nvJPEG, loaded at run time) against OpenCV's libjpeg on the CPU, in
one invocation, on the same files held in memory (no disk read in either).

What it answers: whether handing the data path's JPEG decodes to the GPU would free the few
cores of a GPU machine (img/s and CPU milliseconds per image), and how far its pixels are from
libjpeg's (they are not the same bytes: another IDCT and chroma upsampling).

Runs:
  cpu THREADS   cv2.imdecode on THREADS threads (each decode is single-threaded)
  nvjpeg BACKEND  nvjpegDecodeBatched into interleaved BGR device images, BATCH files a call,
                  for each backend the library and the GPU accept (hardware: the A100/H100/H200
                  JPEG engines; gpu_hybrid; hybrid: Huffman decoding on the CPU)
Prints one JSON line per run (img/s, CPU ms per image = process CPU time / images), then per
backend its pixels against libjpeg's on the first batch (mean and max absolute difference per
channel, B G R) and img/s and CPU ms per image against the 1-thread CPU run.

On the GPU machine, from the repo root:
  python3 bench/gpu/nvjpeg_decode.py [--images DIR] [--batch 32] [--repeat 3] [--threads 1,4]
  (DIR: default $COCO/images/train2017, or gpu-bundle/shared/datasets/coco128/images/train2017)
"""
import argparse
import ctypes
import glob
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np

MAX_COMPONENT = 4
OUTPUT_BGRI = 6
BACKENDS = {"default": 0, "hybrid": 1, "gpu_hybrid": 2, "hardware": 3}
STATUS = {0: "success", 1: "not initialized", 2: "invalid parameter", 3: "bad jpeg", 4: "jpeg not supported",
          5: "allocator failure", 6: "execution failed", 7: "arch mismatch", 8: "internal error",
          9: "implementation not supported"}


class NvjpegImage(ctypes.Structure):
    _fields_ = [("channel", ctypes.c_void_p * MAX_COMPONENT), ("pitch", ctypes.c_size_t * MAX_COMPONENT)]


def default_images():
    coco = os.environ.get("COCO")
    for d in ([os.path.join(coco, "images/train2017")] if coco else []) + [
            "gpu-bundle/shared/datasets/coco128/images/train2017", "../shared/datasets/coco128/images/train2017"]:
        if os.path.isdir(d):
            return d
    return None


def load_nvjpeg():
    names = ["libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11", "libnvjpeg.so"]
    extra = [os.path.join(d, n) for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
             for n in names]
    for name in names + extra:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        P, I, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
        for fn, args in {"nvjpegCreateEx": [I, P, P, ctypes.c_uint, P], "nvjpegDestroy": [P],
                         "nvjpegJpegStateCreate": [P, P], "nvjpegJpegStateDestroy": [P],
                         "nvjpegDecodeBatchedInitialize": [P, P, I, I, I],
                         "nvjpegGetImageInfo": [P, ctypes.c_char_p, S, P, P, P, P],
                         "nvjpegDecodeBatched": [P, P, P, P, P, P]}.items():
            getattr(lib, fn).argtypes = args
            getattr(lib, fn).restype = I
        return lib, name
    return None, None


def cpu_run(blobs, threads, repeat):
    def decode(b):
        return cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR)
    best = None
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeat):
            c0, t0 = time.process_time(), time.perf_counter()
            list(pool.map(decode, blobs))
            t, c = time.perf_counter() - t0, time.process_time() - c0
            if best is None or t < best[0]:
                best = (t, c)
    t, c = best
    return {"run": "cpu", "threads": threads, "images": len(blobs), "img_s": round(len(blobs) / t, 1),
            "cpu_ms_per_image": round(1000 * c / len(blobs), 3)}


def check(status, what):
    if status != 0:
        raise RuntimeError("%s: %s (%d)" % (what, STATUS.get(status, "?"), status))


def nvjpeg_run(lib, torch, blobs, backend, batch, repeat):
    handle, state = ctypes.c_void_p(), ctypes.c_void_p()
    check(lib.nvjpegCreateEx(BACKENDS[backend], None, None, 0, ctypes.byref(handle)), "nvjpegCreateEx")
    try:
        check(lib.nvjpegJpegStateCreate(handle, ctypes.byref(state)), "nvjpegJpegStateCreate")
        check(lib.nvjpegDecodeBatchedInitialize(handle, state, batch, 1, OUTPUT_BGRI), "nvjpegDecodeBatchedInitialize")
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        sizes = []
        for b in blobs:
            n, sub = ctypes.c_int(), ctypes.c_int()
            w, h = (ctypes.c_int * MAX_COMPONENT)(), (ctypes.c_int * MAX_COMPONENT)()
            check(lib.nvjpegGetImageInfo(handle, b, len(b), ctypes.byref(n), ctypes.byref(sub), w, h),
                  "nvjpegGetImageInfo")
            sizes.append((h[0], w[0]))
        outputs = [torch.empty((hh, ww, 3), dtype=torch.uint8, device="cuda") for hh, ww in sizes]

        def one_pass():
            for s in range(0, len(blobs), batch):
                part = blobs[s:s + batch]
                if len(part) < batch:  # the batched decoder was set up for `batch` images a call
                    break
                data = (ctypes.c_char_p * batch)(*part)
                lengths = (ctypes.c_size_t * batch)(*[len(b) for b in part])
                dest = (NvjpegImage * batch)()
                for k in range(batch):
                    dest[k].channel[0] = outputs[s + k].data_ptr()
                    dest[k].pitch[0] = sizes[s + k][1] * 3
                check(lib.nvjpegDecodeBatched(handle, state, ctypes.cast(data, ctypes.c_void_p),
                                              ctypes.cast(lengths, ctypes.c_void_p), ctypes.cast(dest, ctypes.c_void_p),
                                              stream), "nvjpegDecodeBatched")
            torch.cuda.synchronize()
            return (len(blobs) // batch) * batch

        one_pass()  # the first call sets up the decoder's buffers
        best = None
        for _ in range(repeat):
            c0, t0 = time.process_time(), time.perf_counter()
            n = one_pass()
            t, c = time.perf_counter() - t0, time.process_time() - c0
            if best is None or t < best[0]:
                best = (t, c, n)
        t, c, n = best
        # Pixels against libjpeg's, first batch.
        diffs = []
        for k in range(min(batch, len(blobs))):
            ref = cv2.imdecode(np.frombuffer(blobs[k], np.uint8), cv2.IMREAD_COLOR).astype(np.int16)
            got = outputs[k].cpu().numpy().astype(np.int16)
            if got.shape == ref.shape:
                diffs.append(np.abs(got - ref).reshape(-1, 3))
        d = np.concatenate(diffs) if diffs else np.zeros((1, 3))
        return {"run": "nvjpeg", "backend": backend, "batch": batch, "images": n, "img_s": round(n / t, 1),
                "cpu_ms_per_image": round(1000 * c / n, 3),
                "mean_abs_diff_bgr": [round(float(x), 3) for x in d.mean(axis=0)],
                "max_abs_diff_bgr": [int(x) for x in d.max(axis=0)],
                "differing_share": round(float((d != 0).any(axis=1).mean()), 4)}
    finally:
        if state:
            lib.nvjpegJpegStateDestroy(state)
        lib.nvjpegDestroy(handle)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", default=default_images())
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", default="1,4")
    ap.add_argument("--copies", type=int, default=4, help="the folder's files listed this many times")
    a = ap.parse_args()
    if not a.images or not os.path.isdir(a.images):
        raise SystemExit("nvjpeg_decode: no image folder (give --images DIR)")
    files = sorted(glob.glob(os.path.join(a.images, "*.jpg")))
    blobs = [open(f, "rb").read() for f in files] * a.copies
    print("images: %d (%d files of %s, %d times), %.1f MB of JPEG" % (
        len(blobs), len(files), a.images, a.copies, sum(map(len, blobs)) / 1e6))
    results = [cpu_run(blobs, int(t), a.repeat) for t in a.threads.split(",")]
    for r in results:
        print(json.dumps(r))
    base = results[0]
    lib, name = load_nvjpeg()
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        torch, cuda = None, False
    if lib is None or not cuda:
        print("nvjpeg: not available here (%s)" % ("no CUDA device for torch" if lib else "no libnvjpeg found"))
        return
    print("nvjpeg: %s, %s" % (name, torch.cuda.get_device_name()))
    for backend in ("hardware", "gpu_hybrid", "hybrid"):
        try:
            r = nvjpeg_run(lib, torch, blobs, backend, a.batch, a.repeat)
        except RuntimeError as e:
            print(json.dumps({"run": "nvjpeg", "backend": backend, "error": str(e)}))
            continue
        print(json.dumps(r))
        print("nvjpeg %s / cpu %d thread: %.2fx img/s, CPU ms per image %.3f vs %.3f" % (
            backend, base["threads"], r["img_s"] / base["img_s"], r["cpu_ms_per_image"], base["cpu_ms_per_image"]))


if __name__ == "__main__":
    main()
