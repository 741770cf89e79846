#include "clients/cli/table.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace scalecast::cli {

std::string Table::Render(const std::string& indent, size_t max_width,
                          std::vector<std::string>* dropped) const {
  std::vector<size_t> width(columns_.size(), 0);
  for (size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].header.size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size() && c < columns_.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  std::vector<bool> shown(columns_.size(), true);
  auto total = [&] {
    size_t w = indent.size(), n = 0;
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (shown[c]) w += width[c] + (n++ > 0 ? 2 : 0);
    }
    return w;
  };
  std::vector<std::string> left_out;
  for (size_t c = columns_.size(); max_width > 0 && c > 0 && total() > max_width; --c) {
    if (columns_[c - 1].optional) {
      shown[c - 1] = false;
      left_out.insert(left_out.begin(), columns_[c - 1].header);
    }
  }
  if (dropped != nullptr) *dropped = std::move(left_out);
  size_t last_shown = 0;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (shown[c]) last_shown = c;
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = indent;
    bool first = true;
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (!shown[c]) continue;
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      if (!first) out += "  ";
      first = false;
      if (columns_[c].left) {
        out += cell;
        if (c != last_shown) out += pad;
      } else {
        out += pad + cell;
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> headers, rule;
  for (size_t c = 0; c < columns_.size(); ++c) {
    headers.push_back(columns_[c].header);
    rule.push_back(std::string(width[c], '-'));
  }
  std::string out = line(headers) + line(rule);
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string KeyValues(const std::vector<std::pair<std::string, std::string>>& rows,
                      const std::string& indent) {
  size_t w = 0;
  for (const auto& [k, v] : rows) w = std::max(w, k.size());
  std::string out;
  for (const auto& [k, v] : rows) {
    absl::StrAppend(&out, indent, k, std::string(w - k.size() + 2, ' '), v, "\n");
  }
  return out;
}

std::string ExactDouble(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string CsvNumber(double v) {
  if (!std::isfinite(v)) return ExactDouble(v);
  if (v == 0) return "0";
  if (std::fabs(v) >= 1e4) return absl::StrFormat("%.0f", v);
  // %.4g, then without an exponent: 1.234e-05 -> 0.00001234.
  const double rounded = std::stod(absl::StrFormat("%.4g", v));
  std::string s = ExactDouble(rounded);
  if (s.find('e') != std::string::npos) {
    s = absl::StrFormat("%.*f", 3 - static_cast<int>(std::floor(std::log10(std::fabs(v)))),
                        rounded);
  }
  return s;
}

std::string Fixed(double v, int decimals) { return absl::StrFormat("%.*f", decimals, v); }

std::string Thousands(double v, int decimals) {
  std::string s = Fixed(std::fabs(v), decimals);
  const size_t dot = s.find('.');
  std::string whole = s.substr(0, dot == std::string::npos ? s.size() : dot);
  const std::string frac = dot == std::string::npos ? "" : s.substr(dot);
  std::string grouped;
  for (size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) grouped += ',';
    grouped += whole[i];
  }
  const bool negative = v < 0 && Fixed(std::fabs(v), decimals) != Fixed(0, decimals);
  return (negative ? "-" : "") + grouped + frac;
}

std::string Significant(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return Fixed(v, 0);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  const int decimals = std::max(0, digits - 1 - magnitude);
  return Fixed(v, decimals);
}

std::string Seconds(double v) {
  const double a = std::fabs(v);
  if (a == 0) return "0 s";
  if (a >= 1) return Fixed(v, 3) + " s";
  if (a >= 1e-3) return Significant(v * 1e3, 3) + " ms";
  return Significant(v * 1e6, 3) + " us";
}

std::string Percent(double fraction, int decimals) { return Fixed(fraction * 100, decimals) + "%"; }

std::string GiB(int64_t bytes, int decimals) {
  return Fixed(static_cast<double>(bytes) / (1024.0 * 1024 * 1024), decimals) + " GiB";
}

std::string Bytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (std::fabs(v) >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(bytes, " B") : Fixed(v, 2) + " " + kUnits[u];
}

std::string Compact(double v) {
  const double a = std::fabs(v);
  struct Unit {
    double scale;
    const char* suffix;
  };
  for (Unit u : {Unit{1e12, "T"}, Unit{1e9, "G"}, Unit{1e6, "M"}, Unit{1e3, "k"}}) {
    if (a >= u.scale) {
      std::string s = Significant(v / u.scale, 3);
      if (s.find('.') != std::string::npos) {
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
      }
      return s + u.suffix;
    }
  }
  std::string s = Significant(v, 3);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvLine(const std::vector<std::string>& fields) {
  std::vector<std::string> quoted;
  quoted.reserve(fields.size());
  for (const std::string& f : fields) quoted.push_back(CsvField(f));
  return absl::StrJoin(quoted, ",") + "\n";
}

std::string ToJson(const google::protobuf::Message& m, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.add_whitespace = pretty;
  std::string out;
  // Printing a well-formed message only fails on invalid UTF-8 in strings; say so in the output.
  if (!google::protobuf::util::MessageToJsonString(m, &out, options).ok()) {
    return "{\"error\": \"the response could not be printed as JSON\"}\n";
  }
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

}  // namespace scalecast::cli
