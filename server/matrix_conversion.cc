#include "server/matrix_conversion.h"

#include <bit>
#include <complex>
#include <cstdint>
#include <limits>
#include <new>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/device_factorization.h"

namespace matrixd::server {
namespace {

// The wire format is little-endian and we hand the bytes to core as they are.
static_assert(std::endian::native == std::endian::little, "matrixd assumes a little-endian host");

// Complex types need only their component's alignment.
size_t ElementAlignment(DType dtype) {
  return IsComplex(dtype) ? ElementSize(dtype) / 2 : ElementSize(dtype);
}

}  // namespace

absl::StatusOr<ResidentLayout> FromProto(v1::ResidentLayout layout, absl::string_view field) {
  switch (layout) {
    case v1::RESIDENT_LAYOUT_SINGLE_DEVICE:
      return ResidentLayout::kSingleDevice;
    case v1::RESIDENT_LAYOUT_DISTRIBUTED:
      return ResidentLayout::kDistributed;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is ", static_cast<int>(layout),
                   ", not a known ResidentLayout; want RESIDENT_LAYOUT_SINGLE_DEVICE or "
                   "RESIDENT_LAYOUT_DISTRIBUTED"));
}

v1::ResidentLayout ToProto(ResidentLayout layout) {
  return layout == ResidentLayout::kDistributed ? v1::RESIDENT_LAYOUT_DISTRIBUTED
                                                : v1::RESIDENT_LAYOUT_SINGLE_DEVICE;
}

absl::StatusOr<DType> FromProto(v1::DType dtype, absl::string_view field) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return DType::kFloat32;
    case v1::DTYPE_FLOAT64:
      return DType::kFloat64;
    case v1::DTYPE_COMPLEX64:
      return DType::kComplex64;
    case v1::DTYPE_COMPLEX128:
      return DType::kComplex128;
    case v1::DTYPE_INT64:
      return DType::kInt64;
    case v1::DTYPE_UINT32:
      return DType::kUInt32;
    case v1::DTYPE_UNSPECIFIED:
      return absl::InvalidArgumentError(
          absl::StrCat(field,
                       ".dtype is unspecified; want DTYPE_FLOAT32, DTYPE_FLOAT64, DTYPE_COMPLEX64, "
                       "DTYPE_COMPLEX128, DTYPE_INT64 or DTYPE_UINT32"));
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ".dtype is ", static_cast<int>(dtype), ", not a known DType"));
}

v1::DType ToProto(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return v1::DTYPE_FLOAT32;
    case DType::kFloat64:
      return v1::DTYPE_FLOAT64;
    case DType::kComplex64:
      return v1::DTYPE_COMPLEX64;
    case DType::kComplex128:
      return v1::DTYPE_COMPLEX128;
    case DType::kInt64:
      return v1::DTYPE_INT64;
    case DType::kUInt32:
      return v1::DTYPE_UINT32;
  }
  return v1::DTYPE_UNSPECIFIED;
}

bool IsAbsent(const v1::Matrix& proto) {
  return proto.rows() == 0 && proto.cols() == 0 && proto.data().empty();
}

absl::StatusOr<InputMatrix> FromProto(const v1::Matrix& proto, absl::string_view field) {
  absl::StatusOr<DType> dtype = FromProto(proto.dtype(), field);
  if (!dtype.ok()) return dtype.status();
  const int64_t rows = proto.rows();
  const int64_t cols = proto.cols();
  if (rows <= 0 || cols <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has shape ", rows, "x", cols, "; rows and cols must be >= 1"));
  }
  const auto element_size = static_cast<int64_t>(ElementSize(*dtype));
  int64_t elements = 0;
  int64_t bytes = 0;
  if (__builtin_mul_overflow(rows, cols, &elements) ||
      __builtin_mul_overflow(elements, element_size, &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has shape ", rows, "x", cols,
                                                   ": rows*cols*", element_size,
                                                   " bytes overflows 64 bits"));
  }
  const std::string& data = proto.data();
  if (static_cast<uint64_t>(data.size()) != static_cast<uint64_t>(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".data has ", data.size(),
                                                   " bytes, want ", rows, "*", cols, "*",
                                                   element_size, " = ", bytes));
  }

  InputMatrix input;
  const auto* begin = reinterpret_cast<const std::byte*>(data.data());
  if (reinterpret_cast<uintptr_t>(begin) % ElementAlignment(*dtype) == 0) {
    input.view_ = {rows, cols, *dtype, begin};
  } else {
    // Short strings live inside the std::string object and need not be aligned.
    input.aligned_copy_ =
        Matrix::FromBytes(rows, cols, *dtype, std::span<const std::byte>(begin, data.size()));
    input.view_ = input.aligned_copy_.view();
  }
  return input;
}

