#include "core/validation.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/hermitian_check.h"
#include "core/modular_arithmetic.h"
#include "core/refinement.h"
#include "core/status_macros.h"

namespace matrixd {
namespace {

// Floating-point components with every exponent bit set are Inf or NaN. The scan ORs that test
// over blocks (branch-free, so the compiler vectorizes it) and looks for the first hit only in a
// block that has one; large operands (shared-memory or inline requests of GiBs) are split over a
// few threads, since one core reads ~10 GB/s and the request waits for the scan.
template <typename Bits>
int64_t FirstNonFiniteComponent(const std::byte* data, int64_t first, int64_t end, Bits exponent) {
  constexpr int64_t kBlock = 4096;
  for (int64_t block = first; block < end; block += kBlock) {
    const int64_t stop = std::min(end, block + kBlock);
    Bits hit = 0;
    for (int64_t i = block; i < stop; ++i) {
      Bits bits;
      std::memcpy(&bits, data + i * static_cast<int64_t>(sizeof(Bits)), sizeof(Bits));
      hit |= static_cast<Bits>((bits & exponent) == exponent);
    }
    if (hit == 0) continue;
    for (int64_t i = block; i < stop; ++i) {
      Bits bits;
      std::memcpy(&bits, data + i * static_cast<int64_t>(sizeof(Bits)), sizeof(Bits));
      if ((bits & exponent) == exponent) return i;
    }
  }
  return -1;
}

template <typename Bits>
int64_t FirstNonFiniteComponent(const std::byte* data, int64_t count, Bits exponent) {
  constexpr int64_t kPerThread = int64_t{1} << 22;  // below this one thread is quicker
  constexpr int64_t kMaxThreads = 8;
  // Small operands (every small request) never ask for the hardware threads: glibc reads them
  // from /sys on each call, a few microseconds, as much as the rest of a small request's checks.
  if (count < 2 * kPerThread) return FirstNonFiniteComponent(data, 0, count, exponent);
  static const int64_t hardware_threads = std::thread::hardware_concurrency();
  const int64_t threads =
      std::clamp<int64_t>(std::min<int64_t>(count / kPerThread, hardware_threads), 1, kMaxThreads);
  if (threads == 1) return FirstNonFiniteComponent(data, 0, count, exponent);
  std::vector<int64_t> firsts(static_cast<size_t>(threads), -1);
  {
    std::vector<std::jthread> workers;
    for (int64_t t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        firsts[t] =
            FirstNonFiniteComponent(data, count * t / threads, count * (t + 1) / threads, exponent);
      });
    }
  }
  for (const int64_t first : firsts) {
    if (first >= 0) return first;  // the chunks are in order: the first hit is the earliest
  }
  return -1;
}

int64_t FirstNonFiniteEntry(const MatrixView& m) {
  const std::byte* data = m.data;
  const int64_t elements = m.rows * m.cols;
  switch (m.dtype) {
    case DType::kFloat32:
      return FirstNonFiniteComponent<uint32_t>(data, elements, 0x7f800000u);
    case DType::kFloat64:
      return FirstNonFiniteComponent<uint64_t>(data, elements, 0x7ff0000000000000u);
    case DType::kComplex64: {
      const int64_t bad = FirstNonFiniteComponent<uint32_t>(data, 2 * elements, 0x7f800000u);
      return bad < 0 ? -1 : bad / 2;
    }
    case DType::kComplex128: {
      const int64_t bad =
          FirstNonFiniteComponent<uint64_t>(data, 2 * elements, 0x7ff0000000000000u);
      return bad < 0 ? -1 : bad / 2;
    }
    case DType::kInt64:
    case DType::kUInt32:
      return -1;
  }
  return -1;
}

absl::Status RequireSquare(const MatrixView& m, absl::string_view field) {
  if (m.rows != m.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " must be square, got ", m.rows, "x", m.cols));
  }
  return absl::OkStatus();
}

absl::Status RequireDType(const MatrixView& m, absl::string_view field, bool allowed,
                          absl::string_view wanted) {
  if (!allowed) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".dtype is ", DTypeName(m.dtype), "; want ", wanted));
  }
  return absl::OkStatus();
}

