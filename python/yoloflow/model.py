"""``YOLO``: Ultralytics' Python calls on yoloflow's C++ trainer, validator, predictor and
exporter. Every call runs the command of the ``yoloflow`` program with the same words
(``model.train(data="coco8.yaml", epochs=3)`` is ``yoloflow train model=... data=coco8.yaml
epochs=3``), so its defaults, checks and refusals are the command line's; a refusal is raised
as ``InvalidArgument`` (a ``ValueError``) whose message is the command's line."""

import json
import os
import queue
import tempfile
import threading

from . import _yoloflow
from .callbacks import EVENTS, Progress, TrainerState, check_event, in_notebook
from .results import DetMetrics, Results
from .words import word, words

__all__ = ["YOLO", "YoloflowError", "InvalidArgument"]

_EXIT_INVALID = 2
_EXIT_PLUGIN = 3
_EXIT_INTERRUPTED = 130


class YoloflowError(RuntimeError):
    """A command that failed; ``exit_code`` is what the ``yoloflow`` program would exit with."""

    def __init__(self, message, exit_code=1):
        super().__init__(message)
        self.exit_code = exit_code


class InvalidArgument(YoloflowError, ValueError):
    """Bad input found before anything ran (an argument, a file, a dataset): exit code 2."""


def _plugin_dirs():
    """The plugins' folder: build/plugins beside build/python, or <prefix>/lib/yoloflow/plugins."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = []
    for rel in (("..", "..", "plugins"), ("..", "..", "..", "yoloflow", "plugins")):
        d = os.path.normpath(os.path.join(here, *rel))
        if os.path.isdir(d):
            found.append(d)
    return found


class _KeepsError:
    """Where C++ calls into Python: the first Python exception raised there (module.cpp hands it
    to _keep_error), raised again once the command returns."""

    error = None

    def _keep_error(self, kind, value, trace):
        if self.error is None:
            self.error = value.with_traceback(trace) if value is not None else kind()


class _Command(_KeepsError):
    """What one command hands back (cli/command_observer.h), and a Python exception raised in it."""

    def __init__(self, on_prediction=None):
        self.run_dir = None
        self.by_signal = False
        self.metrics = None
        self.metrics_dir = None
        self.model = None
        self.exported_file = None
        self.error = None
        self._on_prediction = on_prediction

    def run_folder(self, path):
        self.run_dir = path

    def run_ended(self, by_signal):
        self.by_signal = by_signal

    def validated(self, document, folder):
        self.metrics = json.loads(document)
        self.metrics_dir = folder

    def described(self, document):
        self.model = json.loads(document)

    def exported(self, path):
        self.exported_file = path

    def predicted(self, path, frame, image, arrays, names, speed):
        if self._on_prediction is None:
            return None
        return self._on_prediction(Results(image, path, names, arrays[0], arrays[1], speed, frame))


class _Hooks(_KeepsError):
    """The trainer's hooks as Ultralytics' events, with the progress shown."""

    def __init__(self, callbacks, progress):
        self.callbacks = callbacks
        self.progress = progress
        self.state = TrainerState()
        self.error = None
        self.last_metrics = None

    def hook(self, event, details):
        s = self.state
        for key in ("epoch", "epochs", "step", "steps_in_epoch", "global_step", "fitness", "resumed"):
            if key in details:
                setattr(s, key, details[key])
        if event == "on_train_start":
            s.save_dir = details["save_dir"]
            s.names = dict(enumerate(details["names"]))
        if event == "on_train_batch_start" and details.get("step") == 0:
            self._fire("on_train_epoch_start")
        if event == "on_fit_epoch_end":
            s.metrics = dict(details["metrics"])
            if details.get("validated"):
                self.last_metrics = dict(s.metrics, fitness=details.get("fitness"))
            self.progress.epoch_end(s)
            self._fire("on_train_epoch_end")
        if event == "on_train_batch_end":
            self.progress.batch_end(s)
        if event == "on_train_end":
            self.progress.close()
        self._fire(event)
        if self.error is not None:
            return "a Python callback raised %s: %s" % (type(self.error).__name__, self.error)
        if s.stop:
            s.stop = False
            return "a Python callback set trainer.stop"
        return None

    def _fire(self, event):
        for fn in self.callbacks.get(event, ()):
            if self.error is not None:
                return
            try:
                fn(self.state)
            except BaseException as e:  # KeyboardInterrupt too: the run stops and saves, then it is raised
                self.error = e


def _execute(args, command, saves=True, hooks=None, capture=False, show=True, quiet=False):
    """Runs one command. `capture`: what it prints comes back through Python (printed when
    `show`), so that a notebook shows it; otherwise it goes to the process's stdout as it comes.
    `quiet` (verbose=False): its log shows warnings and errors only."""
    verb = args[0]
    args = (["--log-level", "warn"] if quiet else []) + list(args)
    code, error, output = _yoloflow.run(args, command, saves, hooks, _plugin_dirs(), capture)
    if capture and show and output:
        print(output, end="" if output.endswith("\n") else "\n", flush=True)
    if command.error is not None:
        raise command.error
    if hooks is not None and hooks.error is not None:
        raise hooks.error
    if code == 0:
        return
    if code == _EXIT_INTERRUPTED:
        raise KeyboardInterrupt(error or "yoloflow %s was interrupted" % verb)
    message = error or "yoloflow %s failed with exit code %d (its output above says why)" % (verb, code)
    raise (InvalidArgument if code == _EXIT_INVALID else YoloflowError)(message, code)


def _validated_metrics(row, run_dir, names):
    document = {k: v for k, v in row.items() if k.startswith("metrics/")}
    document["fitness"] = row.get("fitness", document.get("metrics/mAP50-95(B)"))
    document["names"] = [names[i] for i in sorted(names)]
    return DetMetrics(document, run_dir)


class YOLO:
    """A model: a weights file (a yoloflow run's ``best.pt`` or ``last.pt``, an Ultralytics
    checkpoint, a released name such as ``yolo11n.pt``, fetched on first use) or an architecture
    (``yolo11n``, ``yolo11s-seg.yaml``, a model yaml of yours)."""

    def __init__(self, model="yolo11n.pt", task=None, verbose=False):
        model = os.fspath(model)
        if not model:
            raise InvalidArgument("YOLO(model): give a weights file or an architecture, e.g. YOLO('yolo11n.pt')", 2)
        self.model_name = model
        self.ckpt_path = model if model.endswith(".pt") else None
        self.task = task or ("segment" if "-seg" in os.path.basename(model) else "detect")
        self.callbacks = {e: [] for e in EVENTS}
        self.metrics = None
        self.trainer = None
        self.verbose = verbose
        self._model = None  # what `info` says of it, read on first use
        self._weights = None  # load(): weights for this architecture

    def __repr__(self):
        return "YOLO(%r)" % self.model_name

    def load(self, weights):
        """Gives an architecture (``YOLO("yolo11n.yaml")``) these weights: a PyTorch state dict
        (``torch.save(model.state_dict())``, Ultralytics' names) or a checkpoint. train() starts
        from them (``pretrained=``); val, predict and export run them. Returns the model."""
        weights = os.fspath(weights)
        if self.model_name.endswith(".pt"):
            raise InvalidArgument("YOLO(%r).load(%r): load() gives an architecture its weights; this model is a "
                                  "weights file already (YOLO(%r) runs those)" % (self.model_name, weights, weights), 2)
        self._weights = weights
        self._model = None
        return self

    def _architecture(self):
        name = os.path.basename(self.model_name)
        return name[:-5] if name.endswith(".yaml") and not os.path.isfile(self.model_name) else self.model_name

    def _model_words(self, kwargs):
        """model= (and the architecture of loaded weights) for val, predict, export."""
        if "model" in kwargs:
            return [word("model", kwargs.pop("model"))]
        if self._weights is not None:
            return [word("model", self._weights), "--model", self._architecture()]
        return [word("model", self.model_name)]

    def _run_verb(self, verb, kwargs):
        """val or export with these words, its output shown through Python; what it handed back."""
        kwargs = dict(kwargs)
        verbose = kwargs.pop("verbose", True)
        args = [verb] + self._task_words(kwargs) + self._model_words(kwargs) + words(kwargs)
        command = _Command()
        _execute(args, command, capture=True, show=bool(verbose), quiet=not verbose)
        return command

    def _task_words(self, kwargs):
        # task= is the command's task word (detect or segment); the model says its own otherwise.
        return [word("task", kwargs.pop("task"))] if "task" in kwargs else []

    # --- what the model is -------------------------------------------------------------------
    def _described(self):
        if self._model is None:
            command = _Command()
            _execute(["info"] + self._model_words({}), command, capture=True, show=False, quiet=True)
            self._model = command.model
        return self._model

    @property
    def names(self):
        """{class id: name}: the weights' class names (an architecture's are its ids)."""
        m = self._described()
        names = m.get("names") or [str(i) for i in range(m["nc"])]
        return dict(enumerate(names))

    def info(self, detailed=False, verbose=True, imgsz=None):
        """Prints the layer table; returns (layers, parameters, gradients, GFLOPs)."""
        args = ["info"] + self._model_words({})
        if imgsz is not None:
            args.append(word("imgsz", imgsz))
        command = _Command()
        _execute(args, command, capture=True, show=verbose, quiet=not verbose)
        self._model = command.model if imgsz is None else self._model
        m = command.model
        return m["layers"], m["parameters"], m["gradients"], m["gflops"]

    # --- the commands --------------------------------------------------------------------------
    def add_callback(self, event, func):
        """Calls ``func(trainer)`` at ``event`` of every later train() (yoloflow.callbacks.EVENTS)."""
        check_event(event)
        if not callable(func):
            raise TypeError("add_callback(%r, func): func must be callable" % event)
        self.callbacks[event].append(func)

    def clear_callback(self, event):
        check_event(event)
        self.callbacks[event] = []

    def train(self, trainer=None, **kwargs):
        """Trains as ``yoloflow train`` does with these words; returns the last validation's
        metrics (DetMetrics; per-class arrays come from val()). ``pipeline=FILE.json`` trains that
        pipeline instead of the shipped recipe. After it the model is the run's best.pt."""
        if trainer is not None:
            raise InvalidArgument("train(trainer=...): a custom trainer class is not supported; the trainer is "
                                  "yoloflow's C++ one (pipelines and plugins extend it: docs/python.md)", 2)
        kwargs = dict(kwargs)
        verbose = kwargs.pop("verbose", True)
        pipeline = kwargs.pop("pipeline", None)
        args = ["train"] + self._task_words(kwargs)
        if pipeline is not None:
            args.append(os.fspath(pipeline))
        if "model" not in kwargs and pipeline is None:
            kwargs = dict(model=self.model_name, **kwargs)
            if self._weights is not None and "pretrained" not in kwargs:
                kwargs["pretrained"] = self._weights
        args += words(kwargs)
        command = _Command()
        hooks = _Hooks(self.callbacks, Progress(enabled=bool(verbose) and in_notebook()))
        try:
            # verbose=False: the trainer's lines kept from the terminal, its log warnings only.
            _execute(args, command, hooks=hooks, capture=not verbose, show=False, quiet=not verbose)
        finally:
            hooks.progress.close()
            self.trainer = hooks.state
        run = command.run_dir
        if run is None:
            return None  # nothing ran (a throughput pipeline, or nothing to train)
        if command.by_signal:
            raise KeyboardInterrupt("training stopped by an interrupt; %s/weights/last.pt holds it: continue with "
                                    "YOLO(%r).train(resume=True)" % (run, os.path.join(run, "weights", "last.pt")))
        for name in ("best.pt", "last.pt"):
            path = os.path.join(run, "weights", name)
            if os.path.exists(path):
                self.ckpt_path = self.model_name = path
                self._model = None
                break
        self.metrics = (_validated_metrics(hooks.last_metrics, run, hooks.state.names)
                        if hooks.last_metrics is not None else None)
        return self.metrics

    def val(self, **kwargs):
        """Validates as ``yoloflow val`` does; returns DetMetrics (box.map, box.map50, ... and
        per-class arrays) and writes its folder (metrics.json, plots)."""
        command = self._run_verb("val", kwargs)
        document = command.metrics or {}
        self.metrics = DetMetrics(document, command.metrics_dir)
        return self.metrics

    def predict(self, source=None, stream=False, **kwargs):
        """Detects objects as ``yoloflow predict`` does; returns a list of Results (a generator
        with stream=True). ``source``: a file, folder, glob, video, .txt list, an http(s) URL of
        an image or video, a list of those, an (H, W, 3) BGR numpy array or a Pillow image. Nothing is written unless save=True (then the annotated
        images go to the run folder, as the command writes them)."""
        kwargs = dict(kwargs)
        save = bool(kwargs.pop("save", False))
        verbose = kwargs.pop("verbose", True)
        # show=True: each result shown as it comes (Results.show: a notebook's cell, else Pillow's
        # viewer); the command itself opens no window.
        show = bool(kwargs.pop("show", False))
        if source is None:
            raise InvalidArgument("predict(source=...): give an image, a folder, a glob, a video or a list of them", 2)
        temporary = tempfile.TemporaryDirectory(prefix="yoloflow-source-")
        try:
            source_word = _source_word(source, temporary.name)
        except BaseException:
            temporary.cleanup()
            raise
        args = ["predict"] + self._task_words(kwargs) + self._model_words(kwargs)
        args += words(kwargs) + [word("source", source_word)]
        if not stream:
            results = []
            def keep(result):
                results.append(result)
                if show:
                    result.show()

            command = _Command(on_prediction=keep)
            try:
                _execute(args, command, saves=save, capture=True, show=bool(verbose), quiet=not verbose)
            finally:
                temporary.cleanup()
            for r in results:
                r.save_dir = command.run_dir
            return results
        return _stream(args, save, bool(verbose), temporary, show)

    __call__ = predict

    def export(self, **kwargs):
        """Exports as ``yoloflow export`` does (format=onnx); returns the file written."""
        return self._run_verb("export", kwargs).exported_file