absl::StatusOr<SharedMemoryReference> FromProto(const v1::SharedMemoryRef& proto,
                                                absl::string_view field) {
  absl::StatusOr<DType> dtype = FromProto(proto.dtype(), absl::StrCat(field, ".dtype"));
  if (!dtype.ok()) return dtype.status();
  return SharedMemoryReference{.region = proto.region(),
                               .offset = proto.offset(),
                               .rows = proto.rows(),
                               .cols = proto.cols(),
                               .dtype = *dtype};
}

absl::StatusOr<InputMatrix> FromProto(const v1::MatrixRef& proto, ResidentRegistry* registry,
                                      absl::string_view field, SharedMemoryRegistry* shared_memory,
                                      const std::string& owner, DistributedUse distributed) {
  if (proto.source_case() == v1::MatrixRef::kSharedMemory) {
    const std::string where = absl::StrCat(field, ".shared_memory");
    if (shared_memory == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": this server takes no shared-memory matrices"));
    }
    absl::StatusOr<SharedMemoryReference> reference = FromProto(proto.shared_memory(), where);
    if (!reference.ok()) return reference.status();
    absl::StatusOr<SharedMemoryMatrix> matrix = shared_memory->Resolve(*reference, where, owner);
    if (!matrix.ok()) return matrix.status();
    InputMatrix input;
    input.view_ = matrix->view;
    input.shared_memory_ = std::move(matrix->region);
    input.shared_device_ = std::move(matrix->device);
    return input;
  }
  if (proto.source_case() != v1::MatrixRef::kHandle || proto.handle().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " names no matrix; set its handle or shared_memory"));
  }
  if (registry == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ": this server keeps no resident matrices"));
  }
  absl::StatusOr<ResidentLease> lease = registry->Acquire(proto.handle(), field, owner);
  if (!lease.ok()) return lease.status();
  InputMatrix input;
  input.view_ = lease->view();
  if (input.view_.on_device() && !lease->info().finite) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": resident matrix ", proto.handle(),
                     " has entries that are not finite (NaN or Inf)"));
  }
  input.resident_.emplace(*std::move(lease));
  // A factorization kept in parts over several GPUs (its factor) is read by no operation in place:
  // gathered. One kept whole on one GPU is a device view there, as any resident matrix.
  const DeviceFactorization* kept = input.resident_->device_factorization();
  const bool kept_on_gpus = kept != nullptr && !kept->whole_on_one_device();
  if ((input.resident_->distributed() != nullptr && distributed == DistributedUse::kGather) ||
      kept_on_gpus) {
    if (absl::Status gathered = input.CopyToHost(); !gathered.ok()) {
      return absl::Status(gathered.code(),
                          absl::StrCat(field, ": resident matrix ", proto.handle(),
                                       " has layout RESIDENT_LAYOUT_DISTRIBUTED and this operation "
                                       "reads it gathered into host memory: ",
                                       gathered.message()));
    }
  }
  return input;
}

absl::Status InputMatrix::CopyToHost() {
  if (!view_.on_device()) return absl::OkStatus();
  try {
    aligned_copy_ = Matrix::ForOverwrite(view_.rows, view_.cols, view_.dtype);  // read in full
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot copy a ", view_.byte_size(), "-byte device operand to host memory"));
  }
  const std::span<std::byte> bytes(aligned_copy_.mutable_bytes(), aligned_copy_.byte_size());
  if (absl::Status read =
          shared_device_ != nullptr ? shared_device_->Read(0, bytes) : resident_->Read(0, bytes);
      !read.ok()) {
    return read;
  }
  view_ = aligned_copy_.view();
  return absl::OkStatus();
}

void ToProto(const ResidentInfo& info, absl::Time now, v1::ResidentMatrix* proto) {
  proto->set_handle(info.handle);
  proto->set_rows(info.rows);
  proto->set_cols(info.cols);
  proto->set_dtype(ToProto(info.dtype));
  proto->set_bytes(info.bytes);
  proto->set_device(info.device);
  proto->set_spilled(info.spilled);
  proto->set_age_seconds(absl::ToDoubleSeconds(now - info.created));
  proto->set_idle_seconds(absl::ToDoubleSeconds(now - info.last_used));
  proto->set_label(info.label);
  proto->set_missing_bytes(info.missing_bytes);
  proto->set_layout(ToProto(info.layout));
  if (info.factorization.has_value()) {
    proto->set_factorization_kind(ToProto(info.factorization->kind));
    proto->set_input_kept(info.factorization->input_kept);
    proto->set_batch_count(info.factorization->batch_count);
  }
}

