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
  auto parse_line = [&](const std::string& line, std::size_t line_no) {
    std::istringstream in(line);
    std::vector<std::string> tokens;
    for (std::string t; in >> t;) tokens.push_back(t);
    if (tokens.empty()) return;
    ++out.lines;
    const std::string where = "line " + std::to_string(line_no);
    const bool polygon = tokens.size() >= 7 && tokens.size() % 2 == 1;
    if (tokens.size() != 5 && !polygon) {
      report({path, "bad label line " + std::to_string(line_no) +
                                      ": expected 5 values (class cx cy w h), found " +
                                      std::to_string(tokens.size()),
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
                            "dropped box"});
      return;
    }
    if (outside) {
      report({path, "box partly outside image on " + where + " " + corners,
                            "clipped box"});
    }
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
    out.issues.push_back({path, e.what(), "skipped image"});
    return out;
  }
  if (more_issues > 0) out.issues.push_back({path, std::to_string(more_issues) + " more problems in this file", "as above"});
  return out;
}

}  // namespace yoloflow::plugins::yolo
