// Prometheus metrics on an injected registry: gRPC server metrics named as go-grpc-prometheus
// names them (so existing dashboards work), and scalecast's own, in base units.
#ifndef SCALECAST_SERVER_METRICS_H_
#define SCALECAST_SERVER_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/service.h"

namespace prometheus {
class Registry;
class Exposer;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace scalecast {

class Metrics final : public ServiceObserver {
 public:
  explicit Metrics(std::shared_ptr<prometheus::Registry> registry);
  ~Metrics() override;

  // Serves /metrics on `address` ("host:port", port 0 = any); returns the bound port.
  absl::StatusOr<int> Serve(const std::string& address);

  // One interceptor per call: started, handled (by code), handling time, messages.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

  // ServiceObserver.
  void OnPredictions(int64_t count) override;
  void OnLayoutsEvaluated(int64_t count) override;
  void OnSweepCache(bool hit) override;
  void OnSweepDuration(double seconds) override;
  void OnMeasurementsStored(int64_t count) override;
  void OnModelError(const std::string& accelerator, const std::string& framework,
                    double mape) override;
  void OnProfiles(int64_t count) override;

  // The metric children of one method, resolved once (label lookups are not free).
  struct MethodMetrics {
    prometheus::Counter* started = nullptr;
    prometheus::Histogram* handling = nullptr;
    prometheus::Counter* msg_sent = nullptr;
    prometheus::Counter* msg_received = nullptr;
    prometheus::Counter* handled[17] = {};  // by status code, created on first use
    std::string service, method;
    const char* type = "unknown";
  };
  // The methods ("/package.Service/Method") that get series; calls to any other name (a client
  // making names up) are not counted, so they cannot grow /metrics. Call before serving.
  void RegisterMethods(const std::vector<std::string>& full_methods);

  // For the interceptor: the method's metrics (created on first call), or null for a method
  // not registered; and a handled count.
  MethodMetrics* ForMethod(const std::string& full_method, const char* type);
  void CallHandled(MethodMetrics* m, int code, double seconds);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  prometheus::Family<prometheus::Counter>* started_;
  prometheus::Family<prometheus::Counter>* handled_;
  prometheus::Family<prometheus::Histogram>* handling_;
  prometheus::Family<prometheus::Counter>* msg_sent_;
  prometheus::Family<prometheus::Counter>* msg_received_;
  prometheus::Counter* predictions_;
  prometheus::Counter* layouts_;
  prometheus::Counter* cache_hits_;
  prometheus::Counter* cache_misses_;
  prometheus::Histogram* sweep_duration_;
  prometheus::Counter* measurements_;
  prometheus::Gauge* profiles_;
  prometheus::Family<prometheus::Gauge>* mape_;
  std::mutex methods_mu_;
  std::map<std::string, std::unique_ptr<MethodMetrics>> methods_;  // by full method name
  std::set<std::string> registered_;  // empty = every method (a Metrics used without a server)
};

// go-grpc-prometheus's name for a code ("OK", "InvalidArgument", ...).
const char* GrpcCodeName(int code);

}  // namespace scalecast

#endif  // SCALECAST_SERVER_METRICS_H_
