"""`from yoloflow import YOLO` as an Ultralytics user calls it: train, val, predict, export,
callbacks, refusals and interrupts, on coco128 on the CPU."""

import csv
import json
import os
import signal

import numpy as np
import pytest

from conftest import COCO128_STATE_DICT, COCO128_YAML, ULTRALYTICS_BEST, coco128_images

import yoloflow
from yoloflow import YOLO, InvalidArgument, YoloflowError

SMALL = dict(data=COCO128_YAML, imgsz=64, batch=16, workers=2, device="cpu")


def trained():
    """YOLO11n trained on coco128: an architecture given its weights, as Ultralytics' load()."""
    return YOLO("yolo11n.yaml").load(COCO128_STATE_DICT)


def results_rows(run_dir):
    with open(os.path.join(run_dir, "results.csv")) as f:
        return list(csv.DictReader(f))


def test_the_documents_example_runs_with_the_import_changed(workdir):
    # Ultralytics' documents: model = YOLO("yolo11s.pt"); results = model.train(data="coco.yaml",
    # imgsz=640, batch=32, workers=8, device=0) -- here small, on the CPU, one epoch.
    model = YOLO("yolo11n.pt")
    results = model.train(data=COCO128_YAML, imgsz=64, batch=16, workers=2, device="cpu", epochs=1)
    assert results is not None
    run = results.save_dir
    assert os.path.isfile(os.path.join(run, "results.csv"))
    rows = results_rows(run)
    assert len(rows) == 1
    # train() returns the last validation's metrics, the same as results.csv's last row
    assert results.box.map == pytest.approx(float(rows[-1]["metrics/mAP50-95(B)"]), abs=1e-5)
    assert results.box.map50 == pytest.approx(float(rows[-1]["metrics/mAP50(B)"]), abs=1e-5)
    assert 0.0 <= results.box.mp <= 1.0 and 0.0 <= results.box.mr <= 1.0
    # the model is now the run's best weights, as after Ultralytics' train()
    assert model.ckpt_path == os.path.join(run, "weights", "best.pt")
    assert model.trainer.save_dir == run and model.trainer.epochs == 1
    assert len(model.names) == 80 and model.names[0] == "person"


def test_callbacks_are_called_in_the_trainers_order(workdir):
    model = YOLO(ULTRALYTICS_BEST)
    events = []
    for event in yoloflow.EVENTS:
        model.add_callback(event, lambda trainer, e=event: events.append((e, trainer.epoch, trainer.step)))
    model.train(epochs=2, **SMALL)
    names = [e for e, _, _ in events]
    assert names[0] == "on_train_start" and names[-1] == "on_train_end"
    assert names.count("on_train_start") == 1 and names.count("on_train_end") == 1
    assert names.count("on_train_epoch_start") == 2 and names.count("on_fit_epoch_end") == 2
    # 128 images in batches of 16: 8 batches an epoch, each with its start and end
    assert names.count("on_train_batch_start") == 16 and names.count("on_train_batch_end") == 16
    assert names.count("optimizer_step") >= 2  # batch 16 accumulates to the nominal 64
    assert names.count("on_val_start") == 2 and names.count("on_val_end") == 2
    for epoch in (0, 1):
        mine = [e for e, ep, _ in events if ep == epoch and e != "on_train_start"]
        assert mine[0] == "on_train_epoch_start" and mine[1] == "on_train_batch_start"
        # validation, then the epoch's end: on_train_epoch_end before on_fit_epoch_end
        tail = [e for e in mine if e in ("on_val_start", "on_val_end", "on_train_epoch_end", "on_fit_epoch_end")]
        assert tail == ["on_val_start", "on_val_end", "on_train_epoch_end", "on_fit_epoch_end"]
    steps = [s for e, ep, s in events if e == "on_train_batch_end" and ep == 0]
    assert steps == list(range(1, 9))