// ValidateMatrix, reading the entries only when `finite` says the host checks them.
absl::Status ValidateMatrixShape(const MatrixView& m, absl::string_view field, const Limits& limits,
                                 FiniteCheck finite) {
  if (m.rows <= 0 || m.cols <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has shape ", m.rows, "x", m.cols, "; rows and cols must be >= 1"));
  }
  if (m.rows > limits.max_elements / m.cols) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " has ", m.rows, "x", m.cols, " elements; the limit is ", limits.max_elements));
  }
  // A device view's entries were checked when it was stored (see AllFinite).
  if (m.on_device() || finite == FiniteCheck::kByBackend) return absl::OkStatus();
  if (const int64_t bad = FirstNonFiniteEntry(m); bad >= 0) {
    return NonFiniteEntryError(field, bad, m.cols);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status NonFiniteEntryError(absl::string_view field, int64_t element, int64_t cols) {
  return absl::InvalidArgumentError(absl::StrCat(field, "[", element / cols, ", ", element % cols,
                                                 "] is not finite (NaN or Inf)"));
}

absl::Status ValidateMatrix(const MatrixView& m, absl::string_view field, const Limits& limits) {
  return ValidateMatrixShape(m, field, limits, FiniteCheck::kOnHost);
}

bool AllFinite(const MatrixView& m) { return FirstNonFiniteEntry(m) < 0; }

absl::Status ValidateDeterminant(const MatrixView& a, const DeterminantOptions& options,
                                 const Limits& limits) {
  MATRIXD_RETURN_IF_ERROR(ValidateMatrix(a, "matrix", limits));
  MATRIXD_RETURN_IF_ERROR(RequireSquare(a, "matrix"));
  if (options.modulus == 1 || options.modulus >= kModulusLimit ||
      (options.modulus > 1 && !IsPrime(options.modulus))) {
    return absl::InvalidArgumentError(
        absl::StrCat("modulus ", options.modulus, " must be 0 or a prime below 2^62"));
  }
  if (options.modulus > 0) {
    return RequireDType(a, "matrix", a.dtype == DType::kInt64, "int64 when modulus > 0");
  }
  return RequireDType(a, "matrix", IsFloating(a.dtype) || a.dtype == DType::kInt64,
                      "float32, float64, complex64, complex128 or int64");
}

absl::Status CheckEstimateCondition(const FactorizeOptions& options, int64_t rows, int64_t cols) {
  if (!options.estimate_condition) return absl::OkStatus();
  if (options.batch_count > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("estimate_condition is set with batch_count = ", options.batch_count,
                     "; condition estimates are for one matrix (batch_count 0)"));
  }
  if (options.kind == FactorizationKind::kLu && rows != cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("estimate_condition needs a square matrix for LU, got ", rows, "x", cols));
  }
  return absl::OkStatus();
}

absl::Status CheckFactorizeDevices(const FactorizeOptions& options, DType dtype, int64_t rows,
                                   int64_t cols) {
  const int devices = options.devices;
  if (devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices is ", devices, "; want 1 (one device) or more"));
  }
  if (devices == 1) return absl::OkStatus();
  const std::string over =
      absl::StrCat(" with devices = ", devices, ": a factorization over several GPUs takes ");
  if (options.batch_count > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_count is ", options.batch_count, over, "one matrix (batch_count 0)"));
  }
  if (options.refine.enabled) {
    return absl::InvalidArgumentError(
        absl::StrCat("refine is set", over, "no iterative refinement; leave refine out"));
  }
  if (options.estimate_condition) {
    return absl::InvalidArgumentError(
        absl::StrCat("estimate_condition is set", over, "no condition estimate; leave it out"));
  }
  if (options.kind == FactorizationKind::kQr) {
    return absl::InvalidArgumentError(absl::StrCat("kind is QR", over, "LU or CHOLESKY"));
  }
  if (!IsFloating(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("matrix.dtype is ", DTypeName(dtype), over,
                                                   "float32, float64, complex64 or complex128"));
  }
  if (rows != cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix is ", rows, "x", cols, over, "a square matrix"));
  }
  return absl::OkStatus();
}

