// The scalecast command-line client as a library: RunCli is the whole program, minus the
// process (main.cc passes argv, std::cout/std::cerr and the real environment), so tests run it
// in-process against a server on port 0.
#ifndef SCALECAST_CLIENTS_CLI_CLI_H_
#define SCALECAST_CLIENTS_CLI_CLI_H_

#include <ostream>
#include <string>
#include <vector>

#include "clients/cli/flags.h"

namespace scalecast::cli {

// Exit statuses.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;   // bad flags, values or files
inline constexpr int kExitServer = 3;  // the server refused the call or could not be reached

// Runs one command line (`args` without the program name). Results go to `out`; errors, and the
// sweep progress bar when `env.stderr_is_tty`, go to `err`. Returns the exit status.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           const Env& env);

}  // namespace scalecast::cli

#endif  // SCALECAST_CLIENTS_CLI_CLI_H_
