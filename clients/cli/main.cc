// scalecast: the command-line client of the scalecast service (clients/cli/cli.h).
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "clients/cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  scalecast::cli::Env env;
  env.getenv = [](const char* name) { return std::getenv(name); };
  env.stderr_is_tty = ::isatty(STDERR_FILENO) == 1;
  const int status = scalecast::cli::RunCli(args, std::cout, std::cerr, env);
  std::cout.flush();
  return status;
}
