#include "server/request_validation.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/factorization.h"
#include "core/hadamard_bound.h"
#include "core/refinement.h"

namespace matrixd::server {
namespace {

absl::StatusOr<DeterminantMethod> FromProto(v1::DeterminantMethod method) {
  switch (method) {
    case v1::DETERMINANT_METHOD_AUTO:
      return DeterminantMethod::kAuto;
    case v1::DETERMINANT_METHOD_LU:
      return DeterminantMethod::kLu;
    case v1::DETERMINANT_METHOD_CONDENSATION:
      return DeterminantMethod::kCondensation;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("method is ", static_cast<int>(method),
                   ", not a known DeterminantMethod; want DETERMINANT_METHOD_AUTO, "
                   "DETERMINANT_METHOD_LU or DETERMINANT_METHOD_CONDENSATION"));
}

absl::StatusOr<FactorizationKind> FromProto(v1::FactorizationKind kind) {
  switch (kind) {
    case v1::FACTORIZATION_KIND_LU:
      return FactorizationKind::kLu;
    case v1::FACTORIZATION_KIND_CHOLESKY:
      return FactorizationKind::kCholesky;
    case v1::FACTORIZATION_KIND_QR:
      return FactorizationKind::kQr;
    case v1::FACTORIZATION_KIND_UNSPECIFIED:
      return absl::InvalidArgumentError(
          "kind is unspecified; want FACTORIZATION_KIND_LU, FACTORIZATION_KIND_CHOLESKY or "
          "FACTORIZATION_KIND_QR");
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("kind is ", static_cast<int>(kind),
                   ", not a known FactorizationKind; want FACTORIZATION_KIND_LU, "
                   "FACTORIZATION_KIND_CHOLESKY or FACTORIZATION_KIND_QR"));
}

absl::StatusOr<RefinePrecision> FromProto(v1::RefinePrecision precision) {
  switch (precision) {
    case v1::REFINE_PRECISION_UNSPECIFIED:
      return RefinePrecision::kInput;
    case v1::REFINE_PRECISION_FLOAT32:
      return RefinePrecision::kFloat32;
    case v1::REFINE_PRECISION_TF32:
      return RefinePrecision::kTf32;
    case v1::REFINE_PRECISION_FLOAT16:
      return RefinePrecision::kFloat16;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("refine_factor_precision is ", static_cast<int>(precision),
                   ", not a known RefinePrecision; want REFINE_PRECISION_UNSPECIFIED, "
                   "REFINE_PRECISION_FLOAT32, REFINE_PRECISION_TF32 or REFINE_PRECISION_FLOAT16"));
}

// The refine fields of a Factorize that do not depend on the operands: the precision is known,
// and a deterministic request refuses the tensor-core precisions (as it refuses allow_tf32).
absl::StatusOr<RefineOptions> RefineOptionsOf(const v1::FactorizeRequest& request) {
  absl::StatusOr<RefinePrecision> precision = FromProto(request.refine_factor_precision());
  if (!precision.ok()) return precision.status();
  if (request.deterministic() &&
      (*precision == RefinePrecision::kTf32 || *precision == RefinePrecision::kFloat16)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refine_factor_precision is ", v1::RefinePrecision_Name(request.refine_factor_precision()),
        " with deterministic; a deterministic request factorizes in FLOAT32 or the input's "
        "precision"));
  }
  return RefineOptions{.enabled = request.refine(),
                       .factor_precision = *precision,
                       .max_iterations = request.refine_max_iterations()};
}

absl::StatusOr<SolveTranspose> FromProto(v1::SolveTranspose transpose) {
  switch (transpose) {
    case v1::SOLVE_TRANSPOSE_NONE:
      return SolveTranspose::kNone;
    case v1::SOLVE_TRANSPOSE_TRANSPOSE:
      return SolveTranspose::kTranspose;
    case v1::SOLVE_TRANSPOSE_CONJUGATE:
      return SolveTranspose::kConjugateTranspose;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("transpose is ", static_cast<int>(transpose),
                   ", not a known SolveTranspose; want SOLVE_TRANSPOSE_NONE, "
                   "SOLVE_TRANSPOSE_TRANSPOSE or SOLVE_TRANSPOSE_CONJUGATE"));
}

