// The server's pure pieces: status mapping, option parsing, and the metrics' series bounds.
#include <prometheus/registry.h>

#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/metrics.h"
#include "server/options.h"
#include "server/status.h"

namespace scalecast {
namespace {

TEST(StatusMapping, EveryCodeRoundTrips) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status s(static_cast<absl::StatusCode>(code), "scenario.parallelism.tp: why");
    const grpc::Status g = ToGrpcStatus(s);
    EXPECT_EQ(static_cast<int>(g.error_code()), code);
    EXPECT_EQ(g.error_message(), "scenario.parallelism.tp: why");
    EXPECT_EQ(FromGrpcStatus(g), s);
  }
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError("x")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("x")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcStatus(absl::ResourceExhaustedError("x")).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(ToGrpcStatus(absl::UnauthenticatedError("x")).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // A code outside the shared range is UNKNOWN, never a crash.
  EXPECT_EQ(ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(99), "x")).error_code(),
            grpc::StatusCode::UNKNOWN);
}

TEST(ServerOptions, AnAddressHostIsWhatComesBeforeItsPort) {
  EXPECT_EQ(AddressHost("127.0.0.1:50051"), "127.0.0.1");
  EXPECT_EQ(AddressHost("0.0.0.0:9464"), "0.0.0.0");
  EXPECT_EQ(AddressHost("[::]:50051"), "[::]");
  EXPECT_EQ(AddressHost("localhost:0"), "localhost");
}

TEST(ServerOptions, DefaultsFlagsAndEnvironment) {
  std::map<std::string, std::string> env = {{"SCALECAST_DB", "/data/s.db"},
                                            {"SCALECAST_LISTEN", "0.0.0.0:1"}};
  auto getenv = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto o = ParseServerOptions({}, getenv);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->db_path, "/data/s.db");
  EXPECT_EQ(o->listen_address, "0.0.0.0:1");
  EXPECT_EQ(o->metrics_address, "127.0.0.1:9464");
  // Flags win over the environment; both --flag=value and --flag value.
  o = ParseServerOptions({"--listen=127.0.0.1:7", "--threads", "3", "--metrics-address", ""},
                         getenv);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->listen_address, "127.0.0.1:7");
  EXPECT_EQ(o->worker_threads, 3);
  EXPECT_EQ(o->metrics_address, "");
  const auto none = [](const char*) -> const char* { return nullptr; };
  EXPECT_FALSE(ParseServerOptions({"--threads", "-1"}, none).ok());
  EXPECT_FALSE(ParseServerOptions({"--threads", "many"}, none).ok());
  EXPECT_FALSE(ParseServerOptions({"--colour", "red"}, none).ok());
  EXPECT_FALSE(ParseServerOptions({"--listen"}, none).ok());
  EXPECT_FALSE(ParseServerOptions({"--tls-cert", "a.pem"}, none).ok());  // needs --tls-key
  EXPECT_EQ(ParseServerOptions({"--help"}, none).status().code(), absl::StatusCode::kNotFound);
  env["SCALECAST_THREADS"] = "lots";
  EXPECT_FALSE(ParseServerOptions({}, getenv).ok());
}

// The label values of every scalecast_model_mape_ratio series that has label `key`.
std::set<std::string> MapeSeries(prometheus::Registry& registry, const std::string& key) {
  std::set<std::string> out;
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    if (f.name != "scalecast_model_mape_ratio") continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      for (const prometheus::ClientMetric::Label& l : m.label) {
        if (l.name == key) out.insert(l.value);
      }
    }
  }
  return out;
}

