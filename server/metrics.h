// Prometheus metrics on an injected registry: gRPC server metrics named as go-grpc-prometheus
// names them (so existing dashboards work), and scalecast's own, in base units.
#ifndef SCALECAST_SERVER_METRICS_H_
#define SCALECAST_SERVER_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include <cstdint>
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

// A caller-supplied string made safe as a Prometheus label value: control bytes and invalid
// UTF-8 become '_', "" becomes `empty_as`, and a value over `max_bytes` keeps a prefix (cut at
// a character boundary) plus "~" and 8 hex digits of a hash of the original, so that distinct
// long strings stay distinct series. A value changed in any way also gets the hash suffix.
std::string MetricLabelValue(const std::string& raw, size_t max_bytes, const std::string& empty_as);

// The series of one gauge family that callers' strings name, with a bound: setting a new series
// past `max_series` removes the least recently set one from the family (and so from /metrics).
class BoundedGaugeSeries {
 public:
  BoundedGaugeSeries(prometheus::Family<prometheus::Gauge>* family, size_t max_series);
  void Set(const std::map<std::string, std::string>& labels, double value);
  size_t size() const;

 private:
  struct Series {
    prometheus::Gauge* gauge = nullptr;
    uint64_t last_set = 0;
  };
  prometheus::Family<prometheus::Gauge>* family_;
  size_t max_series_;
  mutable std::mutex mu_;
  uint64_t tick_ = 0;
  std::map<std::map<std::string, std::string>, Series> series_;
};

class Metrics final : public ServiceObserver {
 public:
  explicit Metrics(std::shared_ptr<prometheus::Registry> registry);
  ~Metrics() override;

  // Serves /metrics on `address` ("host:port", port 0 = any); returns the bound port.
  absl::StatusOr<int> Serve(const std::string& address);

  // One interceptor per call: started, handled (by code), handling time, messages.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

  // scalecast_model_mape_ratio keeps at most this many per-source series and this many
  // per-(accelerator, framework) series, the least recently set removed first; label values
  // longer than kMaxLabelValueBytes are shortened (MetricLabelValue).
  static constexpr size_t kMaxModelErrorSources = 50;
  static constexpr size_t kMaxModelErrorPairs = 200;
  static constexpr size_t kMaxLabelValueBytes = 64;

  // ServiceObserver.
  void OnPredictions(int64_t count) override;
  void OnLayoutsEvaluated(int64_t count) override;
  void OnSweepCache(bool hit) override;
  void OnSweepDuration(double seconds) override;
  void OnMeasurementsStored(int64_t count) override;
  void OnModelError(const std::string& accelerator, const std::string& framework,
                    double mape) override;
  // Sets scalecast_model_mape_ratio{source="..."} (a series with the `source` label alone).
  void OnModelErrorBySource(const std::string& source, double mape) override;
  void OnProfiles(int64_t count) override;
  // Sets scalecast_profile_drift_ratio{profile="..."}.
  void OnProfileDrift(const std::string& profile, double ratio) override;
  static constexpr size_t kMaxDriftProfiles = 100;
  // scalecast_store_reads_interrupted_total follows the store's count (Store::InterruptedReads).
  void SetStoreReadsInterrupted(int64_t total);

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
  prometheus::Counter* reads_interrupted_;
  prometheus::Gauge* profiles_;
  prometheus::Family<prometheus::Gauge>* mape_;
  std::unique_ptr<BoundedGaugeSeries> mape_by_pair_;    // {accelerator, framework}
  std::unique_ptr<BoundedGaugeSeries> mape_by_source_;  // {source}
  std::unique_ptr<BoundedGaugeSeries> drift_;           // {profile}
  std::mutex methods_mu_;
  std::map<std::string, std::unique_ptr<MethodMetrics>> methods_;  // by full method name
  std::set<std::string> registered_;  // empty = every method (a Metrics used without a server)
};

// go-grpc-prometheus's name for a code ("OK", "InvalidArgument", ...).
const char* GrpcCodeName(int code);

}  // namespace scalecast

#endif  // SCALECAST_SERVER_METRICS_H_