absl::StatusOr<MultiplyMethod> FromProto(v1::MultiplyMethod method) {
  switch (method) {
    case v1::MULTIPLY_METHOD_AUTO:
      return MultiplyMethod::kAuto;
    case v1::MULTIPLY_METHOD_CANNON:
      return MultiplyMethod::kCannon;
    case v1::MULTIPLY_METHOD_CUBLASMP:
      return MultiplyMethod::kCublasMp;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("method is ", static_cast<int>(method),
                   ", not a known MultiplyMethod; want MULTIPLY_METHOD_AUTO, "
                   "MULTIPLY_METHOD_CANNON or MULTIPLY_METHOD_CUBLASMP"));
}

absl::StatusOr<PermanentMethod> FromProto(v1::PermanentMethod method) {
  switch (method) {
    case v1::PERMANENT_METHOD_AUTO:
      return PermanentMethod::kAuto;
    case v1::PERMANENT_METHOD_RYSER:
      return PermanentMethod::kRyser;
    case v1::PERMANENT_METHOD_GLYNN:
      return PermanentMethod::kGlynn;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("method is ", static_cast<int>(method),
                   ", not a known PermanentMethod; want PERMANENT_METHOD_AUTO, "
                   "PERMANENT_METHOD_RYSER or PERMANENT_METHOD_GLYNN"));
}

absl::StatusOr<PermanentPrecision> FromProto(v1::PermanentPrecision precision) {
  switch (precision) {
    case v1::PERMANENT_PRECISION_DEFAULT:
    case v1::PERMANENT_PRECISION_EXTENDED:
      return PermanentPrecision::kExtended;
    case v1::PERMANENT_PRECISION_FAST:
      return PermanentPrecision::kFast;
    case v1::PERMANENT_PRECISION_EXACT:
      return absl::InvalidArgumentError(
          "precision is PERMANENT_PRECISION_EXACT, which is only reported (INT64 input is always "
          "exact); want PERMANENT_PRECISION_DEFAULT, PERMANENT_PRECISION_EXTENDED or "
          "PERMANENT_PRECISION_FAST");
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("precision is ", static_cast<int>(precision),
                   ", not a known PermanentPrecision; want PERMANENT_PRECISION_DEFAULT, "
                   "PERMANENT_PRECISION_EXTENDED or PERMANENT_PRECISION_FAST"));
}

absl::StatusOr<PermanentWalk> FromProto(v1::PermanentWalk walk) {
  switch (walk) {
    case v1::PERMANENT_WALK_AUTO:
      return PermanentWalk::kAuto;
    case v1::PERMANENT_WALK_DENSE:
      return PermanentWalk::kDense;
    case v1::PERMANENT_WALK_SPARSE:
      return PermanentWalk::kSparse;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("walk is ", static_cast<int>(walk),
                   ", not a known PermanentWalk; want PERMANENT_WALK_AUTO, PERMANENT_WALK_DENSE "
                   "or PERMANENT_WALK_SPARSE"));
}

// An operand given inline (`field`) or by reference (`field`_ref).
absl::StatusOr<InputMatrix> Operand(bool by_reference, const v1::Matrix& inline_matrix,
                                    const v1::MatrixRef& reference, absl::string_view field,
                                    const OperandSources& sources,
                                    DistributedUse distributed = DistributedUse::kGather) {
  if (by_reference) {
    return server::FromProto(reference, sources.registry, absl::StrCat(field, "_ref"),
                             sources.shared_memory, sources.owner, distributed);
  }
  return server::FromProto(inline_matrix, field);
}

// max_elements bounds what a request carries inline; a resident operand was bounded by memory and
// --resident_memory_limit when it was stored, a shared-memory one by its region.
Limits LimitsFor(const Limits& limits, std::initializer_list<const InputMatrix*> operands) {
  Limits lifted = limits;
  for (const InputMatrix* operand : operands) {
    if (operand != nullptr && (operand->resident() != nullptr || operand->in_shared_memory())) {
      lifted.max_elements = std::numeric_limits<int64_t>::max();
    }
  }
  return lifted;
}

}  // namespace

