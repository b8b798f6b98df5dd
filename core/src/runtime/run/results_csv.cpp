#include "runtime/run/results_csv.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "runtime/util/atomic_file.h"
#include "yoloflow/error.h"
#include "yoloflow/user_file.h"

namespace yoloflow::core {

ResultsCsv::ResultsCsv(std::string path, std::vector<std::string> leading)
    : path_(std::move(path)), leading_(std::move(leading)), columns_(leading_) {}

namespace {
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) {
    cell.erase(0, cell.find_first_not_of(" \t\r"));
    cell.erase(cell.find_last_not_of(" \t\r") + 1);
    out.push_back(cell);
  }
  // getline drops a last empty cell ("1,2,"): a row whose last columns are empty (a loss's
  // validation columns before its first validation) still has one cell per column.
  const auto end = line.find_last_not_of(" \t\r");
  if (end != std::string::npos && line[end] == ',') out.emplace_back();
  return out;
}
}  // namespace

void ResultsCsv::load(int keep_epochs) {
  rows_.clear();
  columns_ = leading_;
  if (unreachable_path(path_) == "does not exist") return;
  // Read a line at a time through the bounded reader: a results.csv replaced by something else
  // (a named pipe, a file without newlines) is refused in one line instead of read whole.
  constexpr LineBudget kResultsLines{64 * 1024, 1'000'000, "a results.csv"};
  std::vector<std::string> header;
  for_each_line(path_, kResultsLines, "results.csv '" + path_ + "'", [&](const std::string& line, std::size_t lineno) {
    if (lineno == 1) {
      header = split_csv(line);
      for (const auto& h : header) {
        if (std::find(columns_.begin(), columns_.end(), h) == columns_.end()) columns_.push_back(h);
      }
      return true;
    }
    if (line.empty()) return true;
    const auto cells = split_csv(line);
    if (cells.size() != header.size()) {
      throw Error(path_ + ":" + std::to_string(lineno) + ": expected " +
                  std::to_string(header.size()) + " values, found " + std::to_string(cells.size()));
    }
    std::map<std::string, double> row;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (cells[i].empty()) continue;
      try {
        row[header[i]] = std::stod(cells[i]);
      } catch (...) {
        row[header[i]] = std::numeric_limits<double>::quiet_NaN();
      }
    }
    if (keep_epochs >= 0 && row.count("epoch") && row["epoch"] > keep_epochs) return true;
    rows_.push_back(std::move(row));
    return true;
  });
}

void ResultsCsv::add_row(const std::map<std::string, double>& values) {
  for (const auto& [k, v] : values) {
    if (std::find(columns_.begin(), columns_.end(), k) == columns_.end()) columns_.push_back(k);
  }
  rows_.push_back(values);
}

void ResultsCsv::save() const {
  std::ostringstream os;
  for (std::size_t i = 0; i < columns_.size(); ++i) os << (i ? "," : "") << columns_[i];
  os << "\n";
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      if (i) os << ",";
      auto it = row.find(columns_[i]);
      if (it == row.end() || std::isnan(it->second)) continue;
      if (columns_[i] == "epoch") {
        os << static_cast<long long>(std::llround(it->second));
      } else {
        std::ostringstream cell;
        cell.precision(6);
        cell << it->second;
        os << cell.str();
      }
    }
    os << "\n";
  }
  write_file_atomic(path_, os.str());
}

std::vector<double> ResultsCsv::series(const std::string& column) const {
  std::vector<double> out;
  for (const auto& row : rows_) {
    auto it = row.find(column);
    out.push_back(it == row.end() ? std::numeric_limits<double>::quiet_NaN() : it->second);
  }
  return out;
}

}  // namespace yoloflow::core
