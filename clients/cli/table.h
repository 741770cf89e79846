// Text helpers for the CLI's output: aligned tables, number formats with units, CSV quoting and
// protobuf JSON. ASCII only, so widths are byte counts.
#ifndef SCALECAST_CLIENTS_CLI_TABLE_H_
#define SCALECAST_CLIENTS_CLI_TABLE_H_

#include <google/protobuf/message.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace scalecast::cli {

struct Column {
  std::string header;
  bool left = false;      // numbers align right, text left
  bool optional = false;  // may be left out (right to left) to fit a width
};

// Tables fit this many columns unless --wide.
inline constexpr size_t kTableWidth = 120;

class Table {
 public:
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  // Short rows are padded with blanks.
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t size() const { return rows_.size(); }
  // Header, a rule of dashes, then the rows; columns two spaces apart; each line `indent`ed.
  // With `max_width` > 0, optional columns are left out, the rightmost first, until every line
  // fits (or none is left to drop); `dropped` (when non-null) gets their headers, left to right.
  std::string Render(const std::string& indent = "", size_t max_width = 0,
                     std::vector<std::string>* dropped = nullptr) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "key   value" lines with the keys padded to one width.
std::string KeyValues(const std::vector<std::pair<std::string, std::string>>& rows,
                      const std::string& indent = "  ");

// Shortest text that reads back as the same double.
std::string ExactDouble(double v);
// A number for CSV at the precision the model carries: 4 significant digits, whole numbers from
// 10,000 up (514611.99 -> "514612", 0.435312 -> "0.4353", 2.27912 -> "2.279").
std::string CsvNumber(double v);
// 1234567.8 -> "1,234,568" (decimals = 0).
std::string Thousands(double v, int decimals = 0);
std::string Fixed(double v, int decimals);
// `digits` significant digits without an exponent: 0.000612 -> "0.000612", 1234 -> "1234".
std::string Significant(double v, int digits = 3);
// 4.213 -> "4.213 s", 0.0123 -> "12.3 ms", 0.0000123 -> "12.3 us".
std::string Seconds(double v);
// A fraction as a percentage: 0.4123 -> "41.2%".
std::string Percent(double fraction, int decimals = 1);
std::string GiB(int64_t bytes, int decimals = 2);
// Binary units: "512 B", "1.50 KiB", "3.20 GiB".
std::string Bytes(int64_t bytes);
// 1.2e6 -> "1.2M", 950 -> "950", 12500 -> "12.5k".
std::string Compact(double v);

std::string CsvField(const std::string& s);
std::string CsvLine(const std::vector<std::string>& fields);

// One CSV column of rows made from `Args`: its header and its cell, declared together so that
// the header and the rows cannot fall out of step.
template <typename... Args>
struct CsvOutColumn {
  std::string name;
  std::function<std::string(const Args&...)> cell;
};
template <typename... Args>
std::vector<std::string> CsvHeader(const std::vector<CsvOutColumn<Args...>>& columns) {
  std::vector<std::string> out;
  out.reserve(columns.size());
  for (const CsvOutColumn<Args...>& c : columns) out.push_back(c.name);
  return out;
}
template <typename... Args>
std::vector<std::string> CsvCells(const std::vector<CsvOutColumn<Args...>>& columns,
                                  const Args&... args) {
  std::vector<std::string> out;
  out.reserve(columns.size());
  for (const CsvOutColumn<Args...>& c : columns) out.push_back(c.cell(args...));
  return out;
}

// Protobuf JSON (lowerCamelCase names, default values printed); `pretty` indents.
std::string ToJson(const google::protobuf::Message& m, bool pretty = true);

}  // namespace scalecast::cli

#endif  // SCALECAST_CLIENTS_CLI_TABLE_H_