void ToProto(const Matrix& matrix, v1::Matrix* proto) {
  proto->set_rows(matrix.rows());
  proto->set_cols(matrix.cols());
  proto->set_dtype(ToProto(matrix.dtype()));
  // A borrowed matrix's bytes are already where the caller asked (core/result_destinations.h).
  if (matrix.borrowed()) return;
  proto->set_data(reinterpret_cast<const char*>(matrix.bytes()), matrix.byte_size());
}

void ToProto(const ComputeStats& stats, v1::ComputeStats* proto) {
  proto->set_backend(stats.backend);
  proto->set_device(stats.device);
  proto->set_seconds(stats.seconds);
  proto->set_bytes_moved(stats.bytes_moved);
  proto->set_flops(stats.flops);
  std::vector<std::string> kernels;
  for (const KernelRecord& record : stats.kernels) kernels.push_back(record.kernel);
  proto->set_algorithm(absl::StrJoin(kernels, "+"));
  proto->set_precision(stats.precision);
}

v1::DeterminantMethod ToProto(DeterminantMethod method) {
  switch (method) {
    case DeterminantMethod::kAuto:
      return v1::DETERMINANT_METHOD_AUTO;
    case DeterminantMethod::kLu:
      return v1::DETERMINANT_METHOD_LU;
    case DeterminantMethod::kCondensation:
      return v1::DETERMINANT_METHOD_CONDENSATION;
  }
  return v1::DETERMINANT_METHOD_AUTO;
}

v1::FactorizationKind ToProto(FactorizationKind kind) {
  switch (kind) {
    case FactorizationKind::kLu:
      return v1::FACTORIZATION_KIND_LU;
    case FactorizationKind::kCholesky:
      return v1::FACTORIZATION_KIND_CHOLESKY;
    case FactorizationKind::kQr:
      return v1::FACTORIZATION_KIND_QR;
  }
  return v1::FACTORIZATION_KIND_UNSPECIFIED;
}

v1::PermanentMethod ToProto(PermanentMethod method) {
  switch (method) {
    case PermanentMethod::kAuto:
      return v1::PERMANENT_METHOD_AUTO;
    case PermanentMethod::kRyser:
      return v1::PERMANENT_METHOD_RYSER;
    case PermanentMethod::kGlynn:
      return v1::PERMANENT_METHOD_GLYNN;
  }
  return v1::PERMANENT_METHOD_AUTO;
}

v1::PermanentPrecision ToProto(PermanentPrecision precision) {
  switch (precision) {
    case PermanentPrecision::kExtended:
      return v1::PERMANENT_PRECISION_EXTENDED;
    case PermanentPrecision::kFast:
      return v1::PERMANENT_PRECISION_FAST;
    case PermanentPrecision::kExact:
      return v1::PERMANENT_PRECISION_EXACT;
  }
  return v1::PERMANENT_PRECISION_DEFAULT;
}

v1::PermanentWalk ToProto(PermanentWalk walk) {
  switch (walk) {
    case PermanentWalk::kAuto:
      return v1::PERMANENT_WALK_AUTO;
    case PermanentWalk::kDense:
      return v1::PERMANENT_WALK_DENSE;
    case PermanentWalk::kSparse:
      return v1::PERMANENT_WALK_SPARSE;
  }
  return v1::PERMANENT_WALK_AUTO;
}

namespace {

void ToProto(const ExactCertificate& certificate, v1::ExactCertificate* message) {
  message->set_method(certificate.method);
  message->mutable_primes()->Add(certificate.primes.begin(), certificate.primes.end());
  message->mutable_residues()->Add(certificate.residues.begin(), certificate.residues.end());
  message->set_bound_bits(certificate.bound_bits);
  message->set_covered_bits(certificate.covered_bits);
  message->set_early_stop(certificate.early_stop);
  message->set_error_probability(certificate.error_probability);
}

void ToProto(const Accuracy& accuracy, v1::Accuracy* message) {
  message->set_rcond(accuracy.rcond);
  message->set_relative_error_bound(accuracy.relative_error_bound);
  message->set_meaningful_digits(accuracy.meaningful_digits);
  message->set_ill_conditioned(accuracy.ill_conditioned);
}

}  // namespace

