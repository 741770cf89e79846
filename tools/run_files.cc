#include "tools/run_files.h"

#include <fstream>
#include <map>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/framework.h"

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
  // Where each CSV id was first seen: an annotation keyed by id applies to every run of that id,
  // so two runs sharing one would silently share their facts.
  std::map<std::string, std::string> seen;
  for (const std::string& csv : csvs) {
    absl::StatusOr<std::string> text = read(csv);
    if (!text.ok()) return text.status();
    std::vector<int> lines;
    absl::StatusOr<std::vector<Measurement>> parsed = ParseMeasurementsCsv(*text, &lines);
    if (!parsed.ok()) return in_file(csv, parsed.status());
    for (size_t i = 0; i < parsed->size(); ++i) {
      Measurement& m = (*parsed)[i];
      const auto id = m.labels.find(kCsvIdLabel);
      if (id != m.labels.end()) {
        const std::string here = absl::StrCat(csv, " line ", lines[i]);
        const auto [first, added] = seen.emplace(id->second, here);
        if (!added) {
          return absl::InvalidArgumentError(
              absl::StrCat(here, ", column id: ", id->second, " is also the id of ", first->second,
                           " (annotations keyed by id would apply to both runs)"));
        }
      }
      runs.push_back(std::move(m));
    }
  }
  for (const std::string& path : annotations) {
    absl::StatusOr<std::string> text = read(path);
    if (!text.ok()) return text.status();
    if (absl::Status s = ApplyRunAnnotations(*text, &runs); !s.ok()) return in_file(path, s);
  }
  return runs;
}

double SoftwareDateOf(const Measurement& m) {
  const Framework* f = FindFramework(m.scenario.framework);
  absl::StatusOr<Stack> st = ResolveStack(f != nullptr ? *f : GenericFramework(), m.scenario.stack,
                                          m.scenario.workload.precision);
  return st.ok() ? st->software_date : 0;
}

}  // namespace scalecast::tools
