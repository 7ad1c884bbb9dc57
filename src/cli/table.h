// Aligned text tables, as kubectl prints them: upper-case headers, two spaces between
// columns, no borders.
#pragma once

#include <string>
#include <vector>

namespace rsl::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t size() const { return rows_.size(); }
  //! Columns padded to their widest cell; trailing spaces trimmed; one "\n" per line.
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

//! `v` with `digits` decimals ("%.*f"): a table's numbers.
std::string Fixed(double v, int digits);

}  // namespace rsl::cli
