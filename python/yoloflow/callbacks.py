"""Python functions called at the trainer's hooks (``YOLO.add_callback``) and the progress a
training shows in a terminal or a notebook.

The events are Ultralytics' names for the points yoloflow's trainer has (sdk callback.h):

============================  =================================================================
``on_train_start``            once, before the first batch (again when a run is resumed)
``on_train_epoch_start``      before an epoch's first batch
``on_train_batch_start``      before each batch's training step
``on_train_batch_end``        after it
``optimizer_step``            after every optimizer step
``on_val_start``              before each validation during training
``on_val_end``                after it
``on_train_epoch_end``        after an epoch, its validation included (Ultralytics calls it
                              before the validation: here the epoch's metrics are there already)
``on_fit_epoch_end``          after an epoch and its validation, before its checkpoint is written
``on_train_end``              once, when the run ends or is stopped
============================  =================================================================

Each function gets one argument, the ``trainer``: the run as it stands (``epoch``, ``epochs``,
``step``, ``steps_in_epoch``, ``global_step``, ``metrics``, ``save_dir``, ``names``). Setting
``trainer.stop = True`` ends the run after the hook (an epoch end still writes its checkpoints),
as Ultralytics' early stopping does. An exception ends the run the same way, after which it is
raised again from ``train()``.
"""

import difflib
import sys
import time

__all__ = ["EVENTS", "check_event", "TrainerState", "Progress", "in_notebook"]

EVENTS = (
    "on_train_start",
    "on_train_epoch_start",
    "on_train_batch_start",
    "on_train_batch_end",
    "optimizer_step",
    "on_val_start",
    "on_val_end",
    "on_train_epoch_end",
    "on_fit_epoch_end",
    "on_train_end",
)

# Ultralytics' events that yoloflow's trainer has no point for: refused with the reason.
_NOT_HERE = {
    "on_pretrain_routine_start": "the run is built by the C++ trainer before any Python code runs; use on_train_start",
    "on_pretrain_routine_end": "the run is built by the C++ trainer before any Python code runs; use on_train_start",
    "on_model_save": "checkpoints are written by the C++ trainer after on_fit_epoch_end; use on_fit_epoch_end",
    "on_params_update": "there is no such point in yoloflow's trainer",
    "teardown": "use on_train_end",
    "on_before_zero_grad": "gradients are cleared inside the C++ step; use optimizer_step",
}


def check_event(event):
    """Raises ValueError in one line for an event that is not one of EVENTS."""
    if event in EVENTS:
        return
    if event in _NOT_HERE:
        raise ValueError("callback event '%s' is not supported by yoloflow: %s" % (event, _NOT_HERE[event]))
    guess = difflib.get_close_matches(event, EVENTS, n=1)
    raise ValueError(
        "unknown callback event '%s'%s; the events are: %s"
        % (event, "; did you mean '%s'?" % guess[0] if guess else "", ", ".join(EVENTS))
    )


class TrainerState:
    """What a callback is given: the run as it stands at the hook."""

    def __init__(self):
        self.epoch = 0
        self.epochs = 0
        self.step = 0
        self.steps_in_epoch = 0
        self.global_step = 0
        self.metrics = {}
        self.fitness = None
        self.save_dir = None
        self.names = {}
        self.resumed = False
        self.stop = False

    def __repr__(self):
        return "TrainerState(epoch=%d/%d, step=%d/%d, save_dir=%r)" % (
            self.epoch, self.epochs, self.step, self.steps_in_epoch, self.save_dir)


def in_notebook():
    """Whether this runs in a Jupyter kernel, whose cells show what Python prints but not what
    C++ writes to the process's stdout and stderr."""
    shell = sys.modules.get("IPython")
    try:
        return shell is not None and shell.get_ipython() is not None and "IPKernelApp" in shell.get_ipython().config
    except Exception:
        return False


class Progress:
    """In a notebook, an epoch's progress bar (tqdm where it can be imported) and one line per
    finished epoch, written by Python so that the cell shows them; elsewhere the trainer's own
    lines (and its status line in a terminal) say the same."""

    def __init__(self, enabled=True):
        self.enabled = enabled
        self._bar = None
        self._tqdm = None
        self._start = time.time()
        if enabled:
            try:
                from tqdm.auto import tqdm  # noqa: F401 (optional)

                self._tqdm = tqdm
            except Exception:
                self._tqdm = None

    def batch_end(self, trainer):
        if not self.enabled or self._tqdm is None:
            return
        if self._bar is None:
            self._bar = self._tqdm(total=trainer.steps_in_epoch, desc="epoch %d/%d" % (trainer.epoch + 1, trainer.epochs),
                                   unit="batch", leave=False, file=sys.stdout)
        self._bar.update(max(0, trainer.step - self._bar.n))

    def epoch_end(self, trainer):
        if not self.enabled:
            return
        self.close()
        m = trainer.metrics
        shown = [k for k in ("train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/precision(B)",
                             "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)") if k in m]
        text = "  ".join("%s %.4g" % (k.split("/")[-1], m[k]) for k in shown)
        print("epoch %d/%d  %s  (%.0f s)" % (trainer.epoch + 1, trainer.epochs, text, time.time() - self._start),
              file=sys.stdout, flush=True)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None