absl::StatusOr<DeterminantInputs> ValidateRequest(const v1::DeterminantRequest& request,
                                                  const Limits& limits,
                                                  const OperandSources& sources) {
  absl::StatusOr<DeterminantMethod> method = FromProto(request.method());
  if (!method.ok()) return method.status();
  if (request.devices() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices is ", request.devices(), "; want 0 or 1 (one device) or more"));
  }
  // A distributed resident matrix is read in place by a determinant over several GPUs that
  // reads its operand on the devices; gathered to the host for anything else.
  absl::StatusOr<InputMatrix> matrix =
      Operand(request.has_matrix_ref(), request.matrix(), request.matrix_ref(), "matrix", sources,
              request.devices() > 1 ? DistributedUse::kInPlace : DistributedUse::kGather);
  if (!matrix.ok()) return matrix.status();
  DeterminantInputs inputs{.matrix = *std::move(matrix),
                           .options = {.method = *method,
                                       .modulus = request.modulus(),
                                       .devices = std::max(request.devices(), 1)}};
  if (sources.backend == nullptr ||
      !sources.backend->DeterminantReadsOnDevice(inputs.matrix.view(), inputs.options)) {
    if (absl::Status s = inputs.matrix.CopyToHost(); !s.ok()) return s;
  }
  inputs.options.distributed = inputs.matrix.distributed();
  if (absl::Status s = ValidateDeterminant(inputs.matrix.view(), inputs.options,
                                           LimitsFor(limits, {&inputs.matrix}));
      !s.ok()) {
    return s;
  }
  // What validation knows of a host matrix now, passed down so that no layer reads it again: its
  // entries are finite, and an INT64 one's Hadamard bound (the job's cost, the backend's device
  // bytes and its exact determinant all need it).
  const MatrixView a = inputs.matrix.view();
  if (!a.on_device()) {
    inputs.options.host_entries_checked = true;
    if (a.dtype == DType::kInt64 && inputs.options.modulus == 0) {
      inputs.options.hadamard_bound_bits = HadamardBoundBits(a.As<int64_t>(), a.rows);
    }
  }
  return inputs;
}

absl::StatusOr<FactorizeInputs> ValidateRequest(const v1::FactorizeRequest& request,
                                                const Limits& limits,
                                                const OperandSources& sources) {
  absl::StatusOr<FactorizationKind> kind = FromProto(request.kind());
  if (!kind.ok()) return kind.status();
  absl::StatusOr<InputMatrix> matrix =
      Operand(request.has_matrix_ref(), request.matrix(), request.matrix_ref(), "matrix", sources);
  if (!matrix.ok()) return matrix.status();
  if (request.keep_input() && !request.result_options().keep_result()) {
    return absl::InvalidArgumentError(
        "keep_input is set without result_options.keep_result; only a kept factorization keeps A");
  }
  absl::StatusOr<RefineOptions> refine = RefineOptionsOf(request);
  if (!refine.ok()) return refine.status();
  if (request.devices() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices is ", request.devices(), "; want 0 or 1 (one device) or more"));
  }
  FactorizeInputs inputs{.matrix = *std::move(matrix),
                         .kind = *kind,
                         .rhs = std::nullopt,
                         .batch_count = request.batch_count(),
                         .estimate_condition = request.estimate_condition(),
                         .refine = *refine,
                         .devices = std::max(request.devices(), 1)};
  if (request.has_rhs_ref() || (request.has_rhs() && !IsAbsent(request.rhs()))) {
    absl::StatusOr<InputMatrix> rhs =
        Operand(request.has_rhs_ref(), request.rhs(), request.rhs_ref(), "rhs", sources);
    if (!rhs.ok()) return rhs.status();
    inputs.rhs.emplace(*std::move(rhs));
  }
  // A resident operand is read where it lies when the backend says it can
  // (Backend::FactorizeReadsOnDevice: on a CUDA server every factorization on one GPU; over
  // several GPUs, core/multi_gpu/multi_gpu_factorize.h), else copied to the host first.
  // (keep_input keeps a host copy of A.)
  if (sources.backend == nullptr || request.keep_input() ||
      !sources.backend->FactorizeReadsOnDevice(inputs.matrix.view(), inputs.options(),
                                               inputs.rhs_view())) {
    if (absl::Status s = inputs.matrix.CopyToHost(); !s.ok()) return s;
    if (inputs.rhs.has_value()) {
      if (absl::Status s = inputs.rhs->CopyToHost(); !s.ok()) return s;
    }
  }
  // A backend that copies the operand to its device anyway looks for NaN/Inf there, answering
  // with the same status: the host then spares a pass over it (for a batch of 0.8 GB, ~20 ms).
  const FiniteCheck finite =
      sources.backend != nullptr && sources.backend->FactorizeChecksFinite(
                                        inputs.matrix.view(), inputs.options(), inputs.rhs_view())
          ? FiniteCheck::kByBackend
          : FiniteCheck::kOnHost;
  if (absl::Status s = ValidateFactorize(
          inputs.matrix.view(), inputs.options(), inputs.rhs_view(),
          LimitsFor(limits, {&inputs.matrix, inputs.rhs ? &*inputs.rhs : nullptr}), finite);
      !s.ok()) {
    return s;
  }
  // The mixed-precision path returns no factors (core/operations.h), so there is none to keep.
  if (inputs.refine.enabled && request.result_options().keep_result() &&
      IsMixedPrecision(inputs.refine.factor_precision, inputs.matrix.view().dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refine_factor_precision ", v1::RefinePrecision_Name(request.refine_factor_precision()),
        " with result_options.keep_result: a ", DTypeName(inputs.matrix.view().dtype),
        " system factorized in lower precision keeps no factors; leave one of them out"));
  }
  return inputs;
}

