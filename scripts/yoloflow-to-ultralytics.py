#!/usr/bin/env python3
"""Turns a yoloflow checkpoint (RUN/weights/best.pt or last.pt) into an Ultralytics checkpoint.

    python3 yoloflow-to-ultralytics.py IN.pt OUT.pt [--model yolo11n] [--key ema|model] [--imgsz N] [--data D]

OUT.pt is what Ultralytics' own training leaves as best.pt: a dict whose "model" entry is the
network as an Ultralytics DetectionModel / SegmentationModel object. `YOLO("OUT.pt")` loads it,
predicts, validates, exports and fine-tunes from it, with the outputs yoloflow's model gives.

The model is built by the Ultralytics installed for this Python (`pip install ultralytics`), from
its own yolo11{scale}.yaml / yolo11{scale}-seg.yaml, and given the checkpoint's weights (its EMA
unless --key says otherwise), class names and training image size. Every tensor name and shape
must match; nothing is guessed. `yoloflow weights export --format ultralytics` runs this script.

IN may also be a plain state dict (`yoloflow weights export`, torch.save(model.state_dict())):
--model then names its architecture. Reading IN runs no code from it: only tensors, numbers,
strings, lists and dicts are accepted (the globals its pickle names are checked first).

The weights keep the precision they have in IN (a best.pt's float16, a last.pt's float32), so
the converted model computes what yoloflow's does from the same file.

On failure the script prints one line, "error: ...", and exits with 2 (something to fix: a
missing package, a wrong file) or 1 (anything else).
"""
import argparse
import datetime
import json
import os
import pickletools
import re
import sys
import tempfile
import zipfile

YOLOFLOW_FORMAT = "yoloflow-checkpoint-1"
# yolo11n, yolo11n-seg; a model yaml's own scale row after it: yolo11s[0.75,0.375,768].
ARCHITECTURE = re.compile(r"^yolo11([nsmlx])(-seg)?(?:\[([0-9.eE+-]+),([0-9.eE+-]+),([0-9]+)\])?$")
INSTALL = "pip install ultralytics"


class Failure(Exception):
    def __init__(self, message, code=2):
        super().__init__(message)
        self.code = code


def import_torch():
    try:
        import torch
    except ImportError as e:
        raise Failure(f"PyTorch is not installed for {sys.executable} ({e}): {INSTALL} (it brings torch)")
    return torch


def import_ultralytics():
    try:
        import ultralytics
        from ultralytics.nn.tasks import DetectionModel, SegmentationModel
    except ImportError as e:
        if getattr(e, "name", None) == "ultralytics" or "ultralytics" not in sys.modules:
            raise Failure(f"Ultralytics is not installed for {sys.executable}: {INSTALL}")
        raise Failure(f"Ultralytics could not be imported by {sys.executable} ({e}): {INSTALL}")
    return ultralytics, DetectionModel, SegmentationModel


# --- reading IN without running anything from it ------------------------------------------

# What a yoloflow checkpoint or a state dict pickles: tensors (their storages and rebuild
# functions), ordered dicts, and LibTorch's typed-container tag. A file naming anything else is
# refused before it is unpickled.
_ALLOWED = {
    ("collections", "OrderedDict"),
    ("torch._utils", "_rebuild_tensor"),
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    ("torch.jit._pickle", "restore_type_tag"),
    ("torch.jit._pickle", "build_intlist"),
    ("torch.jit._pickle", "build_doublelist"),
    ("torch.jit._pickle", "build_boollist"),
    ("torch.jit._pickle", "build_tensorlist"),
    ("torch", "device"),
}


