"""yoloflow: train and run YOLO11 detectors with a C++ trainer, from Python as from Ultralytics.

    from yoloflow import YOLO
    model = YOLO("yolo11n.pt")
    metrics = model.train(data="coco8.yaml", epochs=3, imgsz=640)
    results = model.predict("bus.jpg")

docs/python.md lists the calls and what differs from Ultralytics."""


def _check_torch():
    # The module links one LibTorch; an interpreter whose torch is another cannot share the
    # process with it (two LibTorch libraries in one process crash on the first tensor).
    from . import _build

    try:
        import torch
    except Exception:
        return
    theirs = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    ours = ".".join(_build.TORCH_VERSION.split(".")[:2])
    if theirs != ours:
        raise ImportError(
            "yoloflow was built with LibTorch %s but this interpreter's torch is %s (%s): import yoloflow "
            "from an interpreter whose torch is %s, or build yoloflow against this torch "
            "(cmake -DCMAKE_PREFIX_PATH=$(python -c 'import torch; print(torch.utils.cmake_prefix_path)'))"
            % (_build.TORCH_VERSION, torch.__version__, torch.__file__, ours)
        )


def _load_libstdcxx_globally():
    # The C++ standard library first in the process's global scope, as a C++ program has it: a
    # library built against a static third-party archive may carry (and export) copies of its
    # template code, which would otherwise be found before the real one for this module's
    # libraries (they are loaded in a local scope) and crash on the first stream write.
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("stdc++") or "libstdc++.so.6"
    try:
        ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass


_check_torch()
_load_libstdcxx_globally()

from . import _yoloflow  # noqa: E402
from .callbacks import EVENTS  # noqa: E402
from .model import YOLO, InvalidArgument, YoloflowError  # noqa: E402
from .results import Boxes, DetMetrics, Masks, Metric, Results  # noqa: E402

__version__ = _yoloflow.version
__all__ = ["YOLO", "YoloflowError", "InvalidArgument", "Results", "Boxes", "Masks", "Metric", "DetMetrics",
           "EVENTS", "__version__"]
