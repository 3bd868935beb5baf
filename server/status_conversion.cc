#include "server/status_conversion.h"

#include <string>

namespace matrixd::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode and grpc::StatusCode are both the canonical google.rpc.Code values.
  const int code = status.raw_code();
  const grpc::StatusCode grpc_code = (code > 0 && code <= grpc::StatusCode::UNAUTHENTICATED)
                                         ? static_cast<grpc::StatusCode>(code)
                                         : grpc::StatusCode::UNKNOWN;
  return grpc::Status(grpc_code, std::string(status.message()));
}

}  // namespace matrixd::server
