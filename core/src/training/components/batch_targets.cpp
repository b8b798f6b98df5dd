#include "training/components/batch_targets.h"

#include <algorithm>
#include <string>
#include <vector>

#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/torch_compat.h"

namespace yoloflow::core {

torch::Tensor box_rows(const Batch& batch) {
  const TargetArray& boxes = batch.boxes();
  const std::int64_t n = boxes.rows();
  if (boxes.shape.size() != 2 || boxes.shape[1] != 6 || n < 0 ||
      boxes.values.size() != static_cast<std::size_t>(n) * 6) {
    std::string shape;
    for (std::int64_t d : boxes.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw Error("the batch's '" + std::string(targets::kBoxes) + "' target array has shape (" + shape + ") and " +
                std::to_string(boxes.values.size()) +
                " values; it must be (N, 6) with N * 6 values [batch_idx, cls, cx, cy, w, h]: the batcher wrote it "
                "wrongly");
  }
  return torch::from_blob(const_cast<float*>(boxes.values.data()), {n, 6}, torch::kFloat);
}

namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out;
  for (std::int64_t d : shape) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return "(" + out + ")";
}

// Rows (N, R) of a per-instance array placed as pad_targets places the boxes: row i of image
// b is the k-th of that image, kept while k < m.
torch::Tensor pad_instance_rows(const TargetArray& array, const std::vector<std::int64_t>& image_of,
                                std::int64_t batch_size, std::int64_t m) {
  std::vector<std::int64_t> shape = {batch_size, m};
  shape.insert(shape.end(), array.shape.begin() + 1, array.shape.end());
  auto out = torch::zeros(shape);
  const std::int64_t width = array.row_size();
  float* dst = out.data_ptr<float>();
  std::vector<std::int64_t> used(static_cast<std::size_t>(batch_size), 0);
  for (std::size_t i = 0; i < image_of.size(); ++i) {
    const auto b = image_of[i];
    auto& k = used[static_cast<std::size_t>(b)];
    if (k >= m) continue;
    std::copy_n(array.values.data() + static_cast<std::ptrdiff_t>(i) * width, width, dst + (b * m + k) * width);
    ++k;
  }
  return out;
}

}  // namespace

LossTargets loss_targets(const Batch& batch, std::int64_t fixed_rows, std::int64_t* dropped, std::int64_t round_up,
                         std::int64_t fit_rows) {
  const auto rows = box_rows(batch);
  LossTargets out;
  out.tensors[targets::kBoxes] = pad_targets(rows, batch.size, fixed_rows, dropped, round_up, fit_rows);
  const std::int64_t m = out.tensors[targets::kBoxes].size(1);
  std::vector<std::int64_t> image_of(static_cast<std::size_t>(rows.size(0)));
  const float* r = rows.data_ptr<float>();
  for (std::size_t i = 0; i < image_of.size(); ++i) image_of[i] = static_cast<std::int64_t>(r[i * 6]);
  for (const auto& [name, array] : batch.targets) {
    if (name == targets::kBoxes) continue;
    std::int64_t product = 1;
    for (std::int64_t d : array.shape) product *= d;
    const bool per_image = targets::per_image(name);
    const std::int64_t want = per_image ? batch.size : rows.size(0);
    if (array.shape.empty() || array.shape[0] != want || product < 0 ||
        array.values.size() != static_cast<std::size_t>(product)) {
      throw Error("the batch's '" + name + "' target array has shape " + shape_text(array.shape) + " and " +
                  std::to_string(array.values.size()) + " values; it must have one row per " +
                  (per_image ? "image (" : "instance (") + std::to_string(want) +
                  ") and as many values as its shape says: the batcher wrote it wrongly");
    }
    if (per_image) {
      auto t = torch::empty(array.shape);
      std::copy(array.values.begin(), array.values.end(), t.data_ptr<float>());
      out.tensors[name] = t;
    } else {
      out.tensors[name] = pad_instance_rows(array, image_of, batch.size, m);
    }
  }
  return out;
}

LossTargets narrow_targets(const LossTargets& targets, std::int64_t start, std::int64_t size) {
  LossTargets out;
  for (const auto& [name, t] : targets.tensors) out.tensors[name] = t.narrow(0, start, size);
  return out;
}

