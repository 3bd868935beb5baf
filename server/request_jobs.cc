#include "server/request_jobs.h"

#include <cmath>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/job_cost.h"
#include "server/matrix_conversion.h"
#include "server/request_validation.h"

namespace matrixd::server {

absl::StatusOr<JobSpec> MakeJob(const v1::DeterminantRequest& request,
                                v1::DeterminantResponse* response, Backend& backend,
                                const Limits& limits) {
  absl::StatusOr<DeterminantInputs> inputs = ValidateRequest(request, limits);
  if (!inputs.ok()) return inputs.status();
  JobSpec spec;
  spec.op = "determinant";
  spec.estimated_flops = EstimatedFlops(*inputs);
  spec.device_bytes = backend.DeterminantDeviceBytes(inputs->matrix.view(), inputs->options);
  spec.work = [inputs = *std::move(inputs), response, &backend](JobControl& control) {
    absl::StatusOr<DeterminantResult> result =
        backend.Determinant(inputs.matrix.view(), inputs.options, &control);
    if (!result.ok()) return result.status();
    ToProto(*result, inputs.matrix.view().dtype, inputs.options.modulus, response);
    return absl::OkStatus();
  };
  return spec;
}

absl::StatusOr<JobSpec> MakeJob(const v1::FactorizeRequest& request,
                                v1::FactorizeResponse* response, Backend& backend,
                                const Limits& limits) {
  absl::StatusOr<FactorizeInputs> inputs = ValidateRequest(request, limits);
  if (!inputs.ok()) return inputs.status();
  JobSpec spec;
  spec.op = "factorize";
  spec.estimated_flops = EstimatedFlops(*inputs);
  const FactorizeOptions options = inputs->options();
  spec.device_bytes =
      backend.FactorizeDeviceBytes(inputs->matrix.view(), options, inputs->rhs_view());
  spec.work = [inputs = *std::move(inputs), options, response, &backend](JobControl& control) {
    absl::StatusOr<FactorizeResult> result =
        backend.Factorize(inputs.matrix.view(), options, inputs.rhs_view(), &control);
    if (!result.ok()) return result.status();
    ToProto(*result, response);
    return absl::OkStatus();
  };
  return spec;
}

absl::StatusOr<JobSpec> MakeJob(const v1::MultiplyRequest& request, v1::MultiplyResponse* response,
                                Backend& backend, const Limits& limits) {
  absl::StatusOr<MultiplyInputs> inputs = ValidateRequest(request, limits);
  if (!inputs.ok()) return inputs.status();
  JobSpec spec;
  spec.op = "multiply";
  spec.estimated_flops = EstimatedFlops(*inputs);
  spec.device_bytes =
      backend.MultiplyDeviceBytes(inputs->a.view(), inputs->b.view(), inputs->options);
  spec.work = [inputs = *std::move(inputs), response, &backend](JobControl& control) {
    absl::StatusOr<MultiplyResult> result =
        backend.Multiply(inputs.a.view(), inputs.b.view(), inputs.options, &control);
    if (!result.ok()) return result.status();
    ToProto(*result, response);
    return absl::OkStatus();
  };
  return spec;
}

absl::StatusOr<JobSpec> MakeJob(const v1::PermanentRequest& request,
                                v1::PermanentResponse* response, Backend& backend,
                                const Limits& limits) {
  absl::StatusOr<PermanentInputs> inputs = ValidateRequest(request, limits);
  if (!inputs.ok()) return inputs.status();
  JobSpec spec;
  spec.op = "permanent";
  spec.estimated_flops = EstimatedFlops(*inputs);
  spec.device_bytes = backend.PermanentDeviceBytes(inputs->matrix.view(), inputs->options);
  spec.work = [inputs = *std::move(inputs), response, &backend](JobControl& control) {
    absl::StatusOr<PermanentResult> result =
        backend.Permanent(inputs.matrix.view(), inputs.options, &control);
    if (!result.ok()) return result.status();
    ToProto(*result, response);
    return absl::OkStatus();
  };
  return spec;
}

absl::StatusOr<JobSpec> MakeJob(const v1::JobRequest& request, Backend& backend,
                                const Limits& limits, absl::Time now) {
  const double timeout = request.timeout_seconds();
  if (!(timeout >= 0.0) || std::isinf(timeout)) {
    return absl::InvalidArgumentError(absl::StrCat("timeout_seconds is ", timeout,
                                                   "; want a finite number >= 0 (0: no deadline)"));
  }
  // The call's request dies with the call; the job, queued past it, needs its own copy.
  auto owned = std::make_unique<v1::JobRequest>(request);
  auto result = std::make_shared<v1::JobUpdate>();
  absl::StatusOr<JobSpec> spec;
  switch (owned->request_case()) {
    case v1::JobRequest::kDeterminant:
      spec = MakeJob(owned->determinant(), result->mutable_determinant(), backend, limits);
      break;
    case v1::JobRequest::kFactorize:
      spec = MakeJob(owned->factorize(), result->mutable_factorize(), backend, limits);
      break;
    case v1::JobRequest::kMultiply:
      spec = MakeJob(owned->multiply(), result->mutable_multiply(), backend, limits);
      break;
    case v1::JobRequest::kPermanent:
      spec = MakeJob(owned->permanent(), result->mutable_permanent(), backend, limits);
      break;
    case v1::JobRequest::REQUEST_NOT_SET:
      return absl::InvalidArgumentError(
          "request: none set; want one of determinant, factorize, multiply, permanent");
  }
  if (!spec.ok()) return spec.status();
  if (timeout > 0.0) spec->deadline = now + absl::Seconds(timeout);
  // The inner work borrows *owned: it travels with it, so both go when the job ends.
  spec->work = [owned = std::move(owned), work = std::move(spec->work)](
                   JobControl& control) mutable { return work(control); };
  spec->result = std::move(result);
  return spec;
}

}  // namespace matrixd::server
