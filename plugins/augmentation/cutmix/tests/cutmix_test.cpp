// cutmix, loaded as a real plugin: the pasted rectangle holds exactly the other sample's pixels
// and covers none of this sample's boxes, the other sample's boxes with a tenth or more of
// their area inside come along clipped to it, and nothing changes when no rectangle qualifies.
#include <set>
#include <tuple>

#include "augmentation/tests/painted_samples.h"

using namespace yoloflow;

namespace {

// A painted sample on grey 60 instead of black: every pixel differs from a black-background
// sample's background, so the pixels a paste changed are exactly the pasted rectangle.
Sample painted_on_grey(int w, int h, const std::vector<cv::Rect>& rects, int first_colour, std::size_t index) {
  Sample s = test::painted_sample(w, h, rects, first_colour, index);
  cv::Mat black;
  cv::inRange(s.image, cv::Scalar(0, 0, 0), cv::Scalar(0, 0, 0), black);
  s.image.setTo(cv::Scalar(60, 60, 60), black);
  return s;
}

double overlap(const cv::Rect& r, const Box& b) {
  const double w = std::min<double>(r.x + r.width, b.x2) - std::max<double>(r.x, b.x1);
  const double h = std::min<double>(r.y + r.height, b.y2) - std::max<double>(r.y, b.y1);
  return std::max(0.0, w) * std::max(0.0, h);
}

// The pixels where `out` differs from `base`.
cv::Rect changed_region(const Sample& out, const Sample& base) {
  cv::Mat diff, mask;
  cv::absdiff(out.image, base.image, diff);
  cv::cvtColor(diff, mask, cv::COLOR_BGR2GRAY);
  return cv::boundingRect(mask > 0);
}

}  // namespace

TEST_CASE("cutmix pastes another sample's rectangle off this sample's boxes, with its boxes mostly inside") {
  plugin_test::PluginSet pm;
  auto cutmix = plugin_test::make_augmentation(pm, "cutmix", {{"p", 1.0}}, 160);
  const Sample base = test::painted_sample(160, 160, {{10, 10, 40, 40}, {100, 110, 40, 30}}, 0);
  const Sample other =
      painted_on_grey(160, 160, {{0, 60, 70, 40}, {80, 0, 60, 60}, {60, 60, 50, 50}, {20, 120, 130, 30}}, 2, 0);
  test::FixedLoader loader({other});

  int pasted = 0, unchanged = 0, clipped = 0, dropped_sliver = 0;
  std::set<std::tuple<int, int, int, int>> regions;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    CAPTURE(seed);
    const Sample out = test::augmented(*cutmix, base, seed, 160, loader);
    CHECK(test::same_output(out, test::augmented(*cutmix, base, seed, 160, loader)));
    if (test::same_output(out, base)) {
      ++unchanged;
      continue;
    }
    ++pasted;
    const cv::Rect r = changed_region(out, base);
    CAPTURE(r);
    REQUIRE(r.area() > 0);
    regions.insert({r.x, r.y, r.width, r.height});
    // Inside: the other sample's pixels; outside: this sample's, untouched.
    cv::Mat expected = base.image.clone();
    other.image(r).copyTo(expected(r));
    CHECK(cv::norm(out.image, expected, cv::NORM_INF) == 0);
    // The rectangle covers none of this sample's boxes, which are kept as they were, first.
    REQUIRE(out.boxes.size() > base.boxes.size());
    for (std::size_t i = 0; i < base.boxes.size(); ++i) {
      const Box &got = out.boxes[i], &had = base.boxes[i];
      CHECK(overlap(r, had) == 0);
      CHECK((got.x1 == had.x1 && got.y1 == had.y1 && got.x2 == had.x2 && got.y2 == had.y2 && got.cls == had.cls));
    }
    // The other sample's boxes with at least a tenth of their area inside, clipped to it.
    std::vector<Box> want;
    for (const Box& b : other.boxes) {
      const double share = overlap(r, b) / (b.width() * b.height());
      if (share < 0.1) {
        if (share > 0) ++dropped_sliver;
        continue;
      }
      Box c = b;
      c.x1 = std::max<float>(c.x1, r.x);
      c.y1 = std::max<float>(c.y1, r.y);
      c.x2 = std::min<float>(c.x2, r.x + r.width);
      c.y2 = std::min<float>(c.y2, r.y + r.height);
      if (c.width() < b.width() || c.height() < b.height()) ++clipped;
      want.push_back(c);
    }
    REQUIRE(out.boxes.size() == base.boxes.size() + want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      const Box& got = out.boxes[base.boxes.size() + i];
      CAPTURE(i);
      CHECK(got.cls == want[i].cls);
      CHECK(got.x1 == want[i].x1);
      CHECK(got.y1 == want[i].y1);
      CHECK(got.x2 == want[i].x2);
      CHECK(got.y2 == want[i].y2);
    }
  }
  // Beta(1, 1) areas: many rectangles, some over a box (unchanged), some pasted; pasted boxes
  // cut by the rectangle's edge, and boxes only grazed by it left out.
  MESSAGE("pasted " << pasted << ", unchanged " << unchanged << ", clipped " << clipped << ", dropped slivers "
                    << dropped_sliver);
  CHECK(pasted > 100);
  CHECK(unchanged > 0);
  CHECK(regions.size() > 50);
  CHECK(clipped > 0);
  CHECK(dropped_sliver > 0);
}