absl::StatusOr<SolveInputs> ValidateRequest(const v1::SolveRequest& request, const Limits& limits,
                                            const OperandSources& sources) {
  absl::StatusOr<SolveTranspose> transpose = FromProto(request.transpose());
  if (!transpose.ok()) return transpose.status();
  const v1::MatrixRef& reference = request.factorization();
  if (reference.source_case() != v1::MatrixRef::kHandle || reference.handle().empty()) {
    return absl::InvalidArgumentError(
        "factorization names no factorization; set its handle (kept[\"factorization\"] of a "
        "Factorize with result_options.keep_result)");
  }
  if (sources.registry == nullptr) {
    return absl::FailedPreconditionError(
        "factorization: this server keeps no resident matrices, so no factorizations");
  }
  absl::StatusOr<ResidentLease> lease =
      sources.registry->Acquire(reference.handle(), "factorization", sources.owner);
  if (!lease.ok()) return lease.status();
  const std::optional<ResidentFactorization>& kept = lease->info().factorization;
  if (!kept.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "factorization.handle \"", reference.handle(), "\" names a plain ", lease->info().rows, "x",
        lease->info().cols, " matrix (\"", lease->info().label,
        "\"), not a kept factorization; keep one with Factorize's result_options.keep_result"));
  }
  if (!request.has_rhs_ref() && (!request.has_rhs() || IsAbsent(request.rhs()))) {
    return absl::InvalidArgumentError("rhs: none given; set rhs or rhs_ref");
  }
  absl::StatusOr<InputMatrix> rhs =
      Operand(request.has_rhs_ref(), request.rhs(), request.rhs_ref(), "rhs", sources);
  if (!rhs.ok()) return rhs.status();
  const auto part = [&](const char* name) { return lease->part(name).value_or(MatrixView{}); };
  // One kept whole on one GPU is solved from its parts' device views there, as one kept as
  // resident matrices is (core/factorization.h); one kept over several GPUs by its own Solve.
  const FactorizationView factorization = WithKeptParts({.kind = kept->kind,
                                                         .factor = lease->view(),
                                                         .r = part("r"),
                                                         .permutation = part("permutation"),
                                                         .input = part("input"),
                                                         .singular_column = kept->singular_column,
                                                         .batch_count = kept->batch_count,
                                                         .singular_member = kept->singular_member,
                                                         .kept = lease->device_factorization()});
  SolveInputs inputs{.lease = *std::move(lease),
                     .factorization = factorization,
                     .rhs = *std::move(rhs),
                     .options = {.transpose = *transpose, .residual = request.residual()}};
  if (absl::Status s = ValidateMatrix(inputs.rhs.view(), "rhs", LimitsFor(limits, {&inputs.rhs}));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckSolve(inputs.factorization, inputs.rhs.view(), inputs.options, "rhs");
      !s.ok()) {
    return s;
  }
  return inputs;
}