void ToProto(const DeterminantResult& result, DType input, uint64_t modulus,
             v1::DeterminantResponse* response) {
  response->set_method_used(ToProto(result.method_used));
  if (result.accuracy.has_value()) ToProto(*result.accuracy, response->mutable_accuracy());
  if (result.certificate.has_value()) {
    ToProto(*result.certificate, response->mutable_certificate());
  }
  ToProto(result.stats, response->mutable_stats());
  if (modulus > 0) {
    response->set_residue(result.residue);
    response->set_singular(result.residue == 0);
    return;
  }
  const ScaledNumber& value = result.value;
  const bool singular = result.exact.empty() ? value.is_zero() : result.exact == "0";
  response->set_singular(singular);
  response->set_exact(result.exact);
  if (singular) {
    response->set_log_abs(-std::numeric_limits<double>::infinity());
    return;  // sign, phase, mantissa, exponent and value are all zero
  }
  const std::complex<double> phase = value.phase();
  if (IsComplex(input)) {
    response->set_sign(1.0);
  } else {
    response->set_sign(value.mantissa().real() > 0 ? 1.0 : -1.0);
  }
  response->set_phase_re(phase.real());
  response->set_phase_im(phase.imag());
  response->set_log_abs(value.log_abs());
  const DecimalForm decimal = value.Decimal();
  response->set_mantissa(decimal.mantissa.real());
  response->set_mantissa_imag(decimal.mantissa.imag());
  response->set_exponent10(decimal.exponent10);
  const std::complex<double> plain = value.ToComplex();
  response->set_value(plain.real());
  response->set_value_imag(plain.imag());
}

void ToProto(const FactorizeResult& result, v1::FactorizeResponse* response) {
  response->set_kind(ToProto(result.kind));
  if (!result.lu.empty()) ToProto(result.lu, response->mutable_lu());
  response->mutable_permutation()->Add(result.permutation.begin(), result.permutation.end());
  response->set_singular(result.singular_column.has_value());
  response->set_singular_column(result.singular_column.value_or(-1));
  response->mutable_singular_columns()->Add(result.singular_columns.begin(),
                                            result.singular_columns.end());
  if (!result.l.empty()) ToProto(result.l, response->mutable_l());
  if (!result.q.empty()) ToProto(result.q, response->mutable_q());
  if (!result.r.empty()) ToProto(result.r, response->mutable_r());
  if (result.solution.has_value()) ToProto(*result.solution, response->mutable_solution());
  if (result.accuracy.has_value()) ToProto(*result.accuracy, response->mutable_accuracy());
  if (result.refinement.has_value()) {
    v1::Refinement* refinement = response->mutable_refinement();
    refinement->set_iterations(result.refinement->iterations);
    refinement->set_backward_error(result.refinement->backward_error);
    refinement->set_converged(result.refinement->converged);
    refinement->set_factor_precision(result.refinement->factor_precision);
    refinement->set_fell_back(result.refinement->fell_back);
    refinement->set_threshold(result.refinement->threshold);
  }
  ToProto(result.stats, response->mutable_stats());
}

void ToProto(const MultiplyResult& result, v1::MultiplyResponse* response) {
  ToProto(result.c, response->mutable_c());
  response->set_block_products(result.block_products);
  response->set_block_products_total(result.block_products_total);
  if (result.check.has_value()) {
    v1::ProductCheck* check = response->mutable_check();
    check->set_discrepancy(result.check->discrepancy);
    check->set_tolerance(result.check->tolerance);
    check->set_passed(result.check->passed);
    check->set_vectors(result.check->vectors);
    check->set_seed(result.check->seed);
  }
  ToProto(result.stats, response->mutable_stats());
}

void ToProto(const SolveResult& result, FactorizationKind kind, v1::SolveResponse* response) {
  if (!result.x.empty()) ToProto(result.x, response->mutable_solution());
  response->set_kind(ToProto(kind));
  if (result.residual.has_value()) response->set_residual(*result.residual);
  ToProto(result.stats, response->mutable_stats());
}

void ToProto(const PermanentResult& result, v1::PermanentResponse* response) {
  response->set_value(result.value.real());
  response->set_imag(result.value.imag());
  response->set_exact(result.exact);
  response->set_method_used(ToProto(result.method_used));
  response->set_precision_used(ToProto(result.precision_used));
  response->set_walk_used(ToProto(result.walk_used));
  if (result.certificate.has_value()) {
    ToProto(*result.certificate, response->mutable_certificate());
  }
  ToProto(result.stats, response->mutable_stats());
}

}  // namespace matrixd::server
