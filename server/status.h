// The one place absl::Status becomes grpc::Status (and back, for clients and tests).
#ifndef SCALECAST_SERVER_STATUS_H_
#define SCALECAST_SERVER_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace scalecast {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace scalecast

#endif  // SCALECAST_SERVER_STATUS_H_