LossTargets targets_to(const LossTargets& targets, const torch::Device& device, bool non_blocking) {
  LossTargets out;
  for (const auto& [name, t] : targets.tensors) out.tensors[name] = t.to(device, non_blocking);
  return out;
}

std::string target_shapes(const LossTargets& targets) {
  std::string out;
  for (const auto& [name, t] : targets.tensors) {
    out += (out.empty() ? "" : " + ") + name + " " + shape_text(t.sizes().vec());
  }
  return out;
}

LossTargets BatchTargets::operator()(const Batch& batch, bool captured, int epoch, std::int64_t step) {
  std::int64_t dropped = 0;
  // Padded per image: a micro-batch's targets are its images' rows, a slice on dim 0. With a
  // captured step, every batch that fits takes its shape.
  LossTargets targets = loss_targets(batch, rows_.fixed, &dropped, rows_.multiple, captured ? rows_.fit : 0);
  if (dropped > 0 && warned_epoch_ != epoch) {  // once per epoch, not per step
    warned_epoch_ = epoch;
    YF_LOG_WARN("train: " << dropped << " box(es) in epoch " << epoch + 1 << ", step " << step + 1
                          << " beyond target_rows = " << rows_.fixed
                          << " per image were dropped; raise target_rows or set it to 0");
  }
  return targets;
}

std::int64_t largest_stride(const HeadDescription& head) {
  return head.strides.empty() ? 32 : *std::max_element(head.strides.begin(), head.strides.end());
}

std::int64_t padded_target_rows(std::int64_t fullest, std::int64_t fixed_rows, std::int64_t round_up,
                                std::int64_t fit_rows) {
  const std::int64_t step = std::max<std::int64_t>(1, round_up);
  return fixed_rows > 0                         ? fixed_rows
         : fit_rows > 0 && fullest <= fit_rows ? fit_rows
                                               : (fullest + step - 1) / step * step;
}

torch::Tensor pad_targets(const torch::Tensor& rows, std::int64_t batch_size,
                          std::int64_t fixed_rows, std::int64_t* dropped, std::int64_t round_up,
                          std::int64_t fit_rows) {
  if (rows.defined() && rows.numel() > 0 && (rows.dim() != 2 || rows.size(1) != 6)) {
    throw Error("pad_targets: target rows have shape " + std::string(c10::str(rows.sizes())) +
                ", expected (N, 6) [batch_idx, cls, cx, cy, w, h].");
  }
  const auto device = rows.defined() ? rows.device() : torch::Device(torch::kCPU);
  auto r = (rows.defined() && rows.numel() > 0) ? rows.to(torch::kCPU, torch::kFloat).contiguous()
                                               : torch::zeros({0, 6});
  const auto n = r.size(0);
  auto acc = r.accessor<float, 2>();
  std::vector<std::int64_t> count(static_cast<std::size_t>(batch_size), 0);
  for (int64_t i = 0; i < n; ++i) {
    const auto b = static_cast<int64_t>(acc[i][0]);
    if (b < 0 || b >= batch_size) {
      throw Error("pad_targets: row " + std::to_string(i) + " has batch index " +
                  std::to_string(b) + ", outside a batch of " + std::to_string(batch_size) + ".");
    }
    ++count[static_cast<std::size_t>(b)];
  }
  std::int64_t fullest = 0;
  for (auto c : count) fullest = std::max(fullest, c);
  const std::int64_t m = padded_target_rows(fullest, fixed_rows, round_up, fit_rows);
  auto out = torch::zeros({batch_size, m, 5});
  out.select(2, 0).fill_(-1.0);
  auto o = out.accessor<float, 3>();
  std::vector<std::int64_t> used(static_cast<std::size_t>(batch_size), 0);
  std::int64_t lost = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto b = static_cast<std::size_t>(acc[i][0]);
    if (used[b] >= m) {
      ++lost;
      continue;
    }
    for (int j = 0; j < 5; ++j) o[static_cast<int64_t>(b)][used[b]][j] = acc[i][j + 1];
    ++used[b];
  }
  if (dropped) *dropped = lost;
  return out.to(device);
}

}  // namespace yoloflow::core
