// YOLO11 building blocks; shapes and names follow the released model (see docs/model.md).
#include "blocks.h"

#include <cmath>
#include <numeric>

namespace yoloflow::yolo11 {

namespace nn = torch::nn;

Conv::Conv(std::int64_t c1, std::int64_t c2, std::int64_t k, std::int64_t s, std::int64_t groups,
           bool act)
    : act_(act) {
  conv = register_module(
      "conv", nn::Conv2d(nn::Conv2dOptions(c1, c2, k).stride(s).padding(k / 2).groups(groups).bias(false)));
  bn = register_module("bn", nn::BatchNorm2d(nn::BatchNorm2dOptions(c2).eps(1e-3).momentum(0.03)));
}

Tensor Conv::forward(const Tensor& x) {
  auto y = bn->forward(conv->forward(x));
  return act_ ? torch::silu(y) : y;
}

void Chain::add(std::shared_ptr<Block> block) {
  register_module(std::to_string(items_.size()), block);
  items_.push_back(std::move(block));
}

Tensor Chain::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& b : items_) y = b->forward(y);
  return y;
}

Bottleneck::Bottleneck(std::int64_t c1, std::int64_t c2, bool shortcut, double e)
    : add_(shortcut && c1 == c2) {
  const auto c = static_cast<std::int64_t>(c2 * e);
  cv1_ = register_module("cv1", std::make_shared<Conv>(c1, c, 3, 1));
  cv2_ = register_module("cv2", std::make_shared<Conv>(c, c2, 3, 1));
}

Tensor Bottleneck::forward(const Tensor& x) {
  auto y = cv2_->forward(cv1_->forward(x));
  return add_ ? x + y : y;
}

C3k::C3k(std::int64_t c1, std::int64_t c2, std::int64_t n, bool shortcut, double e) {
  const auto c = static_cast<std::int64_t>(c2 * e);
  cv1_ = register_module("cv1", std::make_shared<Conv>(c1, c, 1, 1));
  cv2_ = register_module("cv2", std::make_shared<Conv>(c1, c, 1, 1));
  cv3_ = register_module("cv3", std::make_shared<Conv>(2 * c, c2, 1, 1));
  m_ = register_module("m", std::make_shared<Chain>());
  for (std::int64_t i = 0; i < n; ++i) m_->add(std::make_shared<Bottleneck>(c, c, shortcut, 1.0));
}

Tensor C3k::forward(const Tensor& x) {
  return cv3_->forward(torch::cat({m_->forward(cv1_->forward(x)), cv2_->forward(x)}, 1));
}

C3k2::C3k2(std::int64_t c1, std::int64_t c2, std::int64_t n, bool c3k, double e, bool shortcut)
    : c_(static_cast<std::int64_t>(c2 * e)) {
  cv1_ = register_module("cv1", std::make_shared<Conv>(c1, 2 * c_, 1, 1));
  cv2_ = register_module("cv2", std::make_shared<Conv>((2 + n) * c_, c2, 1, 1));
  m_ = register_module("m", std::make_shared<Chain>());
  for (std::int64_t i = 0; i < n; ++i) {
    if (c3k) {
      m_->add(std::make_shared<C3k>(c_, c_, 2, shortcut));
    } else {
      m_->add(std::make_shared<Bottleneck>(c_, c_, shortcut, 0.5));
    }
  }
}

Tensor C3k2::forward(const Tensor& x) {
  auto parts = cv1_->forward(x).chunk(2, 1);
  std::vector<Tensor> ys(parts.begin(), parts.end());
  for (auto& b : m_->items()) ys.push_back(b->forward(ys.back()));
  return cv2_->forward(torch::cat(ys, 1));
}

SPPF::SPPF(std::int64_t c1, std::int64_t c2, std::int64_t k) : k_(k) {
  const auto c = c1 / 2;
  cv1_ = register_module("cv1", std::make_shared<Conv>(c1, c, 1, 1));  // with SiLU, as released
  cv2_ = register_module("cv2", std::make_shared<Conv>(c * 4, c2, 1, 1));
}

Tensor SPPF::forward(const Tensor& x) {
  std::vector<Tensor> ys{cv1_->forward(x)};
  for (int i = 0; i < 3; ++i) ys.push_back(torch::max_pool2d(ys.back(), {k_, k_}, {1, 1}, {k_ / 2, k_ / 2}));
  return cv2_->forward(torch::cat(ys, 1));
}

Attention::Attention(std::int64_t dim, std::int64_t num_heads, double attn_ratio)
    : heads_(num_heads),
      head_dim_(dim / num_heads),
      key_dim_(static_cast<std::int64_t>(head_dim_ * attn_ratio)),
      scale_(1.0 / std::sqrt(static_cast<double>(key_dim_))) {
  const auto h = dim + key_dim_ * num_heads * 2;
  qkv_ = register_module("qkv", std::make_shared<Conv>(dim, h, 1, 1, 1, false));
  proj_ = register_module("proj", std::make_shared<Conv>(dim, dim, 1, 1, 1, false));
  pe_ = register_module("pe", std::make_shared<Conv>(dim, dim, 3, 1, dim, false));
}

