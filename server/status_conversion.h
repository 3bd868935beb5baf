// The one place where an absl::Status becomes a grpc::Status.
#ifndef MATRIXD_SERVER_STATUS_CONVERSION_H_
#define MATRIXD_SERVER_STATUS_CONVERSION_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace matrixd::server {

// Same code (the canonical codes agree numerically), same message. A code outside the canonical
// range becomes UNKNOWN.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_STATUS_CONVERSION_H_
