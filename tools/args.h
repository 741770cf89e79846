// What the command-line tools share for their flags: one CLI11 app per tool (its help is the
// usage), a usage error said with the flag it names (exit 2), and number checks whose messages
// say the range.
#ifndef SCALECAST_TOOLS_ARGS_H_
#define SCALECAST_TOOLS_ARGS_H_

#include <functional>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"

namespace scalecast::tools {

// Exit code of a usage error (as the CLI's).
inline constexpr int kUsageExit = 2;

// Parses the command line into `app`'s options: nullopt when the tool goes on; else the exit
// code of a run that ends here: 0 after --help (the help on stdout), kUsageExit after a usage
// error (CLI11's message naming the flag, then the usage, on stderr).
std::optional<int> ParseCommandLine(CLI::App* app, int argc, char** argv);

// A usage error the tool finds after parsing (a rule between flags): `message`, then the usage,
// on stderr; returns kUsageExit.
int UsageError(const CLI::App& app, const std::string& message);

// A flag's value as a finite number that `ok` accepts, said as `range` ("> 0", "in (0, 1)") in
// the help and in the error ("--noise: 'x' is not a number >= 0").
CLI::Validator NumberIn(const std::string& range, std::function<bool(double)> ok);

}  // namespace scalecast::tools

#endif  // SCALECAST_TOOLS_ARGS_H_
