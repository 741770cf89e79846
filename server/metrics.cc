#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/fnv.h"
#include "model/version.h"

namespace scalecast {
namespace {

// Handling-time buckets: go-grpc-prometheus's defaults (5 ms .. 10 s) extended down to 100 us,
// since most predictions take well under a millisecond.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  return *b;
}

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(Metrics* m, grpc::experimental::ServerRpcInfo* info) : m_(m) {
    const char* type = "unknown";
    switch (info->type()) {
      case grpc::experimental::ServerRpcInfo::Type::UNARY:
        type = "unary";
        break;
      case grpc::experimental::ServerRpcInfo::Type::CLIENT_STREAMING:
        type = "client_stream";
        break;
      case grpc::experimental::ServerRpcInfo::Type::SERVER_STREAMING:
        type = "server_stream";
        break;
      case grpc::experimental::ServerRpcInfo::Type::BIDI_STREAMING:
        type = "bidi_stream";
        break;
      default:
        break;
    }
    method_ = m->ForMethod(info->method(), type);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (method_ == nullptr) {  // not a method this server serves
      methods->Proceed();
      return;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      start_ = std::chrono::steady_clock::now();
      method_->started->Increment();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      method_->msg_received->Increment();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      method_->msg_sent->Increment();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      m_->CallHandled(method_, static_cast<int>(methods->GetSendStatus().error_code()), s);
    }
    methods->Proceed();
  }

 private:
  Metrics* m_;
  Metrics::MethodMetrics* method_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(Metrics* m) : m_(m) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MetricsInterceptor(m_, info);
  }

 private:
  Metrics* m_;
};

// The length of the valid UTF-8 sequence (not a control character) at s[i], or 0.
size_t Utf8CharAt(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x20 || c == 0x7f) return 0;
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xe0) == 0xc0) {
    n = 2, cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  // Overlong forms, surrogates, past U+10FFFF, and the C1 controls are not kept.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
  if (cp >= 0x80 && cp <= 0x9f) return 0;
  return n;
}

}  // namespace

std::string MetricLabelValue(const std::string& raw, size_t max_bytes,
                             const std::string& empty_as) {
  if (raw.empty()) return empty_as;
  constexpr size_t kSuffix = 9;  // "~" and 8 hex digits
  std::string out;
  bool changed = false;
  std::vector<size_t> boundaries;  // where a character starts in `out`
  for (size_t i = 0; i < raw.size();) {
    boundaries.push_back(out.size());
    const size_t n = Utf8CharAt(raw, i);
    if (n == 0) {
      out.push_back('_');
      changed = true;
      ++i;
    } else {
      out.append(raw, i, n);
      i += n;
    }
  }
  if (!changed && out.size() <= max_bytes) return out;
  const size_t keep = max_bytes > kSuffix ? max_bytes - kSuffix : 0;
  size_t cut = out.size();
  if (cut > keep) {
    cut = 0;
    for (size_t b : boundaries) {
      if (b > keep) break;
      cut = b;
    }
  }
  out.resize(cut);
  // A stable hash, so a shortened label value names the same series across restarts.
  return absl::StrCat(out, "~", absl::Hex(Fnv1a32(raw), absl::kZeroPad8));
}

BoundedGaugeSeries::BoundedGaugeSeries(prometheus::Family<prometheus::Gauge>* family,
                                       size_t max_series)
    : family_(family), max_series_(max_series) {}

void BoundedGaugeSeries::Set(const std::map<std::string, std::string>& labels, double value) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = series_.find(labels);
  if (it == series_.end()) {
    if (max_series_ == 0) return;
    if (series_.size() >= max_series_) {
      auto oldest = series_.begin();
      for (auto s = series_.begin(); s != series_.end(); ++s) {
        if (s->second.last_set < oldest->second.last_set) oldest = s;
      }
      family_->Remove(oldest->second.gauge);
      series_.erase(oldest);
    }
    it = series_.emplace(labels, Series{&family_->Add(labels), 0}).first;
  }
  it->second.last_set = ++tick_;
  it->second.gauge->Set(value);
}

size_t BoundedGaugeSeries::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return series_.size();
}

const char* GrpcCodeName(int code) {
  static const char* kNames[] = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  return code >= 0 && code <= 16 ? kNames[code] : "Unknown";
}

