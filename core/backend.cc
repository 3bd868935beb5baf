#include "core/backend.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/modular_arithmetic.h"
#include "core/validation.h"

namespace matrixd {
namespace {

// The names core/validation.h gives the operands in its messages.
const char* FirstOperand(Operation operation) {
  return operation == Operation::kMultiply ? "a" : "matrix";
}
const char* SecondOperand(Operation operation) {
  return operation == Operation::kMultiply ? "b" : "rhs";
}

bool HasSecondOperand(const OperationQuery& query) {
  return query.second_rows != 0 || query.second_cols != 0 ||
         query.operation == Operation::kMultiply;
}

absl::Status RequireDType(const OperationQuery& query, bool allowed, absl::string_view wanted) {
  if (allowed) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(FirstOperand(query.operation), ".dtype is ",
                                                 DTypeName(query.dtype), "; want ", wanted));
}

// The dtypes each operation takes, on every backend.
absl::Status CheckDType(const OperationQuery& query) {
  const bool floating = IsFloating(query.dtype);
  switch (query.operation) {
    case Operation::kDeterminant:
      if (query.determinant.modulus > 0) {
        return RequireDType(query, query.dtype == DType::kInt64, "int64 when modulus > 0");
      }
      return RequireDType(query, floating || query.dtype == DType::kInt64,
                          "float32, float64, complex64, complex128 or int64");
    case Operation::kFactorize:
      return RequireDType(query, floating, "float32, float64, complex64 or complex128");
    case Operation::kMultiply:
      return RequireDType(query, floating || query.dtype == DType::kUInt32,
                          "float32, float64, complex64, complex128 or uint32");
    case Operation::kPermanent:
      return RequireDType(query, floating || query.dtype == DType::kInt64,
                          "float32, float64, complex64, complex128 or int64");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("operation ", static_cast<int>(query.operation), " is not known"));
}

absl::Status RequireNonEmpty(const char* field, int64_t rows, int64_t cols) {
  if (rows >= 1 && cols >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " has shape ", rows, "x", cols, "; rows and cols must be >= 1"));
}

absl::Status CheckShapes(const OperationQuery& query) {
  if (absl::Status s = RequireNonEmpty(FirstOperand(query.operation), query.rows, query.cols);
      !s.ok()) {
    return s;
  }
  if (!HasSecondOperand(query)) return absl::OkStatus();
  return RequireNonEmpty(SecondOperand(query.operation), query.second_rows, query.second_cols);
}

absl::Status CheckOptions(const OperationQuery& query) {
  if (query.operation == Operation::kDeterminant) {
    const uint64_t p = query.determinant.modulus;
    if (p == 1 || p >= kModulusLimit || (p > 1 && !IsPrime(p))) {
      return absl::InvalidArgumentError(
          absl::StrCat("modulus ", p, " must be 0 or a prime below 2^62"));
    }
  }
  if (query.operation == Operation::kFactorize) {
    const int64_t batch_count = query.factorize.batch_count;
    if (batch_count < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch_count is ", batch_count, "; want 0 (one matrix) or the number of matrices"));
    }
    if (batch_count > 0 && query.rows % batch_count != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "matrix.rows = ", query.rows, " is not a multiple of batch_count = ", batch_count));
    }
    if (absl::Status s = CheckEstimateCondition(
            query.factorize, batch_count > 0 ? query.rows / batch_count : query.rows, query.cols);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            CheckFactorizeDevices(query.factorize, query.dtype, query.rows, query.cols);
        !s.ok()) {
      return s;
    }
  }
  if (query.operation == Operation::kMultiply && query.multiply.block_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_size is ", query.multiply.block_size, "; want 0 (dense) or > 0"));
  }
  if (query.operation == Operation::kPermanent && query.permanent.devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices is ", query.permanent.devices, "; want >= 1"));
  }
  if (query.operation == Operation::kMultiply && query.multiply.devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices is ", query.multiply.devices, "; want >= 1"));
  }
  if (query.operation == Operation::kMultiply && query.multiply.verify &&
      !IsFloating(query.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("verify is set but a.dtype is ", DTypeName(query.dtype),
                     "; Freivalds' check takes float32, float64, complex64 or complex128"));
  }
  return absl::OkStatus();
}

