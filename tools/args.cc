#include "tools/args.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace scalecast::tools {

std::optional<int> ParseCommandLine(CLI::App* app, int argc, char** argv) {
  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app->help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    return UsageError(*app, e.what());
  }
  return std::nullopt;
}

int UsageError(const CLI::App& app, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n\n%s", app.get_name().c_str(), message.c_str(), app.help().c_str());
  return kUsageExit;
}

CLI::Validator NumberIn(const std::string& range, std::function<bool(double)> ok) {
  return CLI::Validator(
      [range, ok = std::move(ok)](std::string& value) -> std::string {
        double x = 0;
        if (absl::SimpleAtod(value, &x) && std::isfinite(x) && ok(x)) return "";
        return absl::StrCat("'", value, "' is not a number ", range);
      },
      absl::StrCat("NUMBER ", range));
}

}  // namespace scalecast::tools
