#include "server/server.h"

#include <google/protobuf/descriptor.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "model/status_macros.h"
#include "server/metrics.h"

namespace scalecast {
namespace {

// How often the store is probed for readiness, and how long a probe waits for its answer.
constexpr int kStoreProbeMs = 1000;
constexpr int kStoreProbeTimeoutMs = 2000;
constexpr char kServiceName[] = "scalecast.v1.Scalecast";

absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The built-in catalog, with --catalog's entries merged over it.
absl::StatusOr<Catalog> LoadCatalog(const ServerOptions& options) {
  Catalog catalog = Catalog::Builtin();
  if (options.catalog_file.empty()) return catalog;
  ASSIGN_OR_RETURN(const std::string text, ReadFile(options.catalog_file, "--catalog"));
  if (absl::Status st = catalog.MergeText(text); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(options.catalog_file, ": ", st.message()));
  }
  return catalog;
}

// The write token (empty: writes are open). An editor's trailing newline (or spaces) is not
// part of it.
absl::StatusOr<std::string> ReadToken(const ServerOptions& options) {
  if (options.auth_token_file.empty()) return std::string();
  ASSIGN_OR_RETURN(const std::string text, ReadFile(options.auth_token_file, "--auth-token-file"));
  std::string token(absl::StripAsciiWhitespace(text));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-token-file: '", options.auth_token_file, "' is empty"));
  }
  return token;
}

absl::StatusOr<std::unique_ptr<Store>> OpenStore(const ServerOptions& options) {
  StoreOptions so;
  so.path = options.db_path;
  so.pool_size = options.db_pool_size;
  so.sweep_cache_max_bytes = options.sweep_cache_bytes;
  so.max_db_bytes = options.db_max_bytes;
  if (!options.db_password_file.empty()) {
    ASSIGN_OR_RETURN(std::string password,
                     ReadFile(options.db_password_file, "--db-password-file"));
    while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) {
      password.pop_back();
    }
    so.password = std::move(password);
  }
  return Store::Open(so);
}

// The three thread pools' sizes: the workers (the model), the store's writes and short reads,
// and the long reads, on a lane of their own with as many threads as the store lends them
// connections.
struct PoolSizes {
  int workers, store, reads;
};

PoolSizes PoolSizesOf(const ServerOptions& options) {
  const bool postgres = IsPostgresAddress(options.db_path);
  const int pg_pool = std::max(1, options.db_pool_size);
  PoolSizes p;
  p.workers = options.worker_threads > 0
                  ? options.worker_threads
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  p.store = options.store_threads > 0 ? options.store_threads : (postgres ? pg_pool : 4);
  p.reads = options.read_threads > 0
                ? options.read_threads
                : (postgres ? (pg_pool == 1 ? 1 : pg_pool - std::max(1, pg_pool / 4)) : 2);
  return p;
}

// The methods this server serves, the only ones metrics label (a made-up method name adds no
// series).
std::vector<std::string> ServedMethods() {
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
  return methods;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& options) {
  if (options.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  ASSIGN_OR_RETURN(std::string cert, ReadFile(options.tls_cert_file, "--tls-cert"));
  ASSIGN_OR_RETURN(std::string key, ReadFile(options.tls_key_file, "--tls-key"));
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({std::move(key), std::move(cert)});
  return grpc::SslServerCredentials(ssl);
}

// The listener's limits: gRPC holds a request whole before a handler (and write admission)
// sees it, so its memory for that and its threads are bounded here, as are message sizes and
// keepalives. No SO_REUSEPORT: a second server on a port in use must fail to start, not share
// the traffic (and split it between two databases).
void SetLimits(const ServerOptions& options, grpc::ServerBuilder* builder) {
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  grpc::ResourceQuota quota("scalecast-server");
  quota.Resize(static_cast<size_t>(options.grpc_memory_bytes));
  quota.SetMaxThreads(options.grpc_max_threads);
  builder->SetResourceQuota(quota);
  builder->SetMaxReceiveMessageSize(options.max_message_bytes);
  builder->SetMaxSendMessageSize(options.max_message_bytes);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const ServerOptions& options, std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<Server> s(new Server());
  s->options_ = options;
  ASSIGN_OR_RETURN(s->catalog_, LoadCatalog(options));
  ASSIGN_OR_RETURN(const std::string token, ReadToken(options));
  ASSIGN_OR_RETURN(s->store_, OpenStore(options));
  const PoolSizes pools = PoolSizesOf(options);
  s->pool_ = std::make_unique<boost::asio::thread_pool>(pools.workers);
  s->io_pool_ = std::make_unique<boost::asio::thread_pool>(pools.store);
  s->read_pool_ = std::make_unique<boost::asio::thread_pool>(pools.reads);

  s->registry_ = registry ? registry : std::make_shared<prometheus::Registry>();
  s->metrics_ = std::make_unique<Metrics>(s->registry_);
  if (!options.metrics_address.empty()) {
    ASSIGN_OR_RETURN(s->metrics_port_, s->metrics_->Serve(options.metrics_address));
  }
  if (auto count = s->store_->CountProfiles(); count.ok()) s->metrics_->OnProfiles(*count);
  s->service_ = std::make_unique<ScalecastService>(
      &s->catalog_, s->store_.get(), s->pool_.get(), pools.workers, s->io_pool_.get(),
      s->read_pool_.get(), options, token, s->metrics_.get());
  s->metrics_->RegisterMethods(ServedMethods());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  ASSIGN_OR_RETURN(const std::shared_ptr<grpc::ServerCredentials> creds, Credentials(options));
  builder.AddListeningPort(options.listen_address, creds, &s->port_);
  SetLimits(options, &builder);
  builder.RegisterService(s->service_.get());
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
  health->SetServingStatus(kServiceName, true);
  s->health_thread_ = std::thread([server = s.get()] { server->ProbeStoreLoop(); });
  return s;
}

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
  std::string host = AddressHost(options_.listen_address);
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