def _check_globals(path):
    """Every global the file's pickle names must be in _ALLOWED: read from the pickle's opcodes
    before anything is unpickled (torch.load itself would import and call whatever it names)."""
    try:
        with zipfile.ZipFile(path) as z:
            pickles = [n for n in z.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(pickles) != 1:
                raise Failure(f"{path}: not a PyTorch file (a zip archive without one data.pkl)")
            data = z.read(pickles[0])
    except zipfile.BadZipFile:
        raise Failure(f"{path}: not a PyTorch file of the zip format torch.save writes (truncated, damaged, or "
                      f"another kind of file)")

    def check(module, name):
        if (module, name) not in _ALLOWED and not (module == "torch" and str(name).endswith("Storage")):
            hint = " (an Ultralytics checkpoint already)" if str(module).startswith("ultralytics") else ""
            raise Failure(f"{path} holds a Python object of class {module}.{name}{hint}: not a yoloflow checkpoint "
                          f"or state dict")

    # The values pushed last, as far as they are strings (None for anything else), and the memo's
    # strings: STACK_GLOBAL (pickle protocol 4) takes its module and name from the stack.
    pushed, memo = [], {}
    try:
        for op, arg, _ in pickletools.genops(data):
            n = op.name
            if n in ("GLOBAL", "INST"):
                module, _, name = arg.partition(" ")
                check(module, name)
                pushed.append(None)
            elif n == "STACK_GLOBAL":
                module, name = (pushed[-2], pushed[-1]) if len(pushed) >= 2 else (None, None)
                check(module, name)
                pushed.append(None)
            elif n in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"):
                pushed.append(arg)
            elif n == "MEMOIZE":
                memo[len(memo)] = pushed[-1] if pushed else None
            elif n in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = pushed[-1] if pushed else None
            elif n in ("GET", "BINGET", "LONG_BINGET"):
                pushed.append(memo.get(arg))
            elif n not in ("PROTO", "FRAME"):
                pushed.append(None)
    except ValueError as e:
        raise Failure(f"{path}: its pickle is damaged ({e})")


def read_file(torch, path):
    if not os.path.isfile(path):
        raise Failure(f"{path}: no such file")
    _check_globals(path)
    kwargs = {"map_location": "cpu"}
    if "weights_only" in torch.load.__code__.co_varnames:
        kwargs["weights_only"] = False  # _check_globals is the check (LibTorch's type tags are not on torch's list)
    try:
        return torch.load(path, **kwargs)
    except Exception as e:  # truncated, damaged...
        raise Failure(f"{path}: not a readable PyTorch file ({type(e).__name__}: {e})")


def tensor_dict(torch, value):
    return isinstance(value, dict) and all(isinstance(k, str) and torch.is_tensor(v) for k, v in value.items())


def architecture_of(meta):
    """The architecture word a yoloflow checkpoint's meta says ("yolo11n-seg"), else None."""
    arch = meta.get("architecture")
    if isinstance(arch, str) and "[" in arch:  # its own multiples: the model's own name carries them
        return arch
    specs = [meta.get("model")]
    try:
        specs.append(meta["pipeline"]["stages"]["train"]["params"]["model"])
    except (KeyError, TypeError):
        pass
    for spec in specs:
        if isinstance(spec, dict) and spec.get("plugin") == "yolo11":
            params = spec.get("params") or {}
            scale, task = params.get("scale", "n"), params.get("task", "detect")
            return f"yolo11{scale}" + ("-seg" if task == "segment" else "")
        if isinstance(spec, dict) and spec.get("plugin"):
            raise Failure(f"the checkpoint holds a model of the plugin '{spec.get('plugin')}': only yolo11 models "
                          f"have an Ultralytics counterpart")
    arch = meta.get("architecture")
    return arch if isinstance(arch, str) and arch else None


def read_weights(torch, path, key, model_word):
    """-> (weights dict, entry name, architecture word, meta dict)."""
    root = read_file(torch, path)
    if isinstance(root, dict) and root.get("format") == YOLOFLOW_FORMAT:
        meta = root.get("meta")
        try:
            meta = json.loads(meta) if isinstance(meta, str) else (meta or {})
        except ValueError:
            raise Failure(f"{path}: its meta entry is not JSON (a damaged yoloflow checkpoint)")
        if key:
            if key not in ("ema", "model"):
                raise Failure(f"--key {key}: a yoloflow checkpoint holds its weights under ema or model")
            entries = [key]
        else:
            entries = ["ema", "model"]
        for entry in entries:
            weights = root.get(entry)
            if tensor_dict(torch, weights) and weights:
                break
        else:
            raise Failure(f"{path} holds no weights under {' or '.join(entries)}")
        meta = dict(meta) if isinstance(meta, dict) else {}
        if isinstance(root.get("epoch"), int):
            meta["epoch"] = root["epoch"]
        arch = model_word or architecture_of(meta)
        if not arch:
            raise Failure(f"{path} does not say which model it holds: name it with --model (e.g. yolo11n)")
        return weights, entry, arch, meta
    if isinstance(root, dict) and root.get("format"):
        raise Failure(f"{path} is a file of format '{root.get('format')}', not {YOLOFLOW_FORMAT}")
    if tensor_dict(torch, root) and root:
        if key:
            raise Failure(f"--key {key}: {path} is a plain state dict, it has no entries to pick from")
        if not model_word:
            raise Failure(f"{path} is a plain state dict and does not say which model it holds: name it with "
                          f"--model (e.g. yolo11n)")
        return root, "state dict", model_word, {}
    if isinstance(root, dict) and tensor_dict(torch, root.get(key or "state_dict")):
        if not model_word:
            raise Failure(f"{path} does not say which model it holds: name it with --model (e.g. yolo11n)")
        return root[key or "state_dict"], key or "state_dict", model_word, {}
    raise Failure(f"{path} is neither a yoloflow checkpoint nor a state dict (name -> tensor)")


# --- building Ultralytics' model ------------------------------------------------------------


def restore_released_sppf(torch, model):
    """YOLO11 as released (the yolo11n.pt of Ultralytics' releases) has SiLU after the first
    convolution of its SPPF layer, and yoloflow's yolo11 builds it so: its weights were trained
    with it. Some Ultralytics versions (8.4) build SPPF from the yaml without that activation
    (its first Conv made with act=False); such a model would compute something else from the
    same weights. The module's `act` is set back to the activation every other Conv of the model
    uses; torch.save pickles the module with it, so Ultralytics loads it as it loads its released
    weights. Returns how many SPPF layers were changed."""
    from ultralytics.nn.modules.block import SPPF

    changed = 0
    for m in model.modules():
        if isinstance(m, SPPF) and isinstance(getattr(m.cv1, "act", None), torch.nn.Identity):
            m.cv1.act = type(m.cv2.act)()  # the default activation, SiLU, a fresh instance
            changed += 1
    return changed


def check_and_load(torch, model, weights, arch, path):
    theirs = model.state_dict()
    missing = [k for k in theirs if k not in weights]
    unexpected = [k for k in weights if k not in theirs]
    wrong = [k for k in theirs if k in weights and tuple(weights[k].shape) != tuple(theirs[k].shape)]

    def few(names):
        return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append(f"{len(missing)} tensors missing ({few(missing)})")
        if unexpected:
            parts.append(f"{len(unexpected)} not in the model ({few(unexpected)})")
        if wrong:
            k = wrong[0]
            parts.append(f"{len(wrong)} of another shape (e.g. {k}: {tuple(weights[k].shape)} in the file, "
                         f"{tuple(theirs[k].shape)} in the model)")
        raise Failure(f"{path} does not fit Ultralytics' {arch}: " + "; ".join(parts))
    for k, v in weights.items():
        if v.is_floating_point() and not torch.isfinite(v).all():
            raise Failure(f"{path}: tensor {k} holds NaN or infinite values")
    model.load_state_dict({k: v.to(theirs[k].dtype) for k, v in weights.items()}, strict=True)


def class_names(meta, nc):
    names = meta.get("names")
    if isinstance(names, dict):
        names = [names.get(str(i), names.get(i)) for i in range(nc)]
    names = list(names) if isinstance(names, (list, tuple)) else []
    return {i: (str(names[i]) if i < len(names) and names[i] not in (None, "") else str(i)) for i in range(nc)}


def write_atomically(torch, obj, out):
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise Failure(f"{out}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(out) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def convert(args):
    torch = import_torch()
    weights, entry, arch, meta = read_weights(torch, args.src, args.key, args.model)
    m = ARCHITECTURE.match(arch or "")
    if not m:
        raise Failure(f"{arch}: only YOLO11 detection and segmentation models (yolo11n ... yolo11x, yolo11n-seg ...) "
                      f"have an Ultralytics counterpart")
    scale, segment = m.group(1), bool(m.group(2))
    head = "model.23.cv3.0.2.bias"
    if head not in weights:
        raise Failure(f"{args.src} has no {head}: not the weights of a YOLO11 model")
    nc = int(weights[head].shape[0])

    ultralytics, DetectionModel, SegmentationModel = import_ultralytics()
    from ultralytics.cfg import DEFAULT_CFG_DICT

    yaml_name = f"yolo11{scale}{'-seg' if segment else ''}.yaml"
    cfg = yaml_name
    if m.group(3):  # the scale row the model was built with, in Ultralytics' own yaml
        from ultralytics.nn.tasks import yaml_model_load

        cfg = yaml_model_load(yaml_name)
        cfg["scales"][scale] = [float(m.group(3)), float(m.group(4)), int(m.group(5))]
    model = (SegmentationModel if segment else DetectionModel)(cfg, nc=nc, verbose=False)
    restore_released_sppf(torch, model)
    check_and_load(torch, model, weights, arch, args.src)

    floats = [v for v in weights.values() if v.is_floating_point()]
    half = bool(floats) and all(v.dtype == torch.float16 for v in floats)
    task = "segment" if segment else "detect"
    imgsz = args.imgsz or (meta.get("imgsz") if isinstance(meta.get("imgsz"), int) else None) or 640
    train_args = dict(DEFAULT_CFG_DICT)
    train_args.update(task=task, mode="train", model=yaml_name, imgsz=imgsz)
    if args.data:
        train_args["data"] = args.data
    for k in ("epochs", "batch", "seed"):
        if isinstance(meta.get(k), int):
            train_args[k] = meta[k]

    model.names = class_names(meta, nc)
    model.args = dict(train_args)
    model.eval()
    for p in model.parameters():
        p.requires_grad = False
    if half:
        model.half()

    checkpoint = {
        "date": datetime.datetime.now().isoformat(),
        "version": ultralytics.__version__,
        "license": "AGPL-3.0 License (https://ultralytics.com/license)",
        "docs": "https://docs.ultralytics.com",
        "epoch": -1,
        "best_fitness": None,
        "model": model,
        "ema": None,
        "updates": None,
        "optimizer": None,
        "scaler": None,
        "train_args": train_args,
        "train_metrics": {},
        "train_results": {},
        "converted_from": {
            "format": YOLOFLOW_FORMAT if entry != "state dict" else "state dict",
            "file": os.path.basename(args.src),
            "weights": entry,
            "architecture": arch,
            "epoch": meta.get("epoch") if isinstance(meta.get("epoch"), int) else None,
        },
    }
    write_atomically(torch, checkpoint, args.out)
    print(f"wrote {args.out}: an Ultralytics {ultralytics.__version__} {type(model).__name__} ({arch}, {nc} classes, "
          f"{'float16' if half else 'float32'}) from the {entry} weights of {args.src}; in Python: "
          f"from ultralytics import YOLO; YOLO('{args.out}')")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="a yoloflow checkpoint (best.pt, last.pt) or a state dict with --model")
    ap.add_argument("out", help="the Ultralytics checkpoint to write (.pt)")
    ap.add_argument("--model", help="architecture, e.g. yolo11n or yolo11n-seg (default: what the checkpoint says)")
    ap.add_argument("--key", help="checkpoint entry holding the weights: ema or model (default: ema, else model)")
    ap.add_argument("--imgsz", type=int, help="training image size to record (default: the checkpoint's, else 640)")
    ap.add_argument("--data", help="dataset yaml to record as the training data (Ultralytics' val uses it)")
    args = ap.parse_args()
    try:
        if not args.out.endswith(".pt"):
            raise Failure(f"{args.out}: Ultralytics loads checkpoints named *.pt; name the output so")
        convert(args)
    except Failure as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(e.code)
    except Exception as e:
        print(f"error: converting {args.src} failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