TEST_CASE("cutmix leaves the sample as it is when no rectangle is free or none brings a box") {
  plugin_test::PluginSet pm;
  auto cutmix = plugin_test::make_augmentation(pm, "cutmix", {{"p", 1.0}, {"num_areas", 5}}, 160);
  const Sample other = painted_on_grey(160, 160, {{20, 20, 120, 120}}, 2, 0);
  test::FixedLoader loader({other});
  // A box over the whole image: every rectangle with pixels would cover it.
  const Sample covered = test::painted_sample(160, 160, {{0, 0, 160, 160}}, 0);
  // Another sample without boxes: nothing to label in any rectangle.
  const Sample empty_other = painted_on_grey(160, 160, {}, 2, 0);
  test::FixedLoader empty_loader({empty_other});
  const Sample base = test::painted_sample(160, 160, {{10, 10, 20, 20}}, 0);
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    CAPTURE(seed);
    CHECK(test::same_output(test::augmented(*cutmix, covered, seed, 160, loader), covered));
    CHECK(test::same_output(test::augmented(*cutmix, base, seed, 160, empty_loader), base));
  }
}

TEST_CASE("cutmix is off by default and letterboxes another sample of a different size") {
  plugin_test::PluginSet pm;
  const Sample base = test::painted_sample(160, 160, {}, 0);
  // 160x80, one box over all of it: fitted unscaled with 40 rows of grey 114 above and below.
  const Sample small = painted_on_grey(160, 80, {{0, 0, 160, 80}}, 2, 0);
  test::FixedLoader loader({small});

  auto never = plugin_test::make_augmentation(pm, "cutmix", json::object(), 160);  // p = 0 by default
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    CHECK(test::same_output(test::augmented(*never, base, seed, 160, loader), base));
  }

  auto cutmix = plugin_test::make_augmentation(pm, "cutmix", {{"p", 1.0}}, 160);
  cv::Mat fitted(160, 160, CV_8UC3, cv::Scalar(114, 114, 114));
  small.image.copyTo(fitted(cv::Rect(0, 40, 160, 80)));
  int pasted = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    CAPTURE(seed);
    const Sample out = test::augmented(*cutmix, base, seed, 160, loader);
    if (test::same_output(out, base)) continue;
    ++pasted;
    const cv::Rect r = changed_region(out, base);
    CAPTURE(r);
    cv::Mat expected = base.image.clone();
    fitted(r).copyTo(expected(r));
    CHECK(cv::norm(out.image, expected, cv::NORM_INF) == 0);
    REQUIRE(out.boxes.size() == 1);
    CHECK(out.boxes[0].cls == 2);
    CHECK(out.boxes[0].x1 == doctest::Approx(r.x));
    CHECK(out.boxes[0].x2 == doctest::Approx(r.x + r.width));
    CHECK(out.boxes[0].y1 == doctest::Approx(std::max(40, r.y)));
    CHECK(out.boxes[0].y2 == doctest::Approx(std::min(120, r.y + r.height)));
  }
  CHECK(pasted > 20);
}

TEST_CASE("cutmix meets the augmentation contract") {
  plugin_test::PluginSet pm;
  auto cutmix = plugin_test::make_augmentation(pm, "cutmix", {{"p", 1.0}}, 160);
  const std::vector<Sample> samples = {
      test::painted_sample(160, 160, {{10, 10, 50, 60}, {20, 100, 40, 40}}, 0, 0),
      painted_on_grey(160, 160, {{100, 20, 50, 50}, {90, 90, 60, 60}}, 2, 1),
      painted_on_grey(160, 80, {{0, 10, 120, 60}}, 4, 2),
      test::painted_sample(160, 160, {}, 0, 3)};
  const auto problems = testing::augmentation_contract(*cutmix, samples, 160, 16);
  for (const auto& p : problems) MESSAGE(p);
  CHECK(problems.empty());
}