def test_a_callback_stops_the_run_and_its_exception_is_raised(workdir):
    model = YOLO(ULTRALYTICS_BEST)

    def stop_after_first_epoch(trainer):
        trainer.stop = trainer.epoch == 0

    model.add_callback("on_fit_epoch_end", stop_after_first_epoch)
    metrics = model.train(epochs=3, project="runs", name="stopped", **SMALL)
    assert len(results_rows(metrics.save_dir)) == 1  # stopped after epoch 1 of 3, checkpoints written
    assert os.path.isfile(os.path.join(metrics.save_dir, "weights", "last.pt"))

    failing = YOLO(ULTRALYTICS_BEST)

    def broken(trainer):
        if trainer.step == 3:
            raise ZeroDivisionError("from a callback")

    failing.add_callback("on_train_batch_end", broken)
    with pytest.raises(ZeroDivisionError, match="from a callback"):
        failing.train(epochs=2, project="runs", name="raised", **SMALL)
    # the run stopped (not killed): the interpreter goes on, and so do other models
    assert os.path.isdir(os.path.join("runs", "detect", "runs", "raised")) or os.path.isdir("runs")


def test_an_unknown_callback_event_is_refused_with_the_closest_name():
    model = YOLO(ULTRALYTICS_BEST)
    with pytest.raises(ValueError, match="did you mean 'on_train_start'"):
        model.add_callback("on_trian_start", print)
    with pytest.raises(ValueError, match="on_fit_epoch_end"):
        model.add_callback("on_model_save", print)


def test_a_refused_word_raises_the_commands_line_and_changes_nothing(workdir):
    model = YOLO(ULTRALYTICS_BEST)
    with pytest.raises(InvalidArgument) as refused:
        model.train(epochs=1, optimizr="SGD", **SMALL)
    first = str(refused.value).splitlines()[0]
    assert "optimizr" in first and "did you mean 'optimizer'" in first
    assert refused.value.exit_code == 2
    assert not os.path.exists("runs")  # refused before anything was written
    with pytest.raises(InvalidArgument, match="imgsz"):
        model.val(data=COCO128_YAML, imgsz=100000)
    with pytest.raises(InvalidArgument, match="no such file"):
        YOLO("missing-weights.pt").predict(coco128_images(1))


def test_val_returns_the_metrics_it_writes(workdir):
    # the weights were trained on coco128's train split: validated there, they score well
    metrics = trained().val(data=COCO128_YAML, split="train", imgsz=320, batch=16, device="cpu")
    with open(os.path.join(metrics.save_dir, "metrics.json")) as f:
        written = json.load(f)
    assert metrics.box.map == pytest.approx(written["mAP50-95"]) and metrics.box.map > 0.2
    assert metrics.box.map50 == pytest.approx(written["mAP50"])
    assert metrics.box.mp == pytest.approx(written["precision"])
    assert metrics.box.mr == pytest.approx(written["recall"])
    per_class = written["per_class"]
    assert len(metrics.box.ap_class_index) == len(per_class) > 0
    assert list(metrics.box.ap50) == pytest.approx([c["mAP50"] for c in per_class])
    assert metrics.box.maps.shape == (80,)
    assert metrics.results_dict["metrics/mAP50-95(B)"] == pytest.approx(metrics.box.map)


def test_predict_returns_results_equal_to_what_the_command_writes(workdir):
    model = trained()
    images = coco128_images(3)
    results = model.predict(images, conf=0.01, imgsz=320)
    assert not os.path.exists("runs")  # save=False by default, as Ultralytics' Python predict
    assert [r.path for r in results] == images
    for r in results:
        h, w = r.orig_img.shape[:2]
        assert r.orig_img.dtype == np.uint8 and r.orig_img.shape[2] == 3
        xyxy, conf, cls = np.asarray(r.boxes.xyxy), np.asarray(r.boxes.conf), np.asarray(r.boxes.cls)
        assert xyxy.shape == (len(r), 4) and conf.shape == (len(r),) and cls.shape == (len(r),)
        assert (conf >= 0.01).all() and (np.diff(conf) <= 0).all()
        assert (xyxy[:, [0, 2]] <= w).all() and (xyxy[:, [1, 3]] <= h).all() and (xyxy >= 0).all()
        assert r.plot().shape == r.orig_img.shape
    assert sum(len(r) for r in results) > 0
    # save=True: the command's folder, whose predictions.json holds the same detections
    saved = model.predict(images, conf=0.01, imgsz=320, save=True)
    folder = saved[0].save_dir
    with open(os.path.join(folder, "predictions.json")) as f:
        written = json.load(f)
    for r, entry in zip(saved, written):
        assert len(entry["detections"]) == len(r)
        for d, box, c in zip(entry["detections"], np.asarray(r.boxes.xyxy), np.asarray(r.boxes.conf)):
            assert d["confidence"] == pytest.approx(float(c), abs=1e-4)
    # stream=True: a generator of the same results; an array is a source too
    streamed = list(model.predict(images, conf=0.01, imgsz=320, stream=True))
    assert [len(r) for r in streamed] == [len(r) for r in results]
    one = model(results[0].orig_img, conf=0.01, imgsz=320)[0]
    assert np.asarray(one.boxes.xyxy) == pytest.approx(np.asarray(results[0].boxes.xyxy), abs=1e-3)
    assert results[0].save("drawn.jpg") == "drawn.jpg" and os.path.getsize("drawn.jpg") > 0


