// matrixd.v1.MatrixService on a core::Backend, synchronous gRPC API. Each handler validates the
// request (INVALID_ARGUMENT before any work), runs the backend with a JobControl that is cancelled
// when the client goes away, and converts the result back. No exception leaves a handler:
// std::bad_alloc becomes RESOURCE_EXHAUSTED, any other std::exception INTERNAL.
#ifndef MATRIXD_SERVER_MATRIX_SERVICE_H_
#define MATRIXD_SERVER_MATRIX_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "core/backend.h"
#include "core/validation.h"
#include "matrixd/v1/matrixd.grpc.pb.h"

namespace matrixd::server {

class MatrixService final : public v1::MatrixService::Service {
 public:
  // `backend` must outlive the service; it is called from several gRPC threads at once.
  MatrixService(Backend& backend, const Limits& limits) : backend_(backend), limits_(limits) {}

  grpc::Status Determinant(grpc::ServerContext* context, const v1::DeterminantRequest* request,
                           v1::DeterminantResponse* response) override;
  grpc::Status Factorize(grpc::ServerContext* context, const v1::FactorizeRequest* request,
                         v1::FactorizeResponse* response) override;
  grpc::Status Multiply(grpc::ServerContext* context, const v1::MultiplyRequest* request,
                        v1::MultiplyResponse* response) override;
  grpc::Status Permanent(grpc::ServerContext* context, const v1::PermanentRequest* request,
                         v1::PermanentResponse* response) override;

 private:
  Backend& backend_;
  const Limits limits_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_MATRIX_SERVICE_H_
