"""Trains with Ultralytics (its own package, through its public API) and prints one JSON line
measured the way the yoloflow bench scripts measure their own runs, so the two stand side by side
in one invocation:

- img_s: images per second of each training epoch (from Ultralytics' on_train_epoch_start to
  on_train_epoch_end; IMAGES_PER_EPOCH images), the mean of the epochs after the first;
- gpu_util: mean NVML utilisation (nvidia-smi, every 200 ms) from the start of epoch 2 to the
  start of the last epoch (the steady epochs, their validation and checkpoints included);
- peak_reserved_GiB: torch.cuda.max_memory_reserved() over the run;
- first_step_s: seconds from the process start to the end of the first training batch (the first
  batch steps the optimizer: Ultralytics' warm-up starts at accumulate 1), after synchronising;
- wall_s, epochs, mAP50, mAP50_95 (the last epoch's validation, when there is one; mAP50_95_M,
  the mask mAP50-95, for a segmentation model).
Where python3 cannot import Ultralytics, the line says so ("error") and the exit code is 1.

usage: python3 bench/gpu/ultralytics_train.py NAME DATA_YAML MODEL_YAML EPOCHS BATCH IMGSZ
       IMAGES_PER_EPOCH PROJECT_DIR [KEY=VALUE ...]
The KEY=VALUE words go to YOLO(...).train() as they are (cache=ram, workers=8, val=False, ...);
values True/False and numbers are converted.
"""
import csv
import json
import os
import subprocess
import sys
import threading
import time

STARTED = time.time()
try:
    import psutil

    STARTED = psutil.Process().create_time()  # the process start, before the imports
except Exception:  # psutil missing: the script's start, a little later
    pass


def value(text):
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class GpuSampler:
    """nvidia-smi's utilisation of GPU 0 every 200 ms, with the host time of each reading."""

    def __init__(self):
        self.samples = []
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", "-i", "0", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "200"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.proc = None
            return
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        for line in self.proc.stdout:
            try:
                self.samples.append((time.time(), float(line.strip())))
            except ValueError:
                pass

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()

    def mean(self, start, end):
        v = [u for t, u in self.samples if start <= t < end]
        return round(sum(v) / len(v), 1) if v else None


def main(argv):
    if len(argv) < 8:
        sys.exit(__doc__)
    name, data, model, epochs, batch, imgsz, per_epoch, project = argv[:8]
    extra = dict(w.split("=", 1) for w in argv[8:])
    try:
        import torch
        import ultralytics
        import ultralytics.engine.trainer as trainer_module
        from ultralytics import YOLO
    except ImportError as e:
        print(json.dumps({"name": name, "error": "python3 cannot import ultralytics on this machine (%s)" % e}), flush=True)
        return 1

    trainer_module.check_amp = lambda *a, **k: True  # no network: skip the model download it would try
    out = {"name": name, "tool": "ultralytics " + ultralytics.__version__}
    epoch_start, epoch_end, first = [], [], []

    def on_epoch_start(trainer):
        epoch_start.append(time.time())

    def on_epoch_end(trainer):
        epoch_end.append(time.time())

    def on_batch_end(trainer):
        if not first:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            first.append(time.time())

    gpu = GpuSampler()
    yolo = YOLO(model)
    yolo.add_callback("on_train_epoch_start", on_epoch_start)
    yolo.add_callback("on_train_epoch_end", on_epoch_end)
    yolo.add_callback("on_train_batch_end", on_batch_end)
    args = dict(data=data, epochs=int(epochs), batch=int(batch), imgsz=int(imgsz), device=0, project=project, name="r",
                exist_ok=True, plots=False)
    args.update({k: value(v) for k, v in extra.items()})
    rc = 0
    try:
        yolo.train(**args)
    except Exception as e:  # the figures so far, and why it stopped
        out["error"] = "%s: %s" % (type(e).__name__, e)
        rc = 1
    gpu.stop()
    end = time.time()
    out["exit"] = rc
    out["wall_s"] = round(end - STARTED, 1)
    out["epochs"] = len(epoch_end)
    rates = [int(per_epoch) / (b - a) for a, b in zip(epoch_start, epoch_end)]
    if rates:
        steady = rates[1:] or rates
        out["img_s"] = round(sum(steady) / len(steady), 1)
        out["img_s_per_epoch"] = [round(r) for r in rates]
    if len(epoch_start) >= 3:
        out["gpu_util"] = gpu.mean(epoch_start[1], epoch_start[-1])
    if torch.cuda.is_available():
        out["peak_reserved_GiB"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
    if first:
        out["first_step_s"] = round(first[0] - STARTED, 2)
    results = os.path.join(project, "r", "results.csv")
    try:
        rows = [{k.strip(): v for k, v in r.items()} for r in csv.DictReader(open(results))]
        out["mAP50"] = float(rows[-1]["metrics/mAP50(B)"])
        out["mAP50_95"] = float(rows[-1]["metrics/mAP50-95(B)"])
        if "metrics/mAP50-95(M)" in rows[-1]:  # a segmentation run: its mask mAP too
            out["mAP50_95_M"] = float(rows[-1]["metrics/mAP50-95(M)"])
    except (OSError, KeyError, ValueError, IndexError):
        pass
    print(json.dumps(out), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
