"""ONNX Runtime on yoloflow's YOLO11-seg exports against Ultralytics' own model of the same weights.

    python3 bench/gpu/seg_onnx_parity.py ULTRALYTICS.pt FP32.onnx DYNAMIC.onnx HALF.onnx

ULTRALYTICS.pt is `yoloflow weights export --format ultralytics` of the checkpoint the .onnx files
were exported from (`yoloflow export`: fixed 640 fp32, --dynamic, --half). Ultralytics' model
(fp32, eval) gives output0 (B, 4 + nc + 32, anchors) and the prototypes (B, 32, H/4, W/4) for
random inputs; ONNX Runtime (CUDA provider, else CPU) runs each file on the same inputs. Prints
the largest differences per output and one JSON line; exits 1 when a file's outputs differ by more
than its tolerance (fp32 1e-3 of the largest magnitude, fp16 2e-2).
Imports and calls Ultralytics only (AGPL-3.0; none of its code is copied).
"""
import json
import sys

import numpy as np
import onnxruntime as ort
import torch


def run_ultralytics(weights, x):
    ckpt = torch.load(weights, map_location="cpu", weights_only=False)
    model = (ckpt.get("ema") or ckpt["model"]).float().eval()
    with torch.no_grad():
        (output0, proto), _ = model(torch.from_numpy(x))
    return output0.numpy(), proto.numpy()


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    weights, fixed, dynamic, half = argv[1:5]
    providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in ort.get_available_providers()]
    rng = np.random.default_rng(7)
    cases = [(fixed, (1, 3, 640, 640), np.float32, 1e-3), (dynamic, (2, 3, 480, 640), np.float32, 1e-3),
             (dynamic, (1, 3, 320, 416), np.float32, 1e-3), (half, (1, 3, 640, 640), np.float16, 2e-2)]
    report, ok = [], True
    for path, shape, dtype, tol in cases:
        x = rng.random(shape, dtype=np.float32)
        ref0, ref1 = run_ultralytics(weights, x)
        session = ort.InferenceSession(path, providers=providers)
        names = [o.name for o in session.get_outputs()]
        out = session.run(None, {session.get_inputs()[0].name: x.astype(dtype)})
        got = dict(zip(names, out))
        row = {"file": path.split("/")[-1], "shape": list(shape), "provider": session.get_providers()[0],
               "outputs": names}
        for name, ref in (("output0", ref0), ("output1", ref1)):
            g = got[name].astype(np.float32)
            if g.shape != ref.shape:
                row[name] = f"shape {g.shape} vs Ultralytics {ref.shape}"
                ok = False
                continue
            diff = float(np.abs(g - ref).max())
            scale = float(np.abs(ref).max())
            row[name] = {"max_abs_diff": diff, "max_abs": scale, "ok": diff <= tol * max(scale, 1.0)}
            ok = ok and row[name]["ok"]
        print(f"{row['file']:<28} {str(tuple(shape)):<18} {row['provider']:<22} "
              + "  ".join(f"{n} max|diff| {row[n]['max_abs_diff']:.3g} (of {row[n]['max_abs']:.3g})"
                          if isinstance(row[n], dict) else f"{n} {row[n]}" for n in ("output0", "output1")))
        report.append(row)
    print(json.dumps({"seg_onnx_parity": report, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
