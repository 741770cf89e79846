#include "clients/cli/cli.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "clients/cli/commands.h"

namespace scalecast::cli {

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const GlobalOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      std::ifstream in(options.tls_ca_file, std::ios::binary);
      if (!in) {
        return absl::InvalidArgumentError(
            absl::StrCat("--tls-ca: cannot read '", options.tls_ca_file, "'"));
      }
      std::stringstream pem;
      pem << in.rdbuf();
      ssl.pem_root_certs = pem.str();
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  // Sweeps with large top_k and `measurements list --page-size 1000` answer in big messages.
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  auto client = std::unique_ptr<Client>(new Client(options));
  client->channel_ = grpc::CreateCustomChannel(options.server, credentials, args);
  client->stub_ = pb::Scalecast::NewStub(client->channel_);
  client->health_ = grpc::health::v1::Health::NewStub(client->channel_);
  return client;
}

void Client::Prepare(grpc::ClientContext* ctx) const {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::microseconds(static_cast<int64_t>(options_.timeout_s * 1e6)));
  if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
}

int UsageError(const Invocation& inv, const absl::Status& status) {
  inv.err << "error: " << status.message() << "\n";
  if (!inv.args.command.empty()) inv.err << CommandSynopsis(inv.args.command) << "\n";
  inv.err << "Run 'scalecast " << (inv.args.command.empty() ? "" : inv.args.command + " ")
          << "--help' for usage.\n";
  return kExitUsage;
}

absl::StatusOr<const std::string*> OutputPath(const Invocation& inv, absl::string_view flag) {
  const std::string* path = inv.args.Last(std::string(flag));
  if (path != nullptr && path->empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": needs a file name"));
  }
  return path;
}

absl::Status WriteOutput(absl::string_view flag, const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f)
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot write '", path, "'"));
  return absl::OkStatus();
}

int RpcError(const Invocation& inv, const grpc::Status& status) {
  // The server appends the nearest GPU counts and batches that work: give them their own line.
  std::string message = status.error_message();
  std::string nearest;
  if (size_t at = message.find(". Nearest that work: "); at != std::string::npos) {
    nearest = message.substr(at + 2);
    message.resize(at);
  }
  inv.err << "error: "
          << absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())) << ": "
          << message;
  if (!nearest.empty()) inv.err << "\n" << nearest;
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    inv.err << " (server " << inv.options.server << ")";
  }
  inv.err << "\n";
  return kExitServer;
}

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           const Env& env) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args);
  if (!parsed.ok()) {
    err << "error: " << parsed.status().message() << "\n";
    if (args.empty())
      err << "\n" << Usage();
    else
      err << "Run 'scalecast --help' for usage.\n";
    return kExitUsage;
  }
  if (parsed->help) {
    out << parsed->help_text;
    return kExitOk;
  }
  GlobalOptions options;
  Invocation inv{*parsed, options, out, err, env};
  absl::StatusOr<GlobalOptions> global = GetGlobalOptions(*parsed, env);
  if (!global.ok()) return UsageError(inv, global.status());
  options = *global;
  return RunCommand(inv);
}

}  // namespace scalecast::cli