TEST(MetricLabelValue, ShortValidValuesStayAndTheRestAreBoundedAndDistinct) {
  EXPECT_EQ(MetricLabelValue("MosaicML llm-foundry", 64, "none"), "MosaicML llm-foundry");
  EXPECT_EQ(MetricLabelValue("", 64, "none"), "none");
  EXPECT_EQ(MetricLabelValue("caf\xc3\xa9", 64, "none"), "caf\xc3\xa9");  // UTF-8 kept
  const std::string a(300, 'a');
  const std::string b = std::string(299, 'a') + "b";
  const std::string la = MetricLabelValue(a, 64, "none");
  const std::string lb = MetricLabelValue(b, 64, "none");
  EXPECT_EQ(la.size(), 64u);
  EXPECT_EQ(la.substr(0, 55), std::string(55, 'a'));
  EXPECT_EQ(la[55], '~');
  EXPECT_NE(la, lb);                               // same prefix, different sources
  EXPECT_EQ(la, MetricLabelValue(a, 64, "none"));  // stable
  // Control bytes and invalid UTF-8 become '_' and mark the value as changed.
  const std::string bad = MetricLabelValue("x\ny\xff\xc3", 64, "none");
  EXPECT_EQ(bad.substr(0, 5), "x_y__");
  EXPECT_EQ(bad.size(), 5u + 9u);
  EXPECT_NE(bad, MetricLabelValue("x_y__", 64, "none"));
  // A long multi-byte value is cut at a character boundary.
  std::string e;
  for (int i = 0; i < 40; ++i) e += "\xc3\xa9";
  const std::string le = MetricLabelValue(e, 64, "none");
  EXPECT_LE(le.size(), 64u);
  EXPECT_EQ(le.substr(0, le.find('~')).size() % 2, 0u);
  EXPECT_EQ(MetricLabelValue(le.substr(0, le.find('~')), 64, "none"),
            le.substr(0, le.find('~')));  // the kept prefix is valid UTF-8
}

TEST(Metrics, PerSourceModelErrorSeriesAreBoundedLeastRecentlySetFirst) {
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  const size_t cap = Metrics::kMaxModelErrorSources;
  for (size_t i = 0; i < cap + 10; ++i) {
    metrics.OnModelErrorBySource(absl::StrCat("src-", i), 0.01 * i);
  }
  std::set<std::string> kept = MapeSeries(*registry, "source");
  EXPECT_EQ(kept.size(), cap);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(kept.count(absl::StrCat("src-", i)), 0u) << i;
  EXPECT_EQ(kept.count(absl::StrCat("src-", cap + 9)), 1u);
  // Setting a kept source again makes it the most recent: the next new one evicts src-11.
  metrics.OnModelErrorBySource("src-10", 0.5);
  metrics.OnModelErrorBySource("new", 0.5);
  kept = MapeSeries(*registry, "source");
  EXPECT_EQ(kept.size(), cap);
  EXPECT_EQ(kept.count("src-10"), 1u);
  EXPECT_EQ(kept.count("src-11"), 0u);
  EXPECT_EQ(kept.count("new"), 1u);
  // A thousand long sources: still the cap, every label value within its bound.
  for (int i = 0; i < 1000; ++i) {
    metrics.OnModelErrorBySource(std::string(5000, 'x') + std::to_string(i), 0.1);
  }
  kept = MapeSeries(*registry, "source");
  EXPECT_EQ(kept.size(), cap);
  for (const std::string& v : kept) EXPECT_LE(v.size(), Metrics::kMaxLabelValueBytes);
  // The per-(accelerator, framework) series are bounded too, and untouched by the sources.
  metrics.OnModelError("h100-sxm-80gb", "megatron", 0.1);
  for (size_t i = 0; i < Metrics::kMaxModelErrorPairs + 5; ++i) {
    metrics.OnModelError("h100-sxm-80gb", absl::StrCat("fw-", i), 0.1);
  }
  EXPECT_EQ(MapeSeries(*registry, "framework").size(), Metrics::kMaxModelErrorPairs);
  EXPECT_EQ(MapeSeries(*registry, "framework").count("megatron"), 0u);
  EXPECT_EQ(MapeSeries(*registry, "source").size(), cap);
}

}  // namespace
}  // namespace scalecast
