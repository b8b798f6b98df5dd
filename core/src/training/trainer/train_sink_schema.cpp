#include "training/trainer/train_sink_schema.h"

#include "runtime/pipeline/default_documents.h"

namespace yoloflow::core {

namespace {

// A component parameter whose default is the train sink's entry in train-defaults.json; where
// that file names none, the pipeline must.
ParamSpec& add_defaulted_component(Schema& s, const std::string& name, const std::string& kind, const std::string& doc) {
  const json given = train_sink_default(name);
  ParamSpec& spec = s.add_component(name, kind, given);
  if (given.is_null()) return spec.required().doc(doc);
  return spec.doc(doc + " Default: the one the train stage of core/resources/train-defaults.json names.");
}

}  // namespace

Schema train_sink_schema() {
  Schema s;
  add_defaulted_component(s, "model", "model", "The model to train.");
  add_defaulted_component(s, "optimizer", "optimizer", "Optimizer plugin.");
  add_defaulted_component(s, "precision", "precision",
                          "Precision strategy: any precision plugin (`yoloflow plugins` lists them).");
  s.add_json("precision_schedule", json::object())
      .doc("Precision strategies from an epoch on: {\"80\": \"fp32\"} trains epochs 0-79 with `precision` and "
           "epoch 80 on in fp32. Keys are 0-based epochs, a negative one counting from the end (\"-20\": the last "
           "20 epochs), as the other schedules count; each value a precision plugin's name or {\"plugin\", "
           "\"params\"}. At a switch the weights, the optimizer's state and the EMA carry on; the new strategy "
           "starts afresh (a loss scale at its init_scale) and a captured step is captured again.");
  s.add_path("data").required().role(ParamRole::Dataset).doc("data.yaml of the dataset: class names and the validation split.");
  s.add_string("val_split", "val").role(ParamRole::ValidationSplit).doc("Split of `data` used for validation.");
  s.add_component("val_source", "source", nullptr)
      .fixed()
      .role(ParamRole::ValidationSource)
      .doc("Source of the validation images and labels: any source plugin. Left out, the pipeline's "
           "source stage (when its source has a split parameter) reading `val_split`.");
  add_defaulted_component(
      s, "val_transform", "augmentation",
      "Fits each validation image into its batch's shape, given to it as its `height` and `width` parameters "
      "(which it must declare); its output must be exactly that size, its boxes and geometry following the "
      "pixels (predictions are mapped back through them). `yoloflow val` uses the one a checkpoint's pipeline "
      "records.")
      .fixed()
      .role(ParamRole::ValidationTransform);
  add_defaulted_component(
      s, "val_batcher", "batcher",
      "Stacks the fitted validation images into batches, given `val_batch` as its integer `batch` parameter "
      "(which it must declare).")
      .fixed()
      .role(ParamRole::ValidationBatcher);
  s.add_int("val_batch", 32).range(1, 65536).doc(
      "Images per validation batch. With a captured step (`cuda_graph`) validation allocates in the "
      "graph's memory pool (`cuda_graph_shared_pool`); eager training has no such pool, and a smaller "
      "val_batch lowers the peak (docs/performance.md).");
  s.add_bool("rect", true).doc(
      "Validate in rectangular batches (images ordered by aspect ratio, each batch fitted by `val_transform` to "
      "its own stride-aligned shape), as Ultralytics validates; false fits every image to imgsz x imgsz.");
  s.add_bool("train_rect", false).doc(
      "Train in rectangular batches (Ultralytics' rect=True on train): the train split ordered by aspect ratio, "
      "the same order every epoch (no shuffling), each batch fitted to its own stride-aligned shape by every "
      "augmentation stage with `height` and `width` parameters (random_perspective, letterbox); steps run "
      "eagerly (the shape changes batch to batch). The rect=True word also turns mosaic, mixup and cutmix off, "
      "as Ultralytics does.");
  s.add_int("val_every", 1).min(0).doc("Validate every N epochs (0 = only after the last).");
  s.add_float("val_conf", 0.001).range(0.0, 1.0).doc("NMS confidence threshold in validation.");
  s.add_float("val_iou", 0.7).range(0.0, 1.0).doc("NMS IoU threshold in validation.");
  s.add_int("max_det", 300).range(1, 100000).doc("Detections kept per validation image.");
  s.add_int("nominal_batch", 64).range(1, 1048576).doc("Images per optimizer step; gradients accumulate to reach it.");
  s.add_int("micro_batch", 0).range(0, 65536).fixed().doc(
      "Images per forward + backward pass: each batch runs as chunks of at most this many images whose "
      "gradients add up before the optimizer step (same step per nominal batch; peak activation memory "
      "scales with the chunk). 0 = the whole batch. Halved automatically after an out-of-memory error.");
  add_defaulted_component(
      s, "loss", "loss",
      "What training minimises: any loss plugin (`yoloflow plugins` lists them; docs/plugin-guide.md says how to "
      "write one), with its parameters, e.g. {\"plugin\": \"yolo11_detection\", \"params\": {\"box\": 7.5}}. "
      "Its components are logged and written to results.csv as train/<name>_loss and val/<name>_loss.");
  add_defaulted_component(
      s, "evaluator", "evaluator",
      "What validation measures and best.pt is chosen by: any evaluator plugin, e.g. {\"plugin\": \"detection\"} "
      "(box P, R, mAP50, mAP50-95; fitness mAP50-95). Its columns are written to results.csv (for detection "
      "metrics/precision(B), metrics/recall(B), metrics/mAP50(B), metrics/mAP50-95(B)), its fitness to the "
      "`fitness` column.")
      .fixed();
  s.add_component("scheduler", "scheduler", json()).required().doc(
      "Learning-rate decay over the run: a factor per epoch of the optimizer's lr0, e.g. "
      "{\"plugin\": \"linear\", \"params\": {\"lrf\": 0.01}} (Ultralytics' default) or \"cosine\".");
  s.add_component_list("callbacks", "callback", json::array()).doc(
      "Callbacks run at the run's start and end, around every batch and after every epoch, in this order; "
      "their state is saved in the checkpoints (ema, early_stopping, periodic_checkpoints, train_batch_images, "
      "or your own: docs/plugin-guide.md).");
  s.add_float("warmup_epochs", 3.0).min(0.0).doc("Warmup length in epochs (at least 100 iterations).");
  s.add_float("warmup_momentum", 0.8).range(0.0, 1.0).doc("Momentum at the start of warmup.");
  s.add_float("warmup_bias_lr", 0.1).min(0.0).doc("Bias learning rate at the start of warmup.");
  // The loss's gains were the sink's own parameters; they belong to the loss component now.
  for (const char* gain : {"box", "cls", "dfl"}) s.add_moved(gain, std::string("loss.params.") + gain);
  s.add_float("clip_grad", 10.0).greater_than(0.0).doc("Gradient norm clipping threshold.");
  s.add_float("multi_scale", 0.0).range(0.0, 0.9).doc(
      "Multi-scale training (Ultralytics' multi_scale): each batch is resized on the train device to a random "
      "size between (1 - multi_scale) and (1 + multi_scale) times the collated size, a multiple of the model's "
      "largest stride (targets are normalised: they stay); 0 = off, 0.5 = Ultralytics' multi_scale=True. Steps "
      "then run eagerly (no cuda_graph). The progress line shows each reported step's size.");
  s.add_int_list("freeze", {}).range(0, 100000).fixed().doc(
      "Layer indices to freeze (Ultralytics' freeze: `freeze=10` on the command line is [0, ..., 9]): their "
      "parameters (model.<i>.*) and the DFL's get no gradient and keep their values, and their batch norms "
      "keep their running statistics (eval mode). Each frozen parameter is printed, as Ultralytics does. "
      "Empty = train every layer. A resume with other layers than its checkpoint froze is refused (the "
      "optimizer's state belongs to the parameters that trained).");
  s.add_bool("ema", true).doc(
      "Keep an exponential moving average of the weights (validated and saved): adds the `ema` callback with "
      "its defaults when `callbacks` lists none (list it to set its decay); false: no average (listing `ema` "
      "then is an error).");
  s.add_bool("plots", true).doc(
      "Draw labels.jpg when the run starts, results.png, the losses and metrics per epoch, after each epoch, and "
      "after the run's last validation Ultralytics' validation plots (confusion_matrix.png, "
      "confusion_matrix_normalized.png, Box{PR,F1,P,R}_curve.png, Mask{PR,F1,P,R}_curve.png for a segmentation "
      "model, val_batch0..2_labels.jpg and _pred.jpg); false: results.csv only (with the "
      "train_batch_images callback left out, Ultralytics' plots=False: no image at all).");
  s.add_int("log_every", 10).min(1).doc("Steps between progress lines (losses are read from the device only then).");
  s.add_bool("save_async", true).doc(
      "Write checkpoints on a background thread from a CPU copy, so the device trains on while last.pt is "
      "pickled and synced to disk (each file stays atomic: a kill during a write keeps the previous one). "
      "The last epoch, a stop and an interruption wait for the file.");
  s.add_int("max_steps", 0).min(0).doc(
      "Stop after this many batches in this process, saving a resumable last.pt (chunked jobs on time-limited machines; 0 = no limit).");
  s.add_float("time", 0.0).min(0.0).fixed().doc(
      "Training budget in hours (Ultralytics' time); it overrides `epochs`, which only sets the first epoch's "
      "learning-rate schedule: after each epoch the run is planned again as the epochs that fit in the budget "
      "at the pace so far (ceil(time x 3600 / mean epoch time)), the learning-rate schedule, progress lines, "
      "results and checkpoints following the new count; after each batch a spent budget ends the epoch there, "
      "which is then validated and checkpointed as the run's last. Counted in this process, as `max_steps` "
      "is: `--resume` continues with the budget afresh. Schedules counted from the end (close_mosaic's \"-10\") "
      "count from the planned end, as Ultralytics closes mosaic. 0 = no budget.");
  s.add_string("resume", "").doc(
      "Checkpoint to continue from (set by `yoloflow train --resume RUN_DIR`): weights, EMA, optimizer, scaler, schedule, data position.");
  s.add_int("target_rows", 0).range(0, 100000).doc(
      "Rows per image the training targets are padded to: N > 0 = exactly N (static shapes; boxes "
      "beyond N in one image are dropped and counted in a warning); 0 = the batch's fullest image "
      "rounded up to `target_rows_multiple` (no box dropped).");
  s.add_int("target_rows_multiple", 32).range(1, 4096).doc(
      "With target_rows 0: round the padded row count up to a multiple of this, so the loss sees "
      "few distinct shapes and the CUDA allocator and kernels settle (1 = the fullest image exactly).");
  s.add_int("profile_every", 0).min(0).doc(
      "Time every Nth step phase by phase (data wait, host-to-device, forward + loss, backward, "
      "optimizer + EMA), waiting for the device at each phase boundary: rows in steps.csv, means in "
      "the epoch summary and results.csv (`profile/...`). 0 = off; sampled steps lose their overlap.");
  s.add("cuda_graph", ParamType::Bool).default_value("auto").accepts("auto").doc(
      "CUDA: capture the training step (forward, loss, backward) as a CUDA graph per input shape "
      "and replay it: one launch instead of thousands from the host. Shapes vary only with the "
      "batch, image size and padded target rows (`target_rows`, `target_rows_multiple`); each new "
      "shape runs `cuda_graph_warmup` steps eagerly, then is captured. \"auto\": on where a capture "
      "can be made (CUDA, one process, no `profile_every`), otherwise off with an info line; true: "
      "the same, with a warning where it cannot; false: eager steps; "
      "a failed capture falls back to eager steps with a warning.");
  s.add_int("cuda_graph_warmup", 3).range(1, 1000).doc("CUDA graphs: eager steps of each new shape before its capture.");
  s.add_int("cuda_graph_rows", 96).range(1, 100000).doc(
      "CUDA graphs with target_rows 0: target rows per image the one captured step is built for "
      "(every batch that fits is padded to it); a batch whose fullest image has more boxes runs "
      "eagerly, nothing is dropped (coco128 with mosaic, batch 32: under 4% of batches at 96). Such a "
      "step allocates in the graph's pool with `cuda_graph_shared_pool`; beside it, yolo11n b32 on the H200 "
      "peaked at 12.3-12.7 GiB instead of 5.9; at 192 no coco128 batch ran eagerly, peak 7.2 GiB, 15% fewer images/s (docs/performance.md).");
  s.add_bool("cuda_graph_shared_pool", true).doc(
      "CUDA graphs: validation, and eager steps of shapes without a graph (more target rows than "
      "`cuda_graph_rows`), allocate from the captured step's memory pool, where its activations lie "
      "dead between replays, instead of beside it. Whatever such work leaves allocated there is "
      "detected: the graph is then captured again in a new pool and the sharing ends, with a "
      "warning. false: that work allocates beside the pool (the shipped pipeline on an H200: 4.17 instead "
      "of 3.07 GiB peak reserved, `bash bench/gpu/shipped-vs-ultralytics.sh shipped,shipped-no-shared-pool`).");
  s.add_bool("cudnn_benchmark", false).doc(
      "CUDA: let cuDNN time its convolution algorithms once per input shape instead of taking its "
      "heuristics' pick (Ultralytics' deterministic=True does not benchmark either). The search "
      "delays the first step (yolo11n b32 at 640 on the H200: 22.3 s to the first step with it, "
      "5.8 s without) and a captured step ran as fast without it (docs/performance.md).");
  s.add_float("cuda_memory_fraction", 0.0).range(0.0, 1.0).fixed().doc(
      "CUDA: the most of the device's memory the caching allocator may reserve, as a fraction (0 = no cap); "
      "beyond it allocations fail as out of memory (shared GPUs, or proving the out-of-memory recovery).");
  s.add_string("cuda_alloc_conf", "auto").doc(
      "CUDA: PYTORCH_CUDA_ALLOC_CONF for this process, e.g. \"expandable_segments:True\" (segments "
      "that grow instead of fixed blocks: less memory reserved beside what is allocated when shapes "
      "vary, as validation's between captured steps). \"auto\": expandable segments with LibTorch 2.1 "
      "or later unless the environment sets PYTORCH_CUDA_ALLOC_CONF or CUDA is already initialised "
      "(the shipped pipeline on an H200: 4.17 -> 3.07 GiB peak reserved, `bash "
      "bench/gpu/shipped-vs-ultralytics.sh shipped,shipped-fixed-segments`); empty = the environment's "
      "(auto batch then sets expandable segments). Any other value is refused once CUDA is initialised.");
  s.add_enum("augment_on", {"auto", "workers", "device"}, "auto").fixed().doc(
      "Where the augmented images are composed. \"workers\": the graph's CPU workers make every pixel. "
      "\"device\": the workers decode, draw every random value and move the annotations, and the training "
      "device composes the batch's pixels from their plans (mosaic tiles, letterbox, random_perspective's affine warp, "
      "mixup's blend, cutmix's paste, hsv, flips; the same bytes: docs/performance.md); a chain that cannot be planned "
      "(perspective, mosaic_perspective with rotation or shear) is refused in one line; an order the plans cannot "
      "follow (a letterbox after a mosaic, a mix after the colours) stops at its first such sample. On the CPU the host's cores compose (for checks). \"auto\": on a CUDA device, "
      "\"device\" from the start when the data path has fewer than 8 workers, else from the epoch after one in "
      "which the step waited for data a tenth of its time (both make the same bytes); a chain that cannot be "
      "planned stays on the workers, with an info line naming the stage; elsewhere the workers.");
  s.add_enum("device_image_cache", {"auto", "on", "off"}, "auto").fixed().doc(
      "Where augmented pixels are composed on the training device (augment_on): keep the decoded training "
      "images in its memory, so that an image kept is neither read nor decoded again. The cache opens after "
      "the first epoch composed on the device and its validation (the step's memory then known), sized to the device's free "
      "memory (under cuda_memory_fraction's cap, when set) less max(2 GiB, a tenth), at most half the device "
      "and what the dataset needs, and fills as images are loaded; an "
      "image that does not fit is decoded each epoch. Beside a RAM cache it saves the uploads. \"auto\": on a "
      "CUDA device; \"on\": on the CPU as well (half the available memory; for checks); \"off\": never.");
  s.add_bool("tf32", true).doc("CUDA: allow TF32 tensor cores for fp32 convolutions.");
  s.add_string("device", "").doc(
      "\"auto\" (CUDA when available), \"cpu\", \"cuda\", \"cuda:1\"; empty = the pipeline's device.");
  s.add_path("weights").doc(
      "Initial weights (fine-tuning): a state dict (`yoloflow weights import`/`export`, or Python's "
      "torch.save(model.state_dict())), a yoloflow checkpoint (its EMA weights) or an Ultralytics checkpoint "
      "(yolo11n.pt, a run's best.pt: its EMA, else its model; `yoloflow train model=FILE.pt` also takes the "
      "architecture from it). With another "
      "number of classes the class head keeps its initial values; every other tensor must fit. "
      "Ignored when resuming. Relative paths are resolved against the pipeline file's folder.");
  s.add_int("cpu_threads", 0).range(0, 1024).doc(
      "Threads of LibTorch's CPU operations in this process; 0 = automatic: 1 when training on CUDA "
      "(the step only launches GPU work, and idle OpenMP threads spinning beside the data workers "
      "slowed a CUDA step several-fold), LibTorch's default (all cores) on the CPU.");
  return s;
}

}  // namespace yoloflow::core