def test_a_generator_closed_early_stops_the_prediction(workdir):
    model = YOLO(ULTRALYTICS_BEST)
    stream = model.predict(coco128_images(20), imgsz=128, stream=True)
    first = next(stream)
    stream.close()
    assert first.path == coco128_images(1)[0]
    assert len(model.predict(coco128_images(2), imgsz=128)) == 2  # the next command runs


def test_tensors_where_torch_imports():
    torch = pytest.importorskip("torch")
    r = trained().predict(coco128_images(1), imgsz=320)[0]
    assert len(r) > 0
    assert isinstance(r.boxes.xyxy, torch.Tensor) and r.boxes.xyxy.dtype == torch.float32


def test_info_and_names():
    model = YOLO(ULTRALYTICS_BEST)
    layers, parameters, gradients, gflops = model.info(verbose=False)
    assert layers == 24 and parameters == 2624080 and gflops > 0
    assert model.names[79] == "toothbrush"
    arch = YOLO("yolo11n.yaml")
    assert len(arch.names) == 80


def test_export_writes_the_onnx_file(workdir):
    try:
        path = YOLO(ULTRALYTICS_BEST).export(format="onnx", imgsz=64)
    except YoloflowError as e:
        if "without ONNX export" in str(e):
            pytest.skip("built without ONNX export")
        raise
    assert path.endswith(".onnx") and os.path.getsize(path) > 1_000_000
    with pytest.raises(InvalidArgument, match="format"):
        YOLO(ULTRALYTICS_BEST).export(format="tflite")


def test_an_interrupt_stops_training_resumably(workdir, capfd):
    model = YOLO(ULTRALYTICS_BEST)

    def interrupt(trainer):
        if trainer.epoch == 1 and trainer.step == 2:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, or a notebook's interrupt button
            os.kill(os.getpid(), signal.SIGINT)  # pressed twice: the process (a kernel) goes on

    model.add_callback("on_train_batch_end", interrupt)
    with pytest.raises(KeyboardInterrupt, match="resume=True"):
        model.train(epochs=3, project="runs", name="interrupted", **SMALL)
    said = capfd.readouterr().err
    assert "interrupt: stopping after the current step and saving\n" in said
    assert "interrupt: already stopping" in said and "interrupt again to stop at once" not in said
    run = os.path.join(os.getcwd(), "runs", "detect", "runs", "interrupted")
    last = os.path.join(run, "weights", "last.pt")
    assert os.path.isfile(last)
    assert len(results_rows(run)) == 1  # epoch 1 finished; epoch 2 was stopped mid-way
    # Ultralytics' way to continue: YOLO(last.pt).train(resume=True)
    metrics = YOLO(last).train(resume=True)
    assert metrics.save_dir == run
    assert [int(r["epoch"]) for r in results_rows(run)] == [1, 2, 3]


def test_bad_weights_raise_and_the_interpreter_goes_on(workdir):
    with open("broken.pt", "wb") as f:
        f.write(b"PK\x03\x04 not a checkpoint")
    with pytest.raises(YoloflowError) as failed:
        YOLO("broken.pt").predict(coco128_images(1))
    assert "broken.pt" in str(failed.value)
    assert len(YOLO(ULTRALYTICS_BEST).predict(coco128_images(1), imgsz=64)) == 1