Metrics::Metrics(std::shared_ptr<prometheus::Registry> registry) : registry_(std::move(registry)) {
  prometheus::Registry& r = *registry_;
  started_ = &prometheus::BuildCounter()
                  .Name("grpc_server_started_total")
                  .Help("Total number of RPCs started on the server.")
                  .Register(r);
  handled_ = &prometheus::BuildCounter()
                  .Name("grpc_server_handled_total")
                  .Help(
                      "Total number of RPCs completed on the server, regardless of success or "
                      "failure.")
                  .Register(r);
  handling_ = &prometheus::BuildHistogram()
                   .Name("grpc_server_handling_seconds")
                   .Help(
                       "Histogram of response latency (seconds) of gRPC that had been "
                       "application-level handled by the server.")
                   .Register(r);
  msg_sent_ = &prometheus::BuildCounter()
                   .Name("grpc_server_msg_sent_total")
                   .Help("Total number of gRPC stream messages sent by the server.")
                   .Register(r);
  msg_received_ = &prometheus::BuildCounter()
                       .Name("grpc_server_msg_received_total")
                       .Help("Total number of RPC stream messages received on the server.")
                       .Register(r);
  predictions_ = &prometheus::BuildCounter()
                      .Name("scalecast_predictions_total")
                      .Help("Predictions made (each layout a sweep evaluates counts once).")
                      .Register(r)
                      .Add({});
  layouts_ = &prometheus::BuildCounter()
                  .Name("scalecast_sweep_layouts_evaluated_total")
                  .Help("Layouts evaluated by sweeps.")
                  .Register(r)
                  .Add({});
  auto& cache = prometheus::BuildCounter()
                    .Name("scalecast_sweep_cache_requests_total")
                    .Help("Sweeps answered from the cache (result=hit) or computed (result=miss).")
                    .Register(r);
  cache_hits_ = &cache.Add({{"result", "hit"}});
  cache_misses_ = &cache.Add({{"result", "miss"}});
  sweep_duration_ = &prometheus::BuildHistogram()
                         .Name("scalecast_sweep_duration_seconds")
                         .Help("Wall time of completed sweeps, cached or computed.")
                         .Register(r)
                         .Add({}, prometheus::Histogram::BucketBoundaries{
                                      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                      2.5, 5, 10, 30, 60, 120, 300, 600});
  measurements_ = &prometheus::BuildCounter()
                       .Name("scalecast_measurements_stored_total")
                       .Help("Measured runs stored by RecordMeasurements.")
                       .Register(r)
                       .Add({});
  reads_interrupted_ = &prometheus::BuildCounter()
                            .Name("scalecast_store_reads_interrupted_total")
                            .Help(
                                "Long store reads interrupted in the database because their "
                                "caller gave up (deadline or cancel).")
                            .Register(r)
                            .Add({});
  profiles_ = &prometheus::BuildGauge()
                   .Name("scalecast_calibration_profiles")
                   .Help("Stored calibration profiles (the built-in default not counted).")
                   .Register(r)
                   .Add({});
  mape_ = &prometheus::BuildGauge()
               .Name("scalecast_model_mape_ratio")
               .Help(
                   "Mean absolute percentage error of the model, as a ratio, from the last "
                   "Validate or Calibrate, per accelerator and framework; and from the last "
                   "Validate, per measurement source (series labelled source alone).")
               .Register(r);
  mape_by_pair_ = std::make_unique<BoundedGaugeSeries>(mape_, kMaxModelErrorPairs);
  mape_by_source_ = std::make_unique<BoundedGaugeSeries>(mape_, kMaxModelErrorSources);
  drift_ = std::make_unique<BoundedGaugeSeries>(
      &prometheus::BuildGauge()
           .Name("scalecast_profile_drift_ratio")
           .Help("Median measured / predicted tokens/s of the runs matching a stored calibration "
                 "profile's filter stored since it was fitted (1 = on the profile; outside its "
                 "80 % band = drifted), from the last ListProfiles or Validate with it.")
           .Register(r),
      kMaxDriftProfiles);
  prometheus::BuildGauge()
      .Name("scalecast_build_info")
      .Help("Constant 1, labelled with the build's version and the scaling model's version.")
      .Register(r)
      .Add({{"version", SCALECAST_VERSION}, {"model_version", ModelVersion()}})
      .Set(1);
}