absl::Status ValidateFactorize(const MatrixView& a, const FactorizeOptions& options,
                               const MatrixView* rhs, const Limits& limits, FiniteCheck finite) {
  MATRIXD_RETURN_IF_ERROR(ValidateMatrixShape(a, "matrix", limits, finite));
  MATRIXD_RETURN_IF_ERROR(
      RequireDType(a, "matrix", IsFloating(a.dtype), "float32, float64, complex64 or complex128"));
  MATRIXD_RETURN_IF_ERROR(CheckRefineOptions(options, rhs != nullptr));
  const int64_t batch_count = options.batch_count;
  if (batch_count < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_count is ", batch_count, "; want 0 (one matrix) or the number of matrices"));
  }
  if (batch_count > 0 && a.rows % batch_count != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix.rows = ", a.rows, " is not a multiple of batch_count = ", batch_count,
                     "; a batch stacks batch_count matrices of one shape vertically"));
  }
  // The shape rules apply to each matrix of a batch.
  MatrixView each = a;
  absl::string_view each_name = "matrix";
  if (batch_count > 0) {
    each.rows = a.rows / batch_count;
    each_name = "each matrix of the batch";
  }
  if (options.kind == FactorizationKind::kCholesky ||
      (batch_count > 0 && options.kind == FactorizationKind::kLu)) {
    MATRIXD_RETURN_IF_ERROR(RequireSquare(each, each_name));
  }
  MATRIXD_RETURN_IF_ERROR(CheckEstimateCondition(options, each.rows, each.cols));
  MATRIXD_RETURN_IF_ERROR(CheckFactorizeDevices(options, a.dtype, a.rows, a.cols));
  if (options.kind == FactorizationKind::kCholesky && !a.on_device()) {
    MATRIXD_RETURN_IF_ERROR(RequireHermitian(a, batch_count, "matrix"));
  }
  if (rhs == nullptr) return absl::OkStatus();
  MATRIXD_RETURN_IF_ERROR(ValidateMatrix(*rhs, "rhs", limits));
  if (options.kind == FactorizationKind::kLu) {
    MATRIXD_RETURN_IF_ERROR(RequireSquare(each, each_name));
  }
  if (options.kind == FactorizationKind::kQr && each.rows < each.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat(each_name, " is ", each.rows, "x", each.cols,
                     "; a QR solve needs rows >= cols (least squares)"));
  }
  if (rhs->dtype != a.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("rhs.dtype is ", DTypeName(rhs->dtype),
                                                   "; want matrix.dtype ", DTypeName(a.dtype)));
  }
  if (batch_count > 0 && rhs->rows % batch_count != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rhs.rows = ", rhs->rows, " is not a multiple of batch_count = ", batch_count));
  }
  if (rhs->rows != a.rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("rhs has ", rhs->rows, " rows; want matrix.rows = ", a.rows));
  }
  return absl::OkStatus();
}

absl::Status ValidateMultiply(const MatrixView& a, const MatrixView& b,
                              const MultiplyOptions& options, const Limits& limits) {
  MATRIXD_RETURN_IF_ERROR(ValidateMatrix(a, "a", limits));
  MATRIXD_RETURN_IF_ERROR(ValidateMatrix(b, "b", limits));
  MATRIXD_RETURN_IF_ERROR(RequireDType(a, "a", IsFloating(a.dtype) || a.dtype == DType::kUInt32,
                                       "float32, float64, complex64, complex128 or uint32"));
  if (b.dtype != a.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("b.dtype is ", DTypeName(b.dtype), "; want a.dtype ", DTypeName(a.dtype)));
  }
  const int64_t a_rows = options.transpose_a ? a.cols : a.rows;
  const int64_t a_cols = options.transpose_a ? a.rows : a.cols;
  const int64_t b_rows = options.transpose_b ? b.cols : b.rows;
  const int64_t b_cols = options.transpose_b ? b.rows : b.cols;
  if (a_cols != b_rows) {
    return absl::InvalidArgumentError(absl::StrCat("op(a) is ", a_rows, "x", a_cols,
                                                   " and op(b) is ", b_rows, "x", b_cols,
                                                   "; inner dimensions must agree"));
  }
  if (a_rows > limits.max_elements / b_cols) {
    return absl::InvalidArgumentError(absl::StrCat("the product would have ", a_rows, "x", b_cols,
                                                   " elements; the limit is ",
                                                   limits.max_elements));
  }
  if (options.block_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_size is ", options.block_size, "; want 0 (dense) or > 0"));
  }
  if (options.verify && !IsFloating(a.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("verify is set but a.dtype is ", DTypeName(a.dtype),
                     "; Freivalds' check takes float32, float64, complex64 or complex128"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePermanent(const MatrixView& a, const PermanentOptions& /*options*/,
                               const Limits& limits) {
  MATRIXD_RETURN_IF_ERROR(ValidateMatrix(a, "matrix", limits));
  MATRIXD_RETURN_IF_ERROR(RequireSquare(a, "matrix"));
  MATRIXD_RETURN_IF_ERROR(RequireDType(a, "matrix", IsFloating(a.dtype) || a.dtype == DType::kInt64,
                                       "float32, float64, complex64, complex128 or int64"));
  if (a.rows > limits.max_permanent_n) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix is ", a.rows, "x", a.rows, "; permanents are limited to n <= ",
                     limits.max_permanent_n, " (server flag --max_permanent_n)"));
  }
  return absl::OkStatus();
}

}  // namespace matrixd
