// Internal to the CLI: the connection to the server and one function per command.
#ifndef SCALECAST_CLIENTS_CLI_COMMANDS_H_
#define SCALECAST_CLIENTS_CLI_COMMANDS_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <memory>
#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clients/cli/flags.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/scalecast_grpc.h"

namespace scalecast::cli {

// A channel to the server with the global options' credentials, deadline and token.
class Client {
 public:
  // Fails (INVALID_ARGUMENT) only on an unreadable --tls-ca file; connecting is lazy.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const GlobalOptions& options);
  // Sets the per-call deadline and the bearer token on a fresh context.
  void Prepare(grpc::ClientContext* ctx) const;
  pb::Scalecast::Stub* stub() { return stub_.get(); }
  grpc::health::v1::Health::Stub* health() { return health_.get(); }

 private:
  explicit Client(const GlobalOptions& options) : options_(options) {}
  GlobalOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Scalecast::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

// One command line being run.
struct Invocation {
  const ParsedArgs& args;
  const GlobalOptions& options;
  std::ostream& out;
  std::ostream& err;
  const Env& env;
};

// Print the error and return the exit status (2 and 3).
int UsageError(const Invocation& inv, const absl::Status& status);
int RpcError(const Invocation& inv, const grpc::Status& status);

// The file an output flag (--plot, --svg) names: nullptr when the flag is not given; an error
// naming the flag for an empty name. Checked before the call, so that no answer is lost to it.
absl::StatusOr<const std::string*> OutputPath(const Invocation& inv, absl::string_view flag);
// `text` into the file `path` that `flag` named; an error naming the flag when it cannot.
absl::Status WriteOutput(absl::string_view flag, const std::string& path, const std::string& text);

// Dispatches on inv.args.command.
int RunCommand(const Invocation& inv);

}  // namespace scalecast::cli

#endif  // SCALECAST_CLIENTS_CLI_COMMANDS_H_
