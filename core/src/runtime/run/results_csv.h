#pragma once
// results.csv: one row per epoch, the leading columns the run gives first (Ultralytics' for
// its task, so existing plotting tools read it: epoch, time, the train losses, the evaluator's
// metrics, the validation losses, the learning rates), then the other columns in the order they
// first appeared. Rewritten atomically after every epoch; reloaded on resume.
#include <map>
#include <string>
#include <vector>

namespace yoloflow::core {

class ResultsCsv {
 public:
  // `leading`: the columns every file starts with, in order (the trainer's: epoch_report.h).
  explicit ResultsCsv(std::string path, std::vector<std::string> leading = {"epoch", "time"});
  // Reads an existing file (resume); rows after `keep_epochs` are dropped. Missing file: no rows.
  void load(int keep_epochs = -1);
  void add_row(const std::map<std::string, double>& values);
  void save() const;  // atomic

  const std::vector<std::string>& columns() const { return columns_; }
  const std::vector<std::map<std::string, double>>& rows() const { return rows_; }
  // Values of one column over the rows (NaN where a row lacks it).
  std::vector<double> series(const std::string& column) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> leading_;
  std::vector<std::string> columns_;
  std::vector<std::map<std::string, double>> rows_;
};

}  // namespace yoloflow::core
