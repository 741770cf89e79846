#include "tools/run_files.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace scalecast::tools {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

absl::StatusOr<std::vector<Measurement>> LoadRuns(const std::vector<std::string>& csvs,
                                                  const std::vector<std::string>& annotations) {
  auto read = [](const std::string& path) -> absl::StatusOr<std::string> {
    std::string text;
    if (!ReadFile(path, &text)) return absl::NotFoundError(absl::StrCat("cannot read ", path));
    return text;
  };
  auto in_file = [](const std::string& path, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  };
  std::vector<Measurement> runs;
  for (const std::string& csv : csvs) {
    absl::StatusOr<std::string> text = read(csv);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<Measurement>> parsed = ParseMeasurementsCsv(*text);
    if (!parsed.ok()) return in_file(csv, parsed.status());
    for (Measurement& m : *parsed) runs.push_back(std::move(m));
  }
  for (const std::string& path : annotations) {
    absl::StatusOr<std::string> text = read(path);
    if (!text.ok()) return text.status();
    if (absl::Status s = ApplyRunAnnotations(*text, &runs); !s.ok()) return in_file(path, s);
  }
  return runs;
}

}  // namespace scalecast::tools
