"""Where the Python tests find the data: ../shared next to the source tree (YOLOFLOW_SHARED_DIR
overrides), the build's package on PYTHONPATH (the ctest test sets it)."""

import os
import shutil

import pytest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("YOLOFLOW_SHARED_DIR") or os.path.normpath(os.path.join(SOURCE, "..", "shared"))
COCO128 = os.path.join(SHARED, "datasets", "coco128")
COCO128_YAML = os.path.join(COCO128, "data.yaml")
# An Ultralytics checkpoint of YOLO11n with the 80 COCO classes, as a user brings one.
ULTRALYTICS_BEST = os.path.join(SHARED, "fixtures", "ultralytics-checkpoints", "yolo11n-coco80-best.pt")
# YOLO11n weights trained 100 epochs on coco128 (a plain state dict): a model that detects.
COCO128_STATE_DICT = os.path.join(SHARED, "fixtures", "coco128-val-parity", "coco128-yolo11n.pt")


def coco128_images(n, split="train2017"):
    folder = os.path.join(COCO128, "images", split)
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder))[:n]]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh working folder (runs/ are written there) with the released name yolo11n.pt in
    the weights folder, so that YOLO("yolo11n.pt") finds it without fetching."""
    weights = tmp_path / "weights-cache"
    weights.mkdir()
    shutil.copy(ULTRALYTICS_BEST, weights / "yolo11n.pt")
    monkeypatch.setenv("YOLOFLOW_WEIGHTS_DIR", str(weights))
    monkeypatch.setenv("YOLOFLOW_ASSETS_URL", "http://127.0.0.1:9/none")  # never the network
    run = tmp_path / "work"
    run.mkdir()
    monkeypatch.chdir(run)
    return run