Tensor Attention::forward(const Tensor& x) {
  const auto B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const auto N = H * W;
  auto qkv = qkv_->forward(x).reshape({B, heads_, key_dim_ * 2 + head_dim_, N});
  auto parts = qkv.split_with_sizes({key_dim_, key_dim_, head_dim_}, 2);
  const auto& q = parts[0];
  const auto& k = parts[1];
  const auto& v = parts[2];
  auto attn = torch::matmul(q.transpose(-2, -1), k) * scale_;
  attn = attn.softmax(-1);
  auto y = torch::matmul(v, attn.transpose(-2, -1)).reshape({B, C, H, W}) +
           pe_->forward(v.reshape({B, C, H, W}));
  return proj_->forward(y);
}

PSABlock::PSABlock(std::int64_t c, double attn_ratio, std::int64_t num_heads) {
  attn_ = register_module("attn", std::make_shared<Attention>(c, num_heads, attn_ratio));
  ffn_ = register_module("ffn", std::make_shared<Chain>());
  ffn_->add(std::make_shared<Conv>(c, c * 2, 1, 1));
  ffn_->add(std::make_shared<Conv>(c * 2, c, 1, 1, 1, false));
}

Tensor PSABlock::forward(const Tensor& x) {
  auto y = x + attn_->forward(x);
  return y + ffn_->forward(y);
}

C2PSA::C2PSA(std::int64_t c1, std::int64_t c2, std::int64_t n, double e)
    : c_(static_cast<std::int64_t>(c1 * e)) {
  TORCH_CHECK(c1 == c2, "C2PSA needs c1 == c2");
  cv1_ = register_module("cv1", std::make_shared<Conv>(c1, 2 * c_, 1, 1));
  cv2_ = register_module("cv2", std::make_shared<Conv>(2 * c_, c1, 1, 1));
  m_ = register_module("m", std::make_shared<Chain>());
  for (std::int64_t i = 0; i < n; ++i) m_->add(std::make_shared<PSABlock>(c_, 0.5, c_ / 64));
}

Tensor C2PSA::forward(const Tensor& x) {
  auto ab = cv1_->forward(x).split(c_, 1);
  return cv2_->forward(torch::cat({ab[0], m_->forward(ab[1])}, 1));
}

Tensor Upsample::forward(const Tensor& x) {
  return torch::upsample_nearest2d(x, std::vector<std::int64_t>{x.size(2) * 2, x.size(3) * 2});
}

Tensor Concat::forward_many(const std::vector<Tensor>& xs) { return torch::cat(xs, 1); }

HeadBranch::HeadBranch(std::shared_ptr<Block> first, std::shared_ptr<Block> second,
                       std::int64_t c_in, std::int64_t c_out)
    : first_(std::move(first)), second_(std::move(second)) {
  register_module("0", first_);
  register_module("1", second_);
  out = register_module("2", nn::Conv2d(nn::Conv2dOptions(c_in, c_out, 1).bias(true)));
}

Tensor HeadBranch::forward(const Tensor& x) {
  return out->forward(second_->forward(first_->forward(x)));
}

void HeadBranchList::add(std::shared_ptr<HeadBranch> b) {
  register_module(std::to_string(items.size()), b);
  items.push_back(std::move(b));
}

DFL::DFL(std::int64_t reg_max) {
  conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(reg_max, 1, 1).bias(false)));
  torch::NoGradGuard no_grad;
  conv->weight.copy_(torch::arange(reg_max, torch::kFloat).view({1, reg_max, 1, 1}));
  conv->weight.set_requires_grad(false);  // fixed integral, never trained
}

Detect::Detect(std::int64_t nc_, const std::vector<std::int64_t>& ch,
               const std::vector<std::int64_t>& strides_, std::int64_t reg_max_)
    : nc(nc_), reg_max(reg_max_), strides(strides_) {
  const auto c2 = std::max<std::int64_t>({16, ch[0] / 4, reg_max * 4});
  const auto c3 = std::max<std::int64_t>(ch[0], std::min<std::int64_t>(nc, 100));
  cv2 = register_module("cv2", std::make_shared<HeadBranchList>());
  cv3 = register_module("cv3", std::make_shared<HeadBranchList>());
  for (auto x : ch) {
    cv2->add(std::make_shared<HeadBranch>(std::make_shared<Conv>(x, c2, 3), std::make_shared<Conv>(c2, c2, 3),
                                          c2, 4 * reg_max));
    // Depthwise class branch: DWConv = Conv with groups gcd(c1, c2).
    auto a = std::make_shared<Chain>();
    a->add(std::make_shared<Conv>(x, x, 3, 1, std::gcd(x, x)));
    a->add(std::make_shared<Conv>(x, c3, 1));
    auto b = std::make_shared<Chain>();
    b->add(std::make_shared<Conv>(c3, c3, 3, 1, std::gcd(c3, c3)));
    b->add(std::make_shared<Conv>(c3, c3, 1));
    cv3->add(std::make_shared<HeadBranch>(a, b, c3, nc));
  }
  dfl = register_module("dfl", std::make_shared<DFL>(reg_max));
  init_biases();
}

void Detect::init_biases() {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < strides.size(); ++i) {
    cv2->items[i]->out->bias.fill_(1.0);
    const double s = static_cast<double>(strides[i]);
    cv3->items[i]->out->bias.fill_(std::log(5.0 / static_cast<double>(nc) / std::pow(640.0 / s, 2)));
  }
}

std::vector<Tensor> Detect::forward(const std::vector<Tensor>& xs) {
  std::vector<Tensor> out;
  out.reserve(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    out.push_back(torch::cat({cv2->items[i]->forward(xs[i]), cv3->items[i]->forward(xs[i])}, 1));
  }
  return out;
}

}  // namespace yoloflow::yolo11
