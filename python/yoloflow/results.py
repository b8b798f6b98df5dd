"""What ``predict``, ``val`` and ``train`` return, shaped as Ultralytics' objects are: ``Results``
with ``boxes.xyxy``, ``boxes.conf``, ``boxes.cls`` (torch tensors where torch can be imported,
else numpy arrays), ``orig_img``, ``path``, ``plot()``, ``save()``; ``DetMetrics`` with
``box.map``, ``box.map50``, ``box.mp``, ``box.mr`` and per-class arrays."""

import os

import numpy as np

from . import _yoloflow

__all__ = ["Boxes", "Masks", "Results", "Metric", "DetMetrics"]

try:  # torch is optional: where it imports, arrays are tensors as Ultralytics gives them
    import torch as _torch
except Exception:  # pragma: no cover - depends on the interpreter
    _torch = None


def _tensor(array):
    return _torch.from_numpy(np.ascontiguousarray(array)) if _torch is not None else array


class Boxes:
    """Detections of one image in its pixels: ``data`` is (N, 6) x1, y1, x2, y2, conf, cls."""

    def __init__(self, data, orig_shape):
        self._data = np.asarray(data, dtype=np.float32).reshape(-1, 6)
        self.orig_shape = tuple(orig_shape)

    def __len__(self):
        return len(self._data)

    @property
    def data(self):
        return _tensor(self._data)

    @property
    def xyxy(self):
        return _tensor(self._data[:, :4])

    @property
    def conf(self):
        return _tensor(self._data[:, 4])

    @property
    def cls(self):
        return _tensor(self._data[:, 5])

    @property
    def id(self):
        return None  # no tracking

    @property
    def xywh(self):
        b = self._data[:, :4]
        return _tensor(np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2, b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], 1))

    @property
    def xyxyn(self):
        h, w = self.orig_shape
        return _tensor(self._data[:, :4] / np.array([w, h, w, h], dtype=np.float32))

    @property
    def xywhn(self):
        h, w = self.orig_shape
        xywh = np.asarray(self.xywh) if _torch is None else self.xywh.numpy()
        return _tensor(xywh / np.array([w, h, w, h], dtype=np.float32))

    def numpy(self):
        return Boxes(self._data.copy(), self.orig_shape)

    def cpu(self):
        return self

    def __repr__(self):
        return "Boxes(%d detections)" % len(self)


class Masks:
    """A segmentation model's masks, as outlines in the image's pixels: ``xy`` is one (M, 2)
    array per detection (its largest outline), ``xyn`` the same normalised."""

    def __init__(self, outlines, orig_shape):
        self.outlines = outlines  # per detection: every part of its mask's outline
        self.orig_shape = tuple(orig_shape)

    def __len__(self):
        return len(self.outlines)

    @property
    def xy(self):
        return [max(parts, key=len) if parts else np.zeros((0, 2), np.float32) for parts in self.outlines]

    @property
    def xyn(self):
        h, w = self.orig_shape
        return [xy / np.array([w, h], dtype=np.float32) for xy in self.xy]


class Results:
    """One image's (or video frame's) prediction."""

    def __init__(self, orig_img, path, names, boxes, outlines, speed, frame=0, save_dir=None):
        self.orig_img = orig_img  # (H, W, 3) uint8 BGR, as Ultralytics gives it
        self.orig_shape = orig_img.shape[:2]
        self.path = path
        self.frame = frame  # 1-based frame of a video, 0 for an image
        self.names = dict(enumerate(names))
        self.boxes = Boxes(boxes, self.orig_shape)
        self._outlines = outlines
        self.masks = Masks(outlines, self.orig_shape) if any(len(p) for p in outlines) else None
        self.keypoints = None
        self.probs = None
        self.obb = None
        self.speed = {"preprocess": speed[0], "inference": speed[1], "postprocess": speed[2]}
        self.save_dir = save_dir

    def __len__(self):
        return len(self.boxes)

    def plot(self, conf=True, labels=True, boxes=True, line_width=None, img=None):
        """The image with its detections drawn as ``yoloflow predict`` draws them (BGR array)."""
        image = self.orig_img if img is None else img
        return _yoloflow.draw(image, self.boxes._data, self._outlines, [self.names[i] for i in sorted(self.names)],
                              int(line_width or 0), bool(boxes), bool(labels), bool(conf))

    def save(self, filename=None, **plot_args):
        """Writes plot() to ``filename`` (default: results_<image name>); returns the file name."""
        if filename is None:
            filename = "results_" + os.path.basename(self.path)
        _yoloflow.save_image(os.fspath(filename), self.plot(**plot_args))
        return os.fspath(filename)

    def show(self, **plot_args):
        """Shows plot(): in a notebook's cell, else in Pillow's image viewer."""
        drawn = self.plot(**plot_args)
        try:
            from IPython import get_ipython
            from IPython.display import Image, display

            if get_ipython() is not None:
                display(Image(data=_yoloflow.encode_image(".png", drawn)))
                return
        except ImportError:
            pass
        try:
            from PIL import Image as PILImage
        except ImportError:
            raise RuntimeError("show() needs a notebook (IPython) or Pillow to show the image; save() writes it "
                               "to a file") from None
        PILImage.fromarray(np.ascontiguousarray(drawn[:, :, ::-1])).show()

    def verbose(self):
        """'2 persons, 1 dog, ' as Ultralytics' log line has it ('(no detections), ' when none)."""
        if len(self) == 0:
            return "(no detections), "
        counts = {}
        for c in self.boxes._data[:, 5].astype(int):
            counts[c] = counts.get(c, 0) + 1
        return "".join("%d %s%s, " % (n, self.names.get(c, str(c)), "s" * (n > 1)) for c, n in sorted(counts.items()))

    def summary(self, normalize=False, decimals=5):
        """One dict per detection: name, class, confidence, box (x1, y1, x2, y2)."""
        h, w = self.orig_shape
        out = []
        for x1, y1, x2, y2, c, k in self.boxes._data.tolist():
            if normalize:
                x1, x2, y1, y2 = x1 / w, x2 / w, y1 / h, y2 / h
            out.append({"name": self.names.get(int(k), str(int(k))), "class": int(k), "confidence": round(c, decimals),
                        "box": {"x1": round(x1, decimals), "y1": round(y1, decimals), "x2": round(x2, decimals),
                                "y2": round(y2, decimals)}})
        return out

    def to_json(self, normalize=False, decimals=5):
        """summary() as a JSON text."""
        import json

        return json.dumps(self.summary(normalize=normalize, decimals=decimals), indent=2)

    def __repr__(self):
        return "Results(path=%r, %d detections)" % (self.path, len(self))