def test_the_gil_is_released_while_training_and_a_notebook_shows_progress(workdir, monkeypatch, capsys):
    import threading
    import time

    import yoloflow.model

    # In a Jupyter kernel the epochs are shown by Python (a cell shows no C++ output).
    monkeypatch.setattr(yoloflow.model, "in_notebook", lambda: True)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    other = threading.Thread(target=tick)
    other.start()
    try:
        YOLO(ULTRALYTICS_BEST).train(epochs=1, **SMALL)
    finally:
        done.set()
        other.join()
    # Python kept running beside the C++ training: no gap of a whole epoch between two ticks
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert len(ticks) > 50 and max(gaps) < 1.0
    shown = capsys.readouterr().out
    assert "epoch 1/1" in shown and "mAP50-95(B)" in shown and "box_loss" in shown


def test_an_interpreter_with_another_torch_is_refused_in_one_line(tmp_path):
    import subprocess
    import sys

    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("__version__ = '9.1.0'\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", "import yoloflow"], env=env, capture_output=True, text=True)
    assert p.returncode != 0
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: yoloflow was built with LibTorch") and "torch is 9.1.0" in last


def test_a_url_a_pillow_image_and_an_array_are_sources_too(workdir, tmp_path, monkeypatch):
    import functools
    import http.server
    import threading

    image = coco128_images(1)[0]
    folder, name = os.path.split(image)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=folder)
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("YOLOFLOW_SOURCES_DIR", str(tmp_path / "sources"))
    model = trained()
    try:
        # Ultralytics' documents: model("https://ultralytics.com/images/bus.jpg")
        fetched = model("http://127.0.0.1:%d/%s" % (server.server_address[1], name), imgsz=320)[0]
    finally:
        server.shutdown()
    assert fetched.path.startswith(str(tmp_path / "sources")) and fetched.path.endswith(name)
    local = model(image, imgsz=320)[0]
    assert len(local) > 0 and np.asarray(fetched.boxes.data) == pytest.approx(np.asarray(local.boxes.data), abs=1e-4)
    from_array = model(local.orig_img, imgsz=320)[0]
    assert np.asarray(from_array.boxes.data) == pytest.approx(np.asarray(local.boxes.data), abs=1e-3)
    pil = pytest.importorskip("PIL.Image")
    from_pil = model(pil.open(image), imgsz=320)[0]
    assert np.asarray(from_pil.boxes.data) == pytest.approx(np.asarray(local.boxes.data), abs=1e-3)
    assert from_pil.orig_img.shape == local.orig_img.shape
    # show() outside a notebook goes to Pillow's viewer; without a display it is its business
    shown = []
    monkeypatch.setattr(pil.Image, "show", lambda self, *a, **k: shown.append(self.size))
    local.show()
    assert shown == [(local.orig_img.shape[1], local.orig_img.shape[0])]
    # predict(show=True) shows each result as it comes (the command opens no window)
    shown.clear()
    model(coco128_images(2), imgsz=320, show=True)
    assert len(shown) == 2
    summary = json.loads(local.to_json())
    assert len(summary) == len(local) and summary[0]["name"] == local.names[int(np.asarray(local.boxes.cls)[0])]


def test_a_pipeline_file_is_trained_with_the_words_as_its_overrides(workdir):
    from conftest import SOURCE

    model = YOLO("yolo11n")
    pipeline = os.path.join(SOURCE, "pipelines", "train-coco128-cpu.json")
    metrics = model.train(pipeline=pipeline, data=COCO128_YAML, epochs=1, imgsz=64, workers=2)
    assert os.path.basename(os.path.dirname(metrics.save_dir)) == "train-coco128-cpu"
    rows = results_rows(metrics.save_dir)
    assert len(rows) == 1 and rows[0]["imgsz"] == "64"
    assert model.ckpt_path == os.path.join(metrics.save_dir, "weights", "best.pt")


def test_verbose_false_keeps_the_trainers_lines_and_info_logs_away(workdir, capfd):
    model = YOLO(ULTRALYTICS_BEST)
    metrics = model.train(epochs=1, verbose=False, **SMALL)
    assert metrics is not None and len(results_rows(metrics.save_dir)) == 1
    model.val(data=COCO128_YAML, imgsz=64, verbose=False)
    said = capfd.readouterr()
    assert "epoch 1/1" not in said.out and "Class" not in said.out
    assert " info] " not in said.err  # warnings (coco128's data issues) may still be said
