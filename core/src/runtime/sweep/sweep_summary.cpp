#include "runtime/sweep/sweep_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "runtime/sweep/run_state.h"
#include "runtime/run/results_csv.h"
#include "runtime/util/atomic_file.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMetricsPrefix = "metrics/";

// The metric columns any run has, in the order they first appear (the runs' evaluators name them).
std::vector<std::string> metric_names(const std::vector<SummaryRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) {
    for (const auto& [name, value] : r.metrics) {
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
  }
  return out;
}

std::vector<std::string> columns(const std::vector<std::string>& metrics) {
  std::vector<std::string> out = {"run", "status", "epochs", "time_s", "img_s", "peak_gpu_mem_GiB"};
  out.insert(out.end(), metrics.begin(), metrics.end());
  for (const char* c : {"fitness", "reason", "dir", "overrides"}) out.emplace_back(c);
  return out;
}

std::string number(const std::optional<double>& v, int digits) {
  if (!v) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, *v);
  return buf;
}

std::vector<std::string> cells(const SummaryRow& r, const std::vector<std::string>& metrics) {
  std::vector<std::string> out = {r.run,  r.status, r.epochs, number(r.time_s, 1), number(r.img_s, 1),
                                  number(r.peak_gpu_mem_gib, 2)};
  for (const auto& name : metrics) {
    std::optional<double> v;
    for (const auto& [n, value] : r.metrics) {
      if (n == name) v = value;
    }
    out.push_back(number(v, 4));
  }
  for (const auto& c : {number(r.fitness, 4), r.reason, r.dir, r.overrides}) out.push_back(c);
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string md_field(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

void fill_from_results(SummaryRow& row, const std::string& path) {
  ResultsCsv csv(path);
  try {
    csv.load();
  } catch (const std::exception&) {
    return;  // unreadable: the row keeps its status, without numbers
  }
  const auto& rows = csv.rows();
  if (rows.empty()) return;
  auto get = [](const std::map<std::string, double>& r, const char* col) -> std::optional<double> {
    auto it = r.find(col);
    if (it == r.end() || std::isnan(it->second)) return std::nullopt;
    return it->second;
  };
  row.time_s = get(rows.back(), "time");
  double ips = 0, mem = -1;
  int n = 0;
  for (const auto& r : rows) {
    if (auto v = get(r, "images_per_second")) {
      ips += *v;
      ++n;
    }
    if (auto v = get(r, "gpu_mem_GiB")) mem = std::max(mem, *v);
  }
  if (n > 0) row.img_s = ips / n;
  if (mem >= 0) row.peak_gpu_mem_gib = mem;
  // The last validated epoch (val_every may skip epochs): the one with a fitness, which the
  // trainer writes beside the evaluator's metrics.
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    if (auto fitness = get(*it, "fitness")) {
      row.fitness = fitness;
      for (const auto& column : csv.columns()) {
        if (column.rfind(kMetricsPrefix, 0) != 0) continue;
        if (auto v = get(*it, column.c_str())) row.metrics.emplace_back(column.substr(std::string(kMetricsPrefix).size()), *v);
      }
      break;
    }
  }
}

}  // namespace

std::vector<SummaryRow> collect_summary(const SweepPlan& plan, const std::string& out_dir) {
  std::vector<SummaryRow> rows;
  for (const auto& run : plan.runs) {
    const std::string dir = (fs::path(out_dir) / run.folder).string();
    const RunState state = read_run_state(dir);
    SummaryRow row;
    row.run = run.name;
    row.status = state.status();
    if (state.epochs > 0) row.epochs = std::to_string(state.epochs_done) + "/" + std::to_string(state.epochs);
    row.reason = state.status() == "failed" || state.status() == "done" ? state.marker.reason : "";
    row.dir = dir;
    for (const auto& o : run.overrides) row.overrides += (row.overrides.empty() ? "" : " ") + o;
    fill_from_results(row, dir + "/results.csv");
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const SummaryRow& a, const SummaryRow& b) {
    if (a.fitness.has_value() != b.fitness.has_value()) return a.fitness.has_value();
    return a.fitness && *a.fitness > *b.fitness;
  });
  return rows;
}

std::string summary_csv(const std::vector<SummaryRow>& rows) {
  const auto metrics = metric_names(rows);
  const auto header = columns(metrics);
  std::string out;
  for (std::size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + header[i];
  out += "\n";
  for (const auto& r : rows) {
    const auto c = cells(r, metrics);
    for (std::size_t i = 0; i < c.size(); ++i) out += (i ? "," : "") + csv_field(c[i]);
    out += "\n";
  }
  return out;
}

std::string summary_markdown(const std::string& sweep_name, const std::vector<SummaryRow>& rows) {
  std::size_t done = 0;
  for (const auto& r : rows) done += r.status == "done";
  const auto metrics = metric_names(rows);
  const auto header = columns(metrics);
  std::string out = "# Sweep " + sweep_name + "\n\n" + std::to_string(done) + " of " + std::to_string(rows.size()) +
                    " runs done; sorted by fitness (the evaluator's, of the last validated epoch: mAP50-95 for "
                    "detection).\n\n|";
  for (const auto& c : header) out += " " + c + " |";
  out += "\n|";
  for (std::size_t i = 0; i < header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& r : rows) {
    out += "|";
    for (const auto& c : cells(r, metrics)) out += " " + md_field(c) + " |";
    out += "\n";
  }
  return out;
}

std::vector<SummaryRow> write_summary(const SweepPlan& plan, const std::string& out_dir) {
  auto rows = collect_summary(plan, out_dir);
  fs::create_directories(out_dir);
  write_file_atomic((fs::path(out_dir) / "summary.csv").string(), summary_csv(rows));
  write_file_atomic((fs::path(out_dir) / "summary.md").string(), summary_markdown(plan.name, rows));
  return rows;
}

}  // namespace yoloflow::core