absl::StatusOr<MultiplyInputs> ValidateRequest(const v1::MultiplyRequest& request,
                                               const Limits& limits,
                                               const OperandSources& sources) {
  absl::StatusOr<MultiplyMethod> method = FromProto(request.method());
  if (!method.ok()) return method.status();
  if (request.devices() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices is ", request.devices(), "; want 0 or 1 (one device) or more"));
  }
  if (request.deterministic() && request.allow_tf32()) {
    return absl::InvalidArgumentError(
        "allow_tf32 is set with deterministic; a deterministic product runs in the operands' "
        "precision (TF32 results differ from float32 ones); leave one of them out");
  }
  // A distributed resident operand is read in place by a product over several GPUs that reads
  // its operands on the devices (Cannon copies each block's rows from the GPUs holding them);
  // gathered to the host for anything else.
  const DistributedUse distributed = request.devices() > 1 || *method != MultiplyMethod::kAuto
                                         ? DistributedUse::kInPlace
                                         : DistributedUse::kGather;
  absl::StatusOr<InputMatrix> a =
      Operand(request.has_a_ref(), request.a(), request.a_ref(), "a", sources, distributed);
  if (!a.ok()) return a.status();
  absl::StatusOr<InputMatrix> b =
      Operand(request.has_b_ref(), request.b(), request.b_ref(), "b", sources, distributed);
  if (!b.ok()) return b.status();
  MultiplyInputs inputs{.a = *std::move(a),
                        .b = *std::move(b),
                        .options = {.transpose_a = request.transpose_a(),
                                    .transpose_b = request.transpose_b(),
                                    .block_size = request.block_size(),
                                    .allow_tf32 = request.allow_tf32(),
                                    .verify = request.verify(),
                                    .devices = std::max(request.devices(), 1),
                                    .method = *method,
                                    .deterministic = request.deterministic()}};
  if (sources.backend == nullptr ||
      !sources.backend->MultiplyReadsOnDevice(inputs.a.view(), inputs.b.view(), inputs.options)) {
    if (absl::Status s = inputs.a.CopyToHost(); !s.ok()) return s;
    if (absl::Status s = inputs.b.CopyToHost(); !s.ok()) return s;
  }
  inputs.options.distributed_a = inputs.a.distributed();
  inputs.options.distributed_b = inputs.b.distributed();
  if (absl::Status s = ValidateMultiply(inputs.a.view(), inputs.b.view(), inputs.options,
                                        LimitsFor(limits, {&inputs.a, &inputs.b}));
      !s.ok()) {
    return s;
  }
  return inputs;
}

absl::StatusOr<PermanentInputs> ValidateRequest(const v1::PermanentRequest& request,
                                                const Limits& limits,
                                                const OperandSources& sources) {
  absl::StatusOr<PermanentMethod> method = FromProto(request.method());
  if (!method.ok()) return method.status();
  absl::StatusOr<PermanentPrecision> precision = FromProto(request.precision());
  if (!precision.ok()) return precision.status();
  absl::StatusOr<PermanentWalk> walk = FromProto(request.walk());
  if (!walk.ok()) return walk.status();
  if (request.devices() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices is ", request.devices(), "; want 0 or 1 (one device) or more"));
  }
  absl::StatusOr<InputMatrix> matrix =
      Operand(request.has_matrix_ref(), request.matrix(), request.matrix_ref(), "matrix", sources);
  if (!matrix.ok()) return matrix.status();
  // The permanents read their operand on the host.
  if (absl::Status s = matrix->CopyToHost(); !s.ok()) return s;
  PermanentInputs inputs{.matrix = *std::move(matrix),
                         .options = {.method = *method,
                                     .precision = *precision,
                                     .walk = *walk,
                                     .devices = std::max(request.devices(), 1)}};
  if (absl::Status s = ValidatePermanent(inputs.matrix.view(), inputs.options,
                                         LimitsFor(limits, {&inputs.matrix}));
      !s.ok()) {
    return s;
  }
  return inputs;
}

}  // namespace matrixd::server