absl::Status RequireDimensions(const char* field, int64_t rows, int64_t cols,
                               const BackendLimits& limits) {
  if (rows <= limits.max_dimension && cols <= limits.max_dimension) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(field, " has shape ", rows, "x", cols, "; the ",
                                               limits.backend, " backend takes up to ",
                                               limits.max_dimension, " rows and columns"));
}

}  // namespace

absl::Status CheckDeterminantBatch(const MatrixView& a, int64_t batch_count,
                                   const DeterminantOptions& options) {
  if (batch_count < 1 || a.rows % batch_count != 0 || a.rows / batch_count != a.cols ||
      a.cols < 1) {
    return absl::InvalidArgumentError(absl::StrCat("matrix has shape ", a.rows, "x", a.cols,
                                                   "; want batch_count = ", batch_count,
                                                   " square non-empty matrices stacked"));
  }
  if (!IsFloating(a.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("matrix.dtype is ", DTypeName(a.dtype),
                                                   "; want a floating dtype for a batch"));
  }
  if (options.modulus != 0) {
    return absl::InvalidArgumentError("modulus: a batch of determinants is over R or C only");
  }
  return absl::OkStatus();
}

MatrixView BatchMember(const MatrixView& a, int64_t batch_count, int64_t index) {
  MatrixView member = a;
  member.rows = a.rows / batch_count;
  member.data = a.data + static_cast<size_t>(index) * member.byte_size();
  return member;
}

ComputeStats ShareOf(const ComputeStats& stats, int64_t members) {
  ComputeStats share = stats;
  const double d = static_cast<double>(members);
  share.seconds /= d;
  share.bytes_moved /= static_cast<uint64_t>(members);
  share.flops /= d;
  for (KernelRecord& kernel : share.kernels) {
    kernel.seconds /= d;
    kernel.bytes /= static_cast<uint64_t>(members);
    kernel.flops /= d;
  }
  return share;
}

absl::StatusOr<std::vector<DeterminantResult>> Backend::DeterminantBatch(
    const MatrixView& a, int64_t batch_count, const DeterminantOptions& options,
    JobControl* control) {
  if (absl::Status valid = CheckDeterminantBatch(a, batch_count, options); !valid.ok()) {
    return valid;
  }
  std::vector<DeterminantResult> results;
  results.reserve(static_cast<size_t>(batch_count));
  for (int64_t i = 0; i < batch_count; ++i) {
    absl::StatusOr<DeterminantResult> result =
        Determinant(BatchMember(a, batch_count, i), options, control);
    if (!result.ok()) return result.status();
    results.push_back(*std::move(result));
  }
  return results;
}

OperationQuery DeterminantQuery(const MatrixView& a, const DeterminantOptions& options) {
  return {.operation = Operation::kDeterminant,
          .dtype = a.dtype,
          .rows = a.rows,
          .cols = a.cols,
          .determinant = options};
}

OperationQuery FactorizeQuery(const MatrixView& a, const FactorizeOptions& options,
                              const MatrixView* rhs) {
  return {.operation = Operation::kFactorize,
          .dtype = a.dtype,
          .rows = a.rows,
          .cols = a.cols,
          .second_rows = rhs != nullptr ? rhs->rows : 0,
          .second_cols = rhs != nullptr ? rhs->cols : 0,
          .factorize = options};
}

OperationQuery MultiplyQuery(const MatrixView& a, const MatrixView& b,
                             const MultiplyOptions& options) {
  OperationQuery query{.operation = Operation::kMultiply,
                       .dtype = a.dtype,
                       .rows = a.rows,
                       .cols = a.cols,
                       .second_rows = b.rows,
                       .second_cols = b.cols,
                       .multiply = options};
  query.multiply.output = nullptr;  // where C goes is no question of capability
  return query;
}

