#include "server/matrix_service.h"

#include <exception>
#include <new>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/job_control.h"
#include "server/cancellation_watcher.h"
#include "server/matrix_conversion.h"
#include "server/request_validation.h"
#include "server/status_conversion.h"

namespace matrixd::server {
namespace {

// Runs one handler body. Protobuf, gRPC and the standard library may throw (allocation above
// all); a throw must not take the server down, so it becomes a status here.
template <typename Body>
grpc::Status Guarded(const char* rpc, Body&& body) {
  try {
    return ToGrpcStatus(body());
  } catch (const std::bad_alloc&) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, absl::StrCat(rpc, ": out of memory"));
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat(rpc, ": ", e.what()));
  } catch (...) {
    return grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat(rpc, ": unknown exception"));
  }
}

// Calls `op(control)` with a JobControl that is cancelled when the call is; skips the work when
// the client has already gone.
template <typename Op>
auto RunCancellable(grpc::ServerContext* context, Op&& op) -> decltype(op(nullptr)) {
  if (context->IsCancelled()) return absl::CancelledError("the call was cancelled");
  JobControl control;
  CancellationWatcher watcher(context, &control);
  return op(&control);
}

}  // namespace

grpc::Status MatrixService::Determinant(grpc::ServerContext* context,
                                        const v1::DeterminantRequest* request,
                                        v1::DeterminantResponse* response) {
  return Guarded("Determinant", [&]() -> absl::Status {
    absl::StatusOr<DeterminantInputs> inputs = ValidateRequest(*request, limits_);
    if (!inputs.ok()) return inputs.status();
    absl::StatusOr<DeterminantResult> result = RunCancellable(context, [&](JobControl* control) {
      return backend_.Determinant(inputs->matrix.view(), inputs->options, control);
    });
    if (!result.ok()) return result.status();
    ToProto(*result, inputs->matrix.view().dtype, inputs->options.modulus, response);
    return absl::OkStatus();
  });
}

grpc::Status MatrixService::Factorize(grpc::ServerContext* context,
                                      const v1::FactorizeRequest* request,
                                      v1::FactorizeResponse* response) {
  return Guarded("Factorize", [&]() -> absl::Status {
    absl::StatusOr<FactorizeInputs> inputs = ValidateRequest(*request, limits_);
    if (!inputs.ok()) return inputs.status();
    absl::StatusOr<FactorizeResult> result = RunCancellable(context, [&](JobControl* control) {
      return backend_.Factorize(inputs->matrix.view(), inputs->kind, inputs->rhs_view(), control);
    });
    if (!result.ok()) return result.status();
    ToProto(*result, response);
    return absl::OkStatus();
  });
}

grpc::Status MatrixService::Multiply(grpc::ServerContext* context,
                                     const v1::MultiplyRequest* request,
                                     v1::MultiplyResponse* response) {
  return Guarded("Multiply", [&]() -> absl::Status {
    absl::StatusOr<MultiplyInputs> inputs = ValidateRequest(*request, limits_);
    if (!inputs.ok()) return inputs.status();
    absl::StatusOr<MultiplyResult> result = RunCancellable(context, [&](JobControl* control) {
      return backend_.Multiply(inputs->a.view(), inputs->b.view(), inputs->options, control);
    });
    if (!result.ok()) return result.status();
    ToProto(*result, response);
    return absl::OkStatus();
  });
}

grpc::Status MatrixService::Permanent(grpc::ServerContext* context,
                                      const v1::PermanentRequest* request,
                                      v1::PermanentResponse* response) {
  return Guarded("Permanent", [&]() -> absl::Status {
    absl::StatusOr<PermanentInputs> inputs = ValidateRequest(*request, limits_);
    if (!inputs.ok()) return inputs.status();
    absl::StatusOr<PermanentResult> result = RunCancellable(context, [&](JobControl* control) {
      return backend_.Permanent(inputs->matrix.view(), inputs->options, control);
    });
    if (!result.ok()) return result.status();
    ToProto(*result, response);
    return absl::OkStatus();
  });
}

}  // namespace matrixd::server
