// Turns a request message into checked core inputs: enum fields known, matrices well-formed
// (server/matrix_conversion.h), then core/validation.h's checks under the server's Limits. On
// failure INVALID_ARGUMENT naming the field; nothing has been computed or queued yet.
#ifndef MATRIXD_SERVER_REQUEST_VALIDATION_H_
#define MATRIXD_SERVER_REQUEST_VALIDATION_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/operations.h"
#include "core/validation.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/matrix_conversion.h"

namespace matrixd::server {

// Where a request's matrix references are resolved: resident matrices in `registry` (null: none
// kept), kept in device memory for the operations `backend` says read them on the device (null:
// every operand is copied to host memory).
struct OperandSources {
  ResidentRegistry* registry = nullptr;
  const Backend* backend = nullptr;
  SharedMemoryRegistry* shared_memory = nullptr;  // null: shared-memory references refused
  std::string owner;  // the client whose resident matrices and regions are found
};

// Each borrows the request's bytes: the request must outlive it.
struct DeterminantInputs {
  InputMatrix matrix;
  DeterminantOptions options;
};
struct FactorizeInputs {
  InputMatrix matrix;
  FactorizationKind kind;
  std::optional<InputMatrix> rhs;  // absent rhs (rows 0, cols 0, no data): no solve
  int64_t batch_count = 0;         // 0: one matrix; > 0: matrices stacked in `matrix`
  bool estimate_condition = false;
  RefineOptions refine = {};
  int devices = 1;  // > 1: one factorization over that many GPUs
  const MatrixView* rhs_view() const { return rhs.has_value() ? &rhs->view() : nullptr; }
  FactorizeOptions options() const {
    return {.kind = kind,
            .batch_count = batch_count,
            .estimate_condition = estimate_condition,
            .refine = refine,
            .devices = devices};
  }
};
// A solve with a kept factorization: the lease keeps it in place (not spilled, not freed) until
// the job ends, and `factorization` views its parts where they live.
struct SolveInputs {
  ResidentLease lease;
  FactorizationView factorization;
  InputMatrix rhs;
  SolveOptions options;
};
struct MultiplyInputs {
  InputMatrix a;
  InputMatrix b;
  MultiplyOptions options;
};
struct PermanentInputs {
  InputMatrix matrix;
  PermanentOptions options;
};

absl::StatusOr<DeterminantInputs> ValidateRequest(const v1::DeterminantRequest& request,
                                                  const Limits& limits,
                                                  const OperandSources& sources = {});
absl::StatusOr<FactorizeInputs> ValidateRequest(const v1::FactorizeRequest& request,
                                                const Limits& limits,
                                                const OperandSources& sources = {});
// Also: keep_input only with result_options.keep_result; the refine fields as core/refinement.h's
// CheckRefineOptions, REFINE_PRECISION_TF32 and _FLOAT16 refused with deterministic, and a
// lower-precision refine_factor_precision refused with keep_result (it keeps no factors).
// MultiplyRequest: allow_tf32 refused with deterministic.
// SolveRequest: the factorization handle names a kept factorization (INVALID_ARGUMENT for a plain
// matrix, NOT_FOUND for an unknown handle, FAILED_PRECONDITION without a registry), rhs is given,
// well-formed and fits it (core/factorization.h's CheckSolve, FAILED_PRECONDITION when singular).
absl::StatusOr<SolveInputs> ValidateRequest(const v1::SolveRequest& request, const Limits& limits,
                                            const OperandSources& sources = {});
absl::StatusOr<MultiplyInputs> ValidateRequest(const v1::MultiplyRequest& request,
                                               const Limits& limits,
                                               const OperandSources& sources = {});
absl::StatusOr<PermanentInputs> ValidateRequest(const v1::PermanentRequest& request,
                                                const Limits& limits,
                                                const OperandSources& sources = {});

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_REQUEST_VALIDATION_H_
