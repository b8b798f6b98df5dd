#pragma once
// results.csv: one row per epoch, Ultralytics' columns first (so existing plotting tools
// read it), then our extra columns in the order they first appeared. Rewritten atomically
// after every epoch; reloaded on resume.
#include <map>
#include <string>
#include <vector>

namespace yoloflow::core {

class ResultsCsv {
 public:
  // The columns Ultralytics 8.3 writes, in its order.
  static const std::vector<std::string>& ultralytics_columns();

  explicit ResultsCsv(std::string path);
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
  std::vector<std::string> columns_;
  std::vector<std::map<std::string, double>> rows_;
};

}  // namespace yoloflow::core
