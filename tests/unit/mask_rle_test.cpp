// COCO RLE as `yoloflow val --save-json` writes a segmentation model's masks: the strings
// Ultralytics 8.4.56's SegmentationValidator writes for the same masks (printed by
// tests/fixtures/make-ultralytics-rle.py with its own code), and masks made from coefficients,
// prototypes and boxes mapped back through the letterbox to the original image.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "training/eval/mask_rle.h"
#include "support/doctest_checks.h"  // last: CHECK is doctest's after LibTorch's headers

using namespace yoloflow;

namespace {

// Decodes COCO's compressed counts (the inverse of its encoding), for the round trip.
std::vector<std::int64_t> decode_counts(const std::string& s) {
  std::vector<std::int64_t> counts;
  std::size_t p = 0;
  while (p < s.size()) {
    std::int64_t x = 0;
    int k = 0;
    bool more = true;
    while (more) {
      const std::int64_t c = s[p] - 48;
      x |= (c & 0x1f) << (5 * k);
      more = (c & 0x20) != 0;
      ++p;
      ++k;
      if (!more && (c & 0x10)) x |= -1LL << (5 * k);
    }
    if (counts.size() > 2) x += counts[counts.size() - 2];
    counts.push_back(x);
  }
  return counts;
}

}  // namespace

TEST_CASE("coco_rle_counts: Ultralytics' save_json strings for the same masks") {
  auto a = torch::zeros({4, 5}, torch::kUInt8);
  a.slice(0, 1, 3).slice(1, 1, 4).fill_(1);
  const auto b = torch::zeros({4, 5}, torch::kUInt8);
  auto c = torch::zeros({4, 5}, torch::kUInt8);
  c[0][0] = 1;
  c[3][4] = 1;
  auto d = torch::zeros({100, 80}, torch::kUInt8);
  d.slice(0, 10, 90).slice(1, 5, 70).fill_(1);
  d.slice(0, 40, 45).slice(1, 20, 30).fill_(0);
  auto e = torch::ones({100, 80}, torch::kUInt8);
  e.slice(0, 50).slice(1, 60).fill_(0);
  CHECK(core::coco_rle_counts(a) == "5220003");
  CHECK(core::coco_rle_counts(b) == "d0");
  CHECK(core::coco_rle_counts(c) == "01b00");
  CHECK(core::coco_rle_counts(d) ==
        "n?`2d00000000000000000000000000000^NA??AA??AA??AA??AA??AA??AA??AA??AA??AA??S1000"
        "000000000000000000000000000000000000000000000000000000000000000000000000000nn0");
  CHECK(core::coco_rle_counts(e) == "0Rm5b1`TJ0000000000000000000000000000000000000");
  // The runs add up to the mask, alternating from background.
  std::int64_t total = 0;
  for (auto n : decode_counts(core::coco_rle_counts(d))) total += n;
  CHECK(total == 100 * 80);
}

TEST_CASE("detection_rles: masks kept inside their boxes, mapped back through the letterbox to the original size") {
  // A 64 x 64 batch letterboxing a 64 x 32 (w x h) original: scale 1, 16 rows of padding above
  // and below. Prototypes at 1/4 (16 x 16): channel 0 positive everywhere.
  Geometry g;
  g.original_width = 64;
  g.original_height = 32;
  g.pad_y = 16;
  auto proto = torch::zeros({2, 16, 16});
  proto[0].fill_(1.0);
  const auto coef = torch::tensor({{1.0f, 0.0f}, {-1.0f, 0.0f}});
  // Box rows 20..36, columns 8..40 in the batch: rows 4..20 of the original.
  const auto boxes = torch::tensor({{8.0f, 20.0f, 40.0f, 36.0f}, {8.0f, 20.0f, 40.0f, 36.0f}});
  const auto rles = core::detection_rles(proto, coef, boxes, 64, 64, g);
  REQUIRE(rles.size() == 2);
  auto want = torch::zeros({32, 64}, torch::kUInt8);
  want.slice(0, 4, 20).slice(1, 8, 40).fill_(1);
  CHECK(rles[0] == core::coco_rle_counts(want));
  CHECK(rles[1] == core::coco_rle_counts(torch::zeros({32, 64}, torch::kUInt8)));  // negative: no mask
}