def _metric(document, name, suffix):
    """A metric as results.csv names it ("metrics/mAP50(B)") or as metrics.json does ("mAP50",
    "mask_mAP50")."""
    for key in ("metrics/%s(%s)" % (name, suffix), name if suffix == "B" else "mask_" + name):
        if key in document:
            return float(document[key])
    return 0.0


class Metric:
    """Box (or mask) metrics: the means and the per-class arrays (classes seen in the labels)."""

    def __init__(self, means, per_class, suffix, nc):
        self.mp = _metric(means, "precision", suffix)
        self.mr = _metric(means, "recall", suffix)
        self.map50 = _metric(means, "mAP50", suffix)
        self.map = _metric(means, "mAP50-95", suffix)
        self.ap_class_index = np.array([c["class"] for c in per_class], dtype=np.int64)
        self.p = np.array([_metric(c, "precision", suffix) for c in per_class])
        self.r = np.array([_metric(c, "recall", suffix) for c in per_class])
        self.ap50 = np.array([_metric(c, "mAP50", suffix) for c in per_class])
        self.ap = np.array([_metric(c, "mAP50-95", suffix) for c in per_class])
        # mAP50-95 per class id, the mean where a class has no labels (as Ultralytics' maps)
        self.maps = np.full(nc, self.map)
        for k, v in zip(self.ap_class_index, self.ap):
            if 0 <= k < nc:
                self.maps[k] = v

    def mean_results(self):
        return [self.mp, self.mr, self.map50, self.map]

    def __repr__(self):
        return "Metric(mp=%.4f, mr=%.4f, map50=%.4f, map=%.4f)" % (self.mp, self.mr, self.map50, self.map)


class DetMetrics:
    """A validation's metrics (``val()``, and ``train()``'s last validation)."""

    def __init__(self, document, save_dir=None):
        self.document = document
        self.save_dir = save_dir
        names = document.get("names")
        per_class = document.get("per_class", [])
        if names is None:
            names = {c["class"]: c.get("name", str(c["class"])) for c in per_class}
        self.names = dict(enumerate(names)) if isinstance(names, list) else dict(names)
        nc = max(len(self.names), max((c["class"] + 1 for c in per_class), default=0))
        self.box = Metric(document, per_class, "B", nc)
        masks = "metrics/mAP50-95(M)" in document or "mask_mAP50-95" in document
        self.seg = Metric(document, per_class, "M", nc) if masks else None
        self.fitness = document.get("fitness", self.box.map)
        self.speed = document.get("speed", {})

    @property
    def results_dict(self):
        """The metrics as results.csv names them, with the fitness."""
        out = {}
        for m, suffix in ((self.box, "B"), (self.seg, "M")):
            if m is not None:
                out.update({"metrics/precision(%s)" % suffix: m.mp, "metrics/recall(%s)" % suffix: m.mr,
                            "metrics/mAP50(%s)" % suffix: m.map50, "metrics/mAP50-95(%s)" % suffix: m.map})
        out["fitness"] = self.fitness
        return out

    @property
    def maps(self):
        return self.box.maps

    @property
    def ap_class_index(self):
        return self.box.ap_class_index

    def mean_results(self):
        return self.box.mean_results()

    def __repr__(self):
        return "DetMetrics(%s, save_dir=%r)" % (
            ", ".join("%s=%.4f" % (k.split("/")[-1], v) for k, v in self.results_dict.items()), self.save_dir)
