// The server's pure pieces: status mapping and option parsing.
#include <map>
#include <string>

#include "gtest/gtest.h"
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

}  // namespace
}  // namespace scalecast
