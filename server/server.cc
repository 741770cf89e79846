#include "server/server.h"

#include <google/protobuf/descriptor.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <prometheus/registry.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/metrics.h"

namespace scalecast {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const ServerOptions& options, std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<Server> s(new Server());
  s->options_ = options;
  s->catalog_ = Catalog::Builtin();
  if (!options.catalog_file.empty()) {
    auto text = ReadFile(options.catalog_file, "--catalog");
    if (!text.ok()) return text.status();
    if (absl::Status st = s->catalog_.MergeText(*text); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(options.catalog_file, ": ", st.message()));
    }
  }
  std::string token;
  if (!options.auth_token_file.empty()) {
    auto text = ReadFile(options.auth_token_file, "--auth-token-file");
    if (!text.ok()) return text.status();
    // An editor's trailing newline (or spaces) is not part of the token.
    token = std::string(absl::StripAsciiWhitespace(*text));
    if (token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--auth-token-file: '", options.auth_token_file, "' is empty"));
    }
  }
  StoreOptions so;
  so.path = options.db_path;
  so.pool_size = options.db_pool_size;
  so.sweep_cache_max_bytes = options.sweep_cache_bytes;
  so.max_db_bytes = options.db_max_bytes;
  if (!options.db_password_file.empty()) {
    auto text = ReadFile(options.db_password_file, "--db-password-file");
    if (!text.ok()) return text.status();
    std::string password = *std::move(text);
    while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) {
      password.pop_back();
    }
    so.password = std::move(password);
  }
  auto store = Store::Open(so);
  if (!store.ok()) return store.status();
  s->store_ = *std::move(store);

  const int threads = options.worker_threads > 0
                          ? options.worker_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s->pool_ = std::make_unique<boost::asio::thread_pool>(threads);
  const int store_threads =
      options.store_threads > 0
          ? options.store_threads
          : (IsPostgresAddress(options.db_path) ? std::max(1, options.db_pool_size) : 4);
  s->io_pool_ = std::make_unique<boost::asio::thread_pool>(store_threads);
  // Long reads on a lane of their own, as many threads as the store lends them connections.
  const int pg_pool = std::max(1, options.db_pool_size);
  const int read_threads = options.read_threads > 0
                               ? options.read_threads
                               : (IsPostgresAddress(options.db_path)
                                      ? (pg_pool == 1 ? 1 : pg_pool - std::max(1, pg_pool / 4))
                                      : 2);
  s->read_pool_ = std::make_unique<boost::asio::thread_pool>(read_threads);

  s->registry_ = registry ? registry : std::make_shared<prometheus::Registry>();
  s->metrics_ = std::make_unique<Metrics>(s->registry_);
  if (!options.metrics_address.empty()) {
    auto port = s->metrics_->Serve(options.metrics_address);
    if (!port.ok()) return port.status();
    s->metrics_port_ = *port;
  }
  if (auto count = s->store_->CountProfiles(); count.ok()) s->metrics_->OnProfiles(*count);

  s->service_ = std::make_unique<ScalecastService>(&s->catalog_, s->store_.get(), s->pool_.get(),
                                                   threads, s->io_pool_.get(), s->read_pool_.get(),
                                                   options, token, s->metrics_.get());
  // Metrics label only the methods this server serves: a made-up method name adds no series.
  std::vector<std::string> methods = {"/grpc.health.v1.Health/Check",
                                      "/grpc.health.v1.Health/Watch",
                                      "/grpc.reflection.v1alpha.ServerReflection/"
                                      "ServerReflectionInfo",
                                      "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"};
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Scalecast::service_full_name());
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
    methods.push_back(absl::StrCat("/", service->full_name(), "/", service->method(i)->name()));
  }
  s->metrics_->RegisterMethods(methods);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!options.tls_cert_file.empty()) {
    auto cert = ReadFile(options.tls_cert_file, "--tls-cert");
    if (!cert.ok()) return cert.status();
    auto key = ReadFile(options.tls_key_file, "--tls-key");
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    creds = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort(options.listen_address, creds, &s->port_);
  // No SO_REUSEPORT: a second server on a port in use must fail to start, not share the
  // traffic (and split it between two databases).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(s->service_.get());
  // gRPC holds a request whole before a handler (and write admission) sees it: its memory for
  // that, and its threads, are bounded here.
  grpc::ResourceQuota quota("scalecast-server");
  quota.Resize(static_cast<size_t>(options.grpc_memory_bytes));
  quota.SetMaxThreads(options.grpc_max_threads);
  builder.SetResourceQuota(quota);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(s->metrics_->InterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address, " (in use, or a bad address)"));
  }
  grpc::HealthCheckServiceInterface* health = s->server_->GetHealthCheckService();
  health->SetServingStatus(true);
  health->SetServingStatus("scalecast.v1.Scalecast", true);
  s->health_thread_ = std::thread([server = s.get()] { server->ProbeStoreLoop(); });
  return s;
}

namespace {
// How often the store is probed for readiness, and how long a probe waits for its answer.
constexpr int kStoreProbeMs = 1000;
constexpr int kStoreProbeTimeoutMs = 2000;
constexpr char kServiceName[] = "scalecast.v1.Scalecast";
}  // namespace

void Server::ProbeStoreLoop() {
  bool serving = true;
  std::unique_lock<std::mutex> l(health_mu_);
  while (!health_cv_.wait_for(l, std::chrono::milliseconds(kStoreProbeMs),
                              [this] { return health_stop_; })) {
    l.unlock();
    const absl::Status s = store_->Ping(kStoreProbeTimeoutMs);
    metrics_->SetStoreReadsInterrupted(store_->InterruptedReads());
    l.lock();
    if (health_stop_) break;
    if (s.ok() != serving) {
      serving = s.ok();
      server_->GetHealthCheckService()->SetServingStatus(kServiceName, serving);
      if (serving) {
        std::fprintf(stderr, "scalecast-server: the store answers again; %s is SERVING\n",
                     kServiceName);
      } else {
        std::fprintf(stderr,
                     "scalecast-server: the store does not answer (%s); %s is NOT_SERVING\n",
                     std::string(s.message()).c_str(), kServiceName);
      }
    }
  }
}

std::string Server::address() const {
  std::string host = options_.listen_address.substr(0, options_.listen_address.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "127.0.0.1";
  return absl::StrCat(host, ":", port_);
}

void Server::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (health_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> l(health_mu_);
      health_stop_ = true;
    }
    health_cv_.notify_all();
    health_thread_.join();
  }
  if (server_) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(options_.grace_period_ms));
  }
  if (pool_) pool_->join();
  if (io_pool_) io_pool_->join();
  if (read_pool_) read_pool_->join();
  if (store_) store_->Close();
}

void Server::Wait() {
  if (server_) server_->Wait();
}

Server::~Server() { Shutdown(); }

}  // namespace scalecast