Metrics::~Metrics() = default;

absl::StatusOr<int> Metrics::Serve(const std::string& address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-address: cannot listen on ", address, ": ", e.what()));
  }
  exposer_->RegisterCollectable(registry_);
  const std::vector<int> ports = exposer_->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("--metrics-address: no port bound for ", address));
  }
  return ports.front();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
Metrics::InterceptorFactory() {
  return std::make_unique<Factory>(this);
}

void Metrics::RegisterMethods(const std::vector<std::string>& full_methods) {
  std::lock_guard<std::mutex> l(methods_mu_);
  registered_.insert(full_methods.begin(), full_methods.end());
}

Metrics::MethodMetrics* Metrics::ForMethod(const std::string& full, const char* type) {
  std::lock_guard<std::mutex> l(methods_mu_);
  if (!registered_.empty() && registered_.count(full) == 0) return nullptr;
  std::unique_ptr<MethodMetrics>& slot = methods_[full];
  if (slot) return slot.get();
  slot = std::make_unique<MethodMetrics>();
  const size_t cut = full.rfind('/');  // "/package.Service/Method"
  slot->service = cut == std::string::npos || cut == 0 ? full : full.substr(1, cut - 1);
  slot->method = cut == std::string::npos ? full : full.substr(cut + 1);
  slot->type = type;
  const prometheus::Labels labels = {
      {"grpc_service", slot->service}, {"grpc_method", slot->method}, {"grpc_type", type}};
  slot->started = &started_->Add(labels);
  slot->handling = &handling_->Add(labels, LatencyBuckets());
  slot->msg_sent = &msg_sent_->Add(labels);
  slot->msg_received = &msg_received_->Add(labels);
  return slot.get();
}

void Metrics::CallHandled(MethodMetrics* m, int code, double seconds) {
  if (code < 0 || code > 16) code = 2;  // UNKNOWN
  prometheus::Counter* c;
  {
    std::lock_guard<std::mutex> l(methods_mu_);
    if (m->handled[code] == nullptr) {
      m->handled[code] = &handled_->Add({{"grpc_service", m->service},
                                         {"grpc_method", m->method},
                                         {"grpc_type", m->type},
                                         {"grpc_code", GrpcCodeName(code)}});
    }
    c = m->handled[code];
  }
  c->Increment();
  m->handling->Observe(seconds);
}

void Metrics::OnPredictions(int64_t count) { predictions_->Increment(static_cast<double>(count)); }
void Metrics::OnLayoutsEvaluated(int64_t count) { layouts_->Increment(static_cast<double>(count)); }
void Metrics::OnSweepCache(bool hit) { (hit ? cache_hits_ : cache_misses_)->Increment(); }
void Metrics::OnSweepDuration(double seconds) { sweep_duration_->Observe(seconds); }
void Metrics::OnMeasurementsStored(int64_t count) {
  measurements_->Increment(static_cast<double>(count));
}
void Metrics::OnModelError(const std::string& accelerator, const std::string& framework,
                           double mape) {
  mape_by_pair_->Set({{"accelerator", MetricLabelValue(accelerator, kMaxLabelValueBytes, "none")},
                      {"framework", MetricLabelValue(framework, kMaxLabelValueBytes, "generic")}},
                     mape);
}
void Metrics::OnModelErrorBySource(const std::string& source, double mape) {
  mape_by_source_->Set({{"source", MetricLabelValue(source, kMaxLabelValueBytes, "none")}}, mape);
}
void Metrics::SetStoreReadsInterrupted(int64_t total) {
  const double delta = static_cast<double>(total) - reads_interrupted_->Value();
  if (delta > 0) reads_interrupted_->Increment(delta);
}
void Metrics::OnProfiles(int64_t count) { profiles_->Set(static_cast<double>(count)); }
void Metrics::OnProfileDrift(const std::string& profile, double ratio) {
  drift_->Set({{"profile", MetricLabelValue(profile, kMaxLabelValueBytes, "none")}}, ratio);
}

}  // namespace scalecast
