#include "label_file.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <tuple>

#include "yoloflow/error.h"
#include "yoloflow/user_file.h"

namespace yoloflow::plugins::yolo {
namespace {

bool parse_number(const std::string& token, double& out) {
  char* end = nullptr;
  out = std::strtod(token.c_str(), &end);
  return end != token.c_str() && *end == '\0' && std::isfinite(out);
}

// A token of the file as a message quotes it: printable ASCII, at most 32 characters, other
// bytes as \xNN, so that a binary file cannot write control sequences to the terminal.
std::string printable(const std::string& token) {
  std::string out;
  for (std::size_t i = 0; i < token.size() && i < 32; ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  if (token.size() > 32) out += "...";
  return out;
}

std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

LabelFile read_label_file(const std::string& path, int num_classes) {
  LabelFile out;
  // A background image has no label file: only a path that leads nowhere means "none".
  if (unreachable_path(path) == "does not exist") return out;
  out.exists = true;
  // Only a regular file of label size is read (a named pipe would block the worker, and a label
  // file is kilobytes: 64 MiB holds millions of boxes), a line at a time.
  if (std::string why = file_refusal(path, kLabelFileBudget); !why.empty()) {
    out.readable = false;
    out.issues.push_back({path, "the label file " + why, "skipped image"});
    return out;
  }
  // A file of garbage has a problem on every line: the first ones name the kind, a count the
  // rest, so that memory stays small whatever the file holds.
  constexpr std::size_t kShownIssues = 20;
  std::size_t more_issues = 0;
  auto report = [&](DataIssue issue) {
    if (out.issues.size() < kShownIssues) {
      out.issues.push_back(std::move(issue));
    } else {
      ++more_issues;
    }
  };
  // First line of each distinct (class, coordinates) row, to name duplicates.
  std::map<std::tuple<int, double, double, double, double>, std::size_t> seen;
  std::vector<std::size_t> box_lines;  // lines kept as boxes, named when the file has outlines
  auto parse_line = [&](const std::string& line, std::size_t line_no) {
    std::istringstream in(line);
    std::vector<std::string> tokens;
    for (std::string t; in >> t;) tokens.push_back(t);
    if (tokens.empty()) return;
    ++out.lines;
    const std::string where = "line " + std::to_string(line_no);
    const bool polygon = tokens.size() >= 7 && tokens.size() % 2 == 1;
    if (tokens.size() != 5 && !polygon) {
      // Up to 6 values is neither a box nor a polygon (3 points or more: 7 values); 6 is often
      // a prediction saved with its confidence. 8 or more is a polygon with an odd number of
      // coordinates: a value missing or one too many.
      const std::size_t coordinates = tokens.size() - 1;
      report({path, "bad label line " + std::to_string(line_no) +
                        (tokens.size() <= 6
                             ? ": expected 5 values (class cx cy w h) or a polygon of 3 points or more "
                               "(class x1 y1 x2 y2 x3 y3 ...), found " + std::to_string(tokens.size()) + " values"
                             : ": polygon with an odd number of coordinates (" + std::to_string(coordinates) +
                                   "): expected class then x y pairs"),
              "dropped line"});
      return;
    }
    std::vector<double> v(tokens.size());
    std::size_t bad = tokens.size();
    for (std::size_t i = 0; i < tokens.size() && bad == tokens.size(); ++i) {
      if (!parse_number(tokens[i], v[i])) bad = i;
    }
    if (bad != tokens.size()) {
      report({path, "bad label line " + std::to_string(line_no) + ": '" + printable(tokens[bad]) +
                                      "' is not a number",
                            "dropped line"});
      return;
    }
    if (v[0] != std::floor(v[0])) {
      report({path, "bad label line " + std::to_string(line_no) + ": class '" +
                                      printable(tokens[0]) + "' is not an integer",
                            "dropped line"});
      return;
    }
    if (v[0] < 0 || v[0] >= num_classes) {
      report({path, "bad label line " + std::to_string(line_no) + ": class " +
                                      printable(tokens[0]) + " out of range (data.yaml has " +
                                      std::to_string(num_classes) + " classes, 0.." +
                                      std::to_string(num_classes - 1) + ")",
                            "dropped line"});
      return;
    }
    NormalizedBox b;
    b.cls = static_cast<int>(v[0]);
    if (polygon) {
      b.x1 = b.y1 = INFINITY;
      b.x2 = b.y2 = -INFINITY;
      for (std::size_t i = 1; i + 1 < v.size(); i += 2) {
        b.x1 = std::min(b.x1, v[i]);
        b.x2 = std::max(b.x2, v[i]);
        b.y1 = std::min(b.y1, v[i + 1]);
        b.y2 = std::max(b.y2, v[i + 1]);
      }
    } else {
      if (v[3] <= 0 || v[4] <= 0) {
        report({path, "degenerate box on " + where + ": width " + printable(tokens[3]) +
                                        ", height " + printable(tokens[4]),
                              "dropped box"});
        return;
      }
      b.x1 = v[1] - v[3] / 2;
      b.x2 = v[1] + v[3] / 2;
      b.y1 = v[2] - v[4] / 2;
      b.y2 = v[2] + v[4] / 2;
    }
    // Duplicates as Ultralytics finds them: rows equal in class and box (a polygon's row is its
    // box), the outline going with its row.
    const auto key = std::make_tuple(b.cls, b.x1, b.y1, b.x2, b.y2);
    if (auto it = seen.find(key); it != seen.end()) {
      report({path, "duplicate box on " + where + " (same as line " +
                                      std::to_string(it->second) + ")",
                            "removed duplicate"});
      return;
    }
    seen.emplace(key, line_no);
    const double lo = -kRoundingTolerance, hi = 1 + kRoundingTolerance;
    const bool outside = b.x1 < lo || b.y1 < lo || b.x2 > hi || b.y2 > hi;
    const std::string corners = "(x1 " + fmt(b.x1) + ", y1 " + fmt(b.y1) + ", x2 " + fmt(b.x2) +
                                ", y2 " + fmt(b.y2) + ")";
    b.x1 = std::clamp(b.x1, 0.0, 1.0);
    b.x2 = std::clamp(b.x2, 0.0, 1.0);
    b.y1 = std::clamp(b.y1, 0.0, 1.0);
    b.y2 = std::clamp(b.y2, 0.0, 1.0);
    if (b.x2 - b.x1 <= 0 || b.y2 - b.y1 <= 0) {
      report({path, (outside ? "box outside image on " : "degenerate box on ") + where +
                                      " " + corners,
                            polygon ? "dropped box and polygon" : "dropped box"});
      return;
    }
    if (outside) {
      report({path, "box partly outside image on " + where + " " + corners,
                            polygon ? "clipped box and polygon" : "clipped box"});
    }
    // The outline clipped as its box is (clipping is monotonic: the box stays the extent of
    // the clipped vertices), so that both describe the same instance. Ultralytics clips
    // neither here (it refuses files with points over 1% outside); its augmentations clip both
    // to the image later, after resampling. For the usual case, vertices outside by rounding,
    // the outlines differ by less than kRoundingTolerance of the image.
    NormalizedPolygons& polys = out.polygons;
    if (polygon) {
      // The first outline of the file: the instances before it (box lines) have none.
      if (polys.start.empty()) polys.start.assign(out.boxes.size() + 1, 0);
      for (std::size_t i = 1; i + 1 < v.size(); i += 2) {
        polys.xy.push_back(static_cast<float>(std::clamp(v[i], 0.0, 1.0)));
        polys.xy.push_back(static_cast<float>(std::clamp(v[i + 1], 0.0, 1.0)));
      }
    }
    // A box line keeps its box and has no outline, in a file of polygons too. Ultralytics, once
    // one line of a file is a polygon, reads every line of it as one, so a box line `c cx cy w
    // h` there becomes the 2-point outline (cx, cy), (w, h) and a box spanning those numbers:
    // a wrong instance, which is not copied here.
    if (!polys.start.empty()) polys.start.push_back(static_cast<std::uint32_t>(polys.xy.size() / 2));
    if (!polygon) box_lines.push_back(line_no);
    out.boxes.push_back(b);
  };
  try {
    for_each_line(path, kLabelLineBudget, "the label file", [&](const std::string& line, std::size_t number) {
      parse_line(line, number);
      return true;
    });
  } catch (const Error& e) {
    // A line longer than any label, or the file gone since it was checked: the image is skipped.
    out.readable = false;
    out.boxes.clear();
    out.polygons = {};
    out.issues.push_back({path, e.what(), "skipped image"});
    return out;
  }
  // A box line among outlines: its instance has no outline, so a segmentation model learns an
  // empty mask for it. Named, as Ultralytics would read the line as a wrong 2-point outline.
  if (!out.polygons.start.empty()) {
    for (std::size_t line_no : box_lines) {
      report({path, "box line in a polygon file on line " + std::to_string(line_no) +
                        ": class cx cy w h among outlines; its instance has no outline (an empty mask)",
              "kept box without outline"});
    }
  }
  if (more_issues > 0) out.issues.push_back({path, std::to_string(more_issues) + " more problems in this file", "as above"});
  // The table keeps these for the whole run: no spare capacity.
  out.polygons.xy.shrink_to_fit();
  out.polygons.start.shrink_to_fit();
  return out;
}

void keep_instances(std::vector<NormalizedBox>& boxes, NormalizedPolygons& polygons, const std::vector<bool>& keep) {
  std::size_t kept = 0, kept_points = 0;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    if (!keep[i]) continue;
    boxes[kept] = boxes[i];
    if (!polygons.empty()) {
      // Moved down in place: kept_points <= start[i], so nothing unread is overwritten.
      const std::size_t from = polygons.start[i], n = polygons.points(i);
      if (from != kept_points) {
        std::copy(polygons.xy.begin() + static_cast<std::ptrdiff_t>(2 * from),
                  polygons.xy.begin() + static_cast<std::ptrdiff_t>(2 * (from + n)),
                  polygons.xy.begin() + static_cast<std::ptrdiff_t>(2 * kept_points));
      }
      polygons.start[kept] = static_cast<std::uint32_t>(kept_points);
      kept_points += n;
    }
    ++kept;
  }
  boxes.resize(kept);
  if (polygons.empty()) return;
  if (kept_points == 0) {
    polygons = {};  // no outline left: the image carries none
    return;
  }
  polygons.start[kept] = static_cast<std::uint32_t>(kept_points);
  polygons.start.resize(kept + 1);
  polygons.xy.resize(2 * kept_points);
  polygons.xy.shrink_to_fit();
  polygons.start.shrink_to_fit();
}

}  // namespace yoloflow::plugins::yolo