OperationQuery PermanentQuery(const MatrixView& a, const PermanentOptions& options) {
  return {.operation = Operation::kPermanent,
          .dtype = a.dtype,
          .rows = a.rows,
          .cols = a.cols,
          .permanent = options};
}

absl::Status CheckBackendLimits(const OperationQuery& query, const BackendLimits& limits) {
  if (query.operation == Operation::kPermanent) {
    if (query.permanent.devices > limits.max_permanent_devices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "devices is ", query.permanent.devices, "; the ", limits.backend, " backend splits a ",
          "permanent over up to ", limits.max_permanent_devices, " device(s)"));
    }
    if (query.rows <= limits.max_permanent_order) return absl::OkStatus();
    return absl::UnimplementedError(
        absl::StrCat("matrix is ", query.rows, "x", query.cols, "; the ", limits.backend,
                     " backend computes permanents up to n = ", limits.max_permanent_order));
  }
  const int64_t batch_count =
      query.operation == Operation::kFactorize ? query.factorize.batch_count : 0;
  if (batch_count > limits.max_batch_count) {
    return absl::UnimplementedError(absl::StrCat("batch_count is ", batch_count, "; the ",
                                                 limits.backend, " backend factorizes up to ",
                                                 limits.max_batch_count, " matrices at once"));
  }
  // The libraries see each matrix of a batch on its own.
  const int64_t matrices = batch_count > 0 ? batch_count : 1;
  if (absl::Status s = RequireDimensions(FirstOperand(query.operation), query.rows / matrices,
                                         query.cols, limits);
      !s.ok()) {
    return s;
  }
  return RequireDimensions(SecondOperand(query.operation), query.second_rows / matrices,
                           query.second_cols, limits);
}

absl::StatusOr<std::unique_ptr<IpcMemory>> Backend::OpenCudaIpc(
    std::span<const std::byte> /*raw_handle*/, int /*device_id*/, uint64_t /*byte_size*/) {
  return absl::UnimplementedError(absl::StrCat("the ", std::string(name()),
                                               " backend cannot open CUDA IPC memory; run "
                                               "matrixd with --backend=cuda"));
}

absl::Status Backend::Supports(const OperationQuery& query) const {
  if (absl::Status s = CheckDType(query); !s.ok()) return s;
  if (absl::Status s = CheckShapes(query); !s.ok()) return s;
  if (absl::Status s = CheckOptions(query); !s.ok()) return s;
  // A backend that spreads one product over several GPUs (core/multi_gpu) answers these itself,
  // and the distributed grid (core/distributed) method kCublasMp.
  if (query.operation == Operation::kMultiply &&
      query.multiply.method == MultiplyMethod::kCublasMp) {
    return absl::UnimplementedError(absl::StrCat(
        "method = CUBLASMP: cuBLASMp runs with one MPI rank per GPU (`mpirun -n R matrixd "
        "--distributed --backend=cuda`); this is the ",
        std::string(name()), " backend"));
  }
  if (query.operation == Operation::kMultiply && IsMultiDeviceProduct(query.multiply)) {
    return absl::UnimplementedError(absl::StrCat(
        "devices = ", query.multiply.devices,
        " (or a multi-GPU method): one product over several GPUs needs the CUDA backend built "
        "with NCCL; this is the ",
        std::string(name()), " backend"));
  }
  if (query.operation == Operation::kFactorize && query.factorize.devices > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "devices is ", query.factorize.devices,
        ": one factorization over several GPUs needs the CUDA backend built with NCCL; this is "
        "the ",
        std::string(name()), " backend"));
  }
  if (query.operation == Operation::kDeterminant && query.determinant.devices > 1) {
    return absl::UnimplementedError(absl::StrCat(
        "devices = ", query.determinant.devices,
        ": one determinant over several GPUs needs the CUDA backend built with NCCL; this is the ",
        std::string(name()), " backend"));
  }
  return absl::OkStatus();
}

}  // namespace matrixd