def _is_pil_image(item):
    return type(item).__module__.startswith("PIL.") and hasattr(item, "convert")


def _source_word(source, folder):
    """A source as the command's --source: arrays (BGR, as OpenCV's) and Pillow images (RGB)
    written as PNG files, lists as a .txt list; paths, folders, globs and URLs as they are."""
    import numpy as np

    if isinstance(source, np.ndarray) or _is_pil_image(source):
        source = [source]
    if isinstance(source, (list, tuple)):
        lines = []
        for i, item in enumerate(source):
            if _is_pil_image(item):
                item = np.asarray(item.convert("RGB"))[:, :, ::-1]
            if isinstance(item, np.ndarray):
                path = os.path.join(folder, "image%d.png" % i)
                _yoloflow.save_image(path, item)
                lines.append(path)
            else:
                lines.append(os.fspath(item))
        listing = os.path.join(folder, "sources.txt")
        with open(listing, "w") as f:
            f.write("\n".join(lines) + "\n")
        return listing
    return os.fspath(source)


def _stream(args, save, verbose, temporary, show=False):
    """Results one at a time: the command runs on a thread, at most two results ahead."""
    ready = queue.Queue(maxsize=2)
    closed = threading.Event()
    done = object()

    def hand_over(result):
        while not closed.is_set():
            try:
                ready.put(result, timeout=0.1)
                return None
            except queue.Full:
                continue
        return "the generator was closed"

    command = _Command(on_prediction=hand_over)
    failure = []

    def work():
        try:
            # Its lines go to stdout as they come (or nowhere when not verbose).
            _execute(args, command, saves=save, capture=not verbose, show=False, quiet=not verbose)
        except BaseException as e:
            failure.append(e)
        finally:
            while True:
                try:
                    ready.put(done, timeout=0.1)
                    break
                except queue.Full:
                    if closed.is_set():
                        break

    thread = threading.Thread(target=work, name="yoloflow-predict", daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if item is done:
                break
            item.save_dir = command.run_dir
            if show:
                item.show()
            yield item
    finally:
        closed.set()
        thread.join()
        temporary.cleanup()
    if failure:
        raise failure[0]
