#pragma once
// YOLO11 building blocks (Conv, Bottleneck, C3k, C3k2, SPPF, Attention, PSABlock, C2PSA,
// Detect). Each registers its children under the names Ultralytics' state dict uses, so
// named_parameters()/named_buffers() of the network give "model.<i>.<path>" exactly.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/graph_builder.h"

namespace yoloflow::yolo11 {

using torch::Tensor;

// Spatial size of a feature map while a graph is exported; 0 x 0 when it is dynamic.
struct MapSize {
  std::int64_t h = 0, w = 0;
};

// A module with one tensor in and one out; top-level layers may take several inputs.
class Block : public torch::nn::Module {
 public:
  virtual Tensor forward(const Tensor& x) = 0;
  virtual Tensor forward_many(const std::vector<Tensor>& xs) { return forward(xs.at(0)); }
  // The same computation in eval mode, written into an export graph (blocks_export.cpp);
  // `name` prefixes the block's weights ("model.2.cv1").
  virtual GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const = 0;
  virtual GraphValue emit_many(GraphBuilder& g, const std::vector<GraphValue>& xs, const std::string& name,
                               MapSize size) const {
    return emit(g, xs.at(0), name, size);
  }
};

// Conv2d (no bias, padding k/2) + BatchNorm2d (eps 1e-3, momentum 0.03) + optional SiLU.
class Conv : public Block {
 public:
  Conv(std::int64_t c1, std::int64_t c2, std::int64_t k = 1, std::int64_t s = 1,
       std::int64_t groups = 1, bool act = true);
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};

 private:
  bool act_;
};

// Blocks registered as "0", "1", ... (Ultralytics' nn.Sequential / nn.ModuleList);
// forward() chains them.
class Chain : public Block {
 public:
  void add(std::shared_ptr<Block> block);
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;
  const std::vector<std::shared_ptr<Block>>& items() const { return items_; }

 private:
  std::vector<std::shared_ptr<Block>> items_;
};

class Bottleneck : public Block {
 public:
  Bottleneck(std::int64_t c1, std::int64_t c2, bool shortcut, double e);
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;

 private:
  std::shared_ptr<Conv> cv1_, cv2_;
  bool add_;
};

class C3k : public Block {
 public:
  C3k(std::int64_t c1, std::int64_t c2, std::int64_t n, bool shortcut = true, double e = 0.5);
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;

 private:
  std::shared_ptr<Conv> cv1_, cv2_, cv3_;
  std::shared_ptr<Chain> m_;
};

class C3k2 : public Block {
 public:
  C3k2(std::int64_t c1, std::int64_t c2, std::int64_t n, bool c3k, double e, bool shortcut = true);
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;

 private:
  std::int64_t c_;
  std::shared_ptr<Conv> cv1_, cv2_;
  std::shared_ptr<Chain> m_;  // used as a list, not chained
};

class SPPF : public Block {
 public:
  SPPF(std::int64_t c1, std::int64_t c2, std::int64_t k = 5);
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;

 private:
  std::shared_ptr<Conv> cv1_, cv2_;
  std::int64_t k_;
};

class Attention : public Block {
 public:
  Attention(std::int64_t dim, std::int64_t num_heads, double attn_ratio = 0.5);
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;

 private:
  std::int64_t heads_, head_dim_, key_dim_;
  double scale_;
  std::shared_ptr<Conv> qkv_, proj_, pe_;
};

class PSABlock : public Block {
 public:
  PSABlock(std::int64_t c, double attn_ratio, std::int64_t num_heads);
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;

 private:
  std::shared_ptr<Attention> attn_;
  std::shared_ptr<Chain> ffn_;
};

class C2PSA : public Block {
 public:
  C2PSA(std::int64_t c1, std::int64_t c2, std::int64_t n, double e = 0.5);
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;

 private:
  std::int64_t c_;
  std::shared_ptr<Conv> cv1_, cv2_;
  std::shared_ptr<Chain> m_;
};

// nn.Upsample(scale_factor=2, mode="nearest").
class Upsample : public Block {
 public:
  Tensor forward(const Tensor& x) override;
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const override;
};

// torch.cat along channels.
class Concat : public Block {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  Tensor forward_many(const std::vector<Tensor>& xs) override;
  GraphValue emit(GraphBuilder&, const GraphValue& x, const std::string&, MapSize) const override { return x; }
  GraphValue emit_many(GraphBuilder& g, const std::vector<GraphValue>& xs, const std::string& name,
                       MapSize size) const override;
};

// One detection branch: "0", "1" (blocks), "2" (plain Conv2d with bias).
class HeadBranch : public torch::nn::Module {
 public:
  HeadBranch(std::shared_ptr<Block> first, std::shared_ptr<Block> second, std::int64_t c_in,
             std::int64_t c_out);
  Tensor forward(const Tensor& x);
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const;
  torch::nn::Conv2d out{nullptr};

 private:
  std::shared_ptr<Block> first_, second_;
};

class HeadBranchList : public torch::nn::Module {
 public:
  void add(std::shared_ptr<HeadBranch> b);
  std::vector<std::shared_ptr<HeadBranch>> items;
};

// Distribution Focal Loss integral: a fixed 1x1 conv with weights 0..reg_max-1.
class DFL : public torch::nn::Module {
 public:
  explicit DFL(std::int64_t reg_max);
  torch::nn::Conv2d conv{nullptr};
};

class Detect : public torch::nn::Module {
 public:
  Detect(std::int64_t nc, const std::vector<std::int64_t>& ch, const std::vector<std::int64_t>& strides,
         std::int64_t reg_max = 16);
  // Per level (B, 4*reg_max + nc, H, W).
  std::vector<Tensor> forward(const std::vector<Tensor>& xs);
  // Box 1.0; class log(5 / nc / (640 / stride)^2) (Ultralytics' bias_init).
  void init_biases();
  // Heads, DFL decode and anchors written into an export graph: (B, 4 + nc, anchors), boxes
  // as centre x, centre y, width, height in input pixels, then class probabilities.
  GraphValue emit(GraphBuilder& g, const std::vector<GraphValue>& xs, const std::string& name,
                  const std::vector<MapSize>& sizes) const;
  std::int64_t nc, reg_max;
  std::vector<std::int64_t> strides;
  std::shared_ptr<HeadBranchList> cv2, cv3;
  std::shared_ptr<DFL> dfl;
};

}  // namespace yoloflow::yolo11
