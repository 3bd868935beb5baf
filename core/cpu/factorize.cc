#include "core/cpu/factorize.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/accuracy.h"
#include "core/condition_estimate.h"
#include "core/cpu/condition.h"
#include "core/cpu/lapack_types.h"
#include "core/cpu/refine.h"
#include "core/refinement.h"
#include "core/status_macros.h"
#include "core/validation.h"

namespace matrixd::cpu {
namespace {

// A complex multiply-add costs four real ones: flop counts of complex routines are 4x.
template <typename T>
constexpr double kFlopScale = kIsComplex<T> ? 4.0 : 1.0;

// LAPACK Working Note 41 counts, with k = min(m, n): getrf does mnk - (m+n)k^2/2 + k^3/3
// multiply-adds; geqrf (and orgqr building m x k from k reflectors) twice that.
double LuFlops(double m, double n) {
  const double k = std::min(m, n);
  return 2.0 * m * n * k - (m + n) * k * k + 2.0 * k * k * k / 3.0;
}
double HouseholderFlops(double m, double n) { return 2.0 * LuFlops(m, n); }

absl::Status LapackError(const char* routine, int64_t info) {
  return absl::InternalError(absl::StrCat(routine, " rejected its arguments (info = ", info, ")"));
}

// The elements of a matrix we own, for LAPACK to overwrite.
template <typename T>
T* Data(Matrix& m) {
  return m.As<T>().data();
}

// The matrices of one call: `count` of them, each rows x cols, stacked vertically (one matrix is
// a batch of one that the caller did not ask for as a batch).
struct Batch {
  int64_t count = 1;
  lapack_int rows = 0;
  lapack_int cols = 0;
  lapack_int rhs_cols = 0;          // 0 without a right-hand side
  bool requested = false;           // options.batch_count > 0
  bool estimate_condition = false;  // one matrix only (CheckEstimateCondition)
  int workers = 1;                  // threads to spread the matrices over

  int64_t size() const { return int64_t{rows} * cols; }
  int64_t rhs_size() const { return int64_t{rows} * rhs_cols; }
};

// How an error names matrix `index`: "matrix", or "matrix 17 of the batch".
std::string Subject(const Batch& batch, int64_t index) {
  return batch.requested ? absl::StrCat("matrix ", index, " of the batch") : "matrix";
}

// Matrices up to this many elements take threads of their own: OpenBLAS factors a float64
// matrix of fewer than 10000 elements on the calling thread (getrf's threshold), so threads over
// matrices then add parallelism instead of competing with OpenBLAS's pool.
constexpr int64_t kMaxThreadedMatrixElements = 10000;
// Matrices per range handed to a thread: enough to amortise the atomic and the progress report.
constexpr int64_t kRangeMatrices = 64;

int Workers(const Batch& batch, int threads) {
  if (!batch.requested || batch.size() > kMaxThreadedMatrixElements) return 1;
  const int64_t ranges = (batch.count + kRangeMatrices - 1) / kRangeMatrices;
  return static_cast<int>(std::clamp<int64_t>(ranges, 1, std::max(threads, 1)));
}

// Runs body(begin, end) over consecutive ranges of [0, batch.count) on batch.workers threads,
// the caller among them; an atomic counter hands the ranges out in order. Checks for
// cancellation before each range and reports the fraction done after each. Returns false when
// cancelled before every range ran.
template <typename Body>
bool ForEachMatrix(const Batch& batch, JobControl* control, const Body& body) {
  const int64_t ranges = (batch.count + kRangeMatrices - 1) / kRangeMatrices;
  std::atomic<int64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex progress_mutex;
  int64_t done = 0;  // ranges; guarded by progress_mutex so that progress never goes back
  auto worker = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (IsCancelled(control)) {
        stop.store(true, std::memory_order_relaxed);
        break;
      }
      const int64_t range = next.fetch_add(1, std::memory_order_relaxed);
      if (range >= ranges) break;
      const int64_t begin = range * kRangeMatrices;
      body(begin, std::min(begin + kRangeMatrices, batch.count));
      std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      ReportProgress(control, static_cast<double>(done) / static_cast<double>(ranges));
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(batch.workers - 1);
  for (int t = 1; t < batch.workers; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& thread : pool) thread.join();
  return done == ranges;
}

absl::Status Cancelled() { return absl::CancelledError("factorization cancelled"); }

// The lowest index with a non-zero entry (a LAPACK info or a failure flag), or -1.
template <typename I>
int64_t FirstNonZero(const std::vector<I>& values) {
  const auto it = std::find_if(values.begin(), values.end(), [](I v) { return v != 0; });
  return it == values.end() ? -1 : it - values.begin();
}

// The lowest index with a negative LAPACK info (an argument error), as a status.
absl::Status CheckArguments(const std::vector<lapack_int>& infos, const char* routine) {
  for (const lapack_int info : infos) {
    if (info < 0) return LapackError(routine, info);
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<FactorizeResult> Lu(const MatrixView& a, const MatrixView* rhs, const Batch& batch,
                                   const ResultDestinations& out, JobControl* control) {
  const lapack_int m = batch.rows;
  const lapack_int n = batch.cols;
  const lapack_int nrhs = batch.rhs_cols;
  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  result.lu = out.CopyOf("lu", a);
  result.permutation.resize(static_cast<size_t>(batch.count * m));
  std::optional<Matrix> x;
  if (rhs != nullptr) x = out.CopyOf("solution", *rhs);
  std::vector<lapack_int> factor_infos(batch.count, 0);
  std::vector<lapack_int> solve_infos(batch.count, 0);
  T* lu = Data<T>(result.lu);
  T* solution = x.has_value() ? Data<T>(*x) : nullptr;

  const bool finished = ForEachMatrix(batch, control, [&](int64_t begin, int64_t end) {
    std::vector<lapack_int> ipiv(std::min(m, n));
    for (int64_t i = begin; i < end; ++i) {
      T* lu_i = lu + i * batch.size();
      const lapack_int info = Lapack<T>::getrf(LAPACK_ROW_MAJOR, m, n, lu_i, n, ipiv.data());
      factor_infos[i] = info;
      // ipiv holds 1-based row swaps applied in order; replaying them on the identity gives, for
      // each row of L U, the row of A it came from.
      int64_t* permutation = result.permutation.data() + i * m;
      std::iota(permutation, permutation + m, int64_t{0});
      for (size_t r = 0; r < ipiv.size(); ++r) std::swap(permutation[r], permutation[ipiv[r] - 1]);
      if (solution != nullptr && info == 0) {
        solve_infos[i] = Lapack<T>::getrs(LAPACK_ROW_MAJOR, 'N', n, nrhs, lu_i, n, ipiv.data(),
                                          solution + i * batch.rhs_size(), nrhs);
      }
    }
  });
  if (!finished) return Cancelled();
  MATRIXD_RETURN_IF_ERROR(CheckArguments(factor_infos, "getrf"));
  MATRIXD_RETURN_IF_ERROR(CheckArguments(solve_infos, "getrs"));

  if (batch.requested) result.singular_columns.assign(batch.count, -1);
  for (int64_t i = 0; i < batch.count; ++i) {
    if (factor_infos[i] <= 0) continue;
    if (batch.requested) result.singular_columns[i] = factor_infos[i] - 1;
    if (!result.singular_column.has_value()) result.singular_column = factor_infos[i] - 1;
  }
  result.stats.flops = kFlopScale<T> * LuFlops(m, n) * batch.count;
  result.stats.bytes_moved = 2 * a.byte_size();
  if (rhs == nullptr) return result;

  if (const int64_t i = FirstNonZero(factor_infos); i >= 0) {
    const int64_t k = factor_infos[i] - 1;
    return absl::FailedPreconditionError(absl::StrCat(Subject(batch, i), " is singular: U[", k, ",",
                                                      k, "] = 0 at column ", k, "; cannot solve"));
  }
  result.stats.flops += kFlopScale<T> * 2.0 * n * n * nrhs * batch.count;
  result.stats.bytes_moved += 2 * rhs->byte_size();
  result.solution = std::move(x);
  return result;
}

template <typename T>
absl::StatusOr<FactorizeResult> Cholesky(const MatrixView& a, const MatrixView* rhs,
                                         const Batch& batch, const ResultDestinations& out,
                                         JobControl* control) {
  const lapack_int n = batch.rows;
  const lapack_int nrhs = batch.rhs_cols;
  FactorizeResult result;
  result.kind = FactorizationKind::kCholesky;
  result.l = out.CopyOf("l", a);
  std::optional<Matrix> x;
  if (rhs != nullptr) x = out.CopyOf("solution", *rhs);
  std::vector<lapack_int> factor_infos(batch.count, 0);
  std::vector<lapack_int> solve_infos(batch.count, 0);
  T* l = Data<T>(result.l);
  T* solution = x.has_value() ? Data<T>(*x) : nullptr;

  const bool finished = ForEachMatrix(batch, control, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T* l_i = l + i * batch.size();
      const lapack_int info = Lapack<T>::potrf(LAPACK_ROW_MAJOR, 'L', n, l_i, n);
      factor_infos[i] = info;
      // potrf leaves the upper triangle as it found it (a copy of A).
      for (int64_t r = 0; r < n; ++r) std::fill(l_i + r * n + r + 1, l_i + (r + 1) * n, T(0));
      if (solution != nullptr && info == 0) {
        solve_infos[i] = Lapack<T>::potrs(LAPACK_ROW_MAJOR, 'L', n, nrhs, l_i, n,
                                          solution + i * batch.rhs_size(), nrhs);
      }
    }
  });
  if (!finished) return Cancelled();
  MATRIXD_RETURN_IF_ERROR(CheckArguments(factor_infos, "potrf"));
  MATRIXD_RETURN_IF_ERROR(CheckArguments(solve_infos, "potrs"));
  if (const int64_t i = FirstNonZero(factor_infos); i >= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(Subject(batch, i), " is not positive definite: the leading minor of order ",
                     factor_infos[i], " is not positive"));
  }
  result.stats.flops = kFlopScale<T> * n * static_cast<double>(n) * n / 3.0 * batch.count;
  result.stats.bytes_moved = 2 * a.byte_size();
  if (rhs == nullptr) return result;

  result.stats.flops += kFlopScale<T> * 2.0 * n * n * nrhs * batch.count;
  result.stats.bytes_moved += 2 * rhs->byte_size();
  result.solution = std::move(x);
  return result;
}

template <typename T>
absl::StatusOr<FactorizeResult> Qr(const MatrixView& a, const MatrixView* rhs, const Batch& batch,
                                   const ResultDestinations& out, JobControl* control) {
  const lapack_int m = batch.rows;
  const lapack_int n = batch.cols;
  const lapack_int k = std::min(m, n);
  const lapack_int nrhs = batch.rhs_cols;
  FactorizeResult result;
  result.kind = FactorizationKind::kQr;
  // Zero-initialised, so R's lower part needs no clearing.
  result.r = out.Make("r", batch.count * k, n, a.dtype);
  result.q = out.Make("q", batch.count * m, k, a.dtype);
  if (rhs != nullptr) result.solution = out.Make("solution", batch.count * n, nrhs, a.dtype);
  std::vector<lapack_int> factor_infos(batch.count, 0);
  std::vector<lapack_int> generate_infos(batch.count, 0);
  // Per matrix: the first j with R[j, j] = 0, plus one (a solve needs full column rank).
  std::vector<int64_t> rank_deficient(batch.count, 0);
  const T* input = a.As<T>().data();
  T* q = Data<T>(result.q);
  T* r = Data<T>(result.r);

  const bool finished = ForEachMatrix(batch, control, [&](int64_t begin, int64_t end) {
    std::vector<T> work(static_cast<size_t>(batch.size()));
    std::vector<T> tau(k);
    for (int64_t i = begin; i < end; ++i) {
      T* w = work.data();
      std::copy(input + i * batch.size(), input + (i + 1) * batch.size(), w);
      factor_infos[i] = Lapack<T>::geqrf(LAPACK_ROW_MAJOR, m, n, w, n, tau.data());
      if (factor_infos[i] < 0) continue;
      T* r_i = r + i * k * n;
      for (int64_t row = 0; row < k; ++row) {
        std::copy(w + row * n + row, w + (row + 1) * n, r_i + row * n + row);
      }
      // The reflectors sit in the first k columns of `work`; orgqr reads them there through the
      // leading dimension n, so a wide matrix needs no repacking.
      generate_infos[i] = Lapack<T>::orgqr(LAPACK_ROW_MAJOR, m, k, k, w, n, tau.data());
      if (generate_infos[i] < 0) continue;
      T* q_i = q + i * m * k;
      for (int64_t row = 0; row < m; ++row) std::copy(w + row * n, w + row * n + k, q_i + row * k);
      if (rhs == nullptr) continue;

      for (int64_t j = 0; j < n; ++j) {
        if (r_i[j * n + j] == T(0)) {
          rank_deficient[i] = j + 1;
          break;
        }
      }
      if (rank_deficient[i] != 0) continue;
      // Least squares (m >= n, so k = n): x = R^-1 Q^H b. The explicit Q is orthonormal to
      // working precision, so Q^H b through gemm is as accurate as applying the reflectors
      // again.
      T* x_i = Data<T>(*result.solution) + i * int64_t{n} * nrhs;
      Gemm<T>(CblasConjTrans, CblasNoTrans, n, nrhs, m, T(1), q_i, k,
              rhs->As<T>().data() + i * batch.rhs_size(), nrhs, T(0), x_i, nrhs);
      SolveUpperTriangular<T>(n, nrhs, r_i, n, x_i, nrhs);
    }
  });
  if (!finished) return Cancelled();
  MATRIXD_RETURN_IF_ERROR(CheckArguments(factor_infos, "geqrf"));
  MATRIXD_RETURN_IF_ERROR(CheckArguments(generate_infos, "orgqr"));
  if (const int64_t i = FirstNonZero(rank_deficient); i >= 0) {
    const int64_t j = rank_deficient[i] - 1;
    return absl::FailedPreconditionError(
        absl::StrCat(Subject(batch, i), " does not have full column rank: R[", j, ",", j,
                     "] = 0 at column ", j, "; cannot solve least squares"));
  }
  result.stats.flops =
      kFlopScale<T> * (HouseholderFlops(m, n) + HouseholderFlops(m, k)) * batch.count;
  result.stats.bytes_moved = a.byte_size() + result.q.byte_size() + result.r.byte_size();
  if (rhs == nullptr) return result;

  result.stats.flops +=
      kFlopScale<T> * (2.0 * m * n * nrhs + static_cast<double>(n) * n * nrhs) * batch.count;
  result.stats.bytes_moved += rhs->byte_size() + result.solution->byte_size();
  return result;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// FactorizeResult::accuracy of one factorized matrix (a is the input, which the factorization
// did not touch): the block estimator on the factors (core/cpu/condition.h) for LU (1-norm of A,
// ||A||_1 by ?lange), Cholesky, and R's leading k x k square (QR, ||R11||_1 of its upper
// triangle). Records the factorization and the estimate as two kernels (the backend records the
// whole operation as one only when no kernel is listed).
template <typename T>
absl::Status EstimateCondition(const MatrixView& a, double factor_seconds,
                               FactorizeResult& result) {
  const auto start = std::chrono::steady_clock::now();
  const auto m = static_cast<lapack_int>(a.rows);
  const auto n = static_cast<lapack_int>(a.cols);
  const lapack_int k = std::min(m, n);
  absl::StatusOr<double> rcond = 0.0;
  int solves = 0;
  const char* factor_kernel = "getrf";
  switch (result.kind) {
    case FactorizationKind::kLu: {
      const double norm = Lapack<T>::lange(LAPACK_ROW_MAJOR, '1', n, n, a.As<T>().data(), n);
      // An exactly zero pivot: singular, rcond 0 (a solve would divide by it).
      if (!result.singular_column.has_value()) {
        rcond = ReciprocalCondition<T>(Factors::kLu, n, Data<T>(result.lu), n, Storage::kRowMajor,
                                       norm, &solves);
      }
      break;
    }
    case FactorizationKind::kCholesky: {
      factor_kernel = "potrf";
      const double norm = Lapack<T>::lange(LAPACK_ROW_MAJOR, '1', n, n, a.As<T>().data(), n);
      rcond = ReciprocalCondition<T>(Factors::kCholesky, n, Data<T>(result.l), n,
                                     Storage::kRowMajor, norm, &solves);
      break;
    }
    case FactorizationKind::kQr: {
      factor_kernel = "geqrf";
      const T* r = Data<T>(result.r);
      rcond = ReciprocalCondition<T>(Factors::kUpper, k, r, n, Storage::kRowMajor,
                                     UpperTriangleOneNorm<T>(k, r, n, Storage::kRowMajor), &solves);
      break;
    }
  }
  if (!rcond.ok()) return rcond.status();
  result.stats.kernels.push_back({.kernel = factor_kernel,
                                  .seconds = factor_seconds,
                                  .bytes = result.stats.bytes_moved,
                                  .flops = result.stats.flops});
  using Real = decltype(std::abs(T()));
  result.accuracy = FactorizationAccuracy(*rcond, k, kRoundoffOf<Real>);
  // ||A||_1 reads A once; each block solve reads the factors once (both triangles of LU and
  // Cholesky, R's one: `triangles` k^2 elements) and does k^2 / 2 multiply-adds per triangle and
  // right-hand side.
  const double kd = k;
  const double triangles = result.kind == FactorizationKind::kQr ? 0.5 : 1.0;
  const auto bytes = static_cast<uint64_t>((1.0 + solves * triangles) * kd * kd * sizeof(T));
  const double flops = kFlopScale<T> * 2.0 * kEstimateColumns * solves * triangles * kd * kd;
  result.stats.flops += flops;
  result.stats.bytes_moved += bytes;
  result.stats.kernels.push_back({.kernel = "condition_estimate",
                                  .seconds = SecondsSince(start),
                                  .bytes = bytes,
                                  .flops = flops});
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<FactorizeResult> FactorizeTyped(const MatrixView& a, FactorizationKind kind,
                                               const MatrixView* rhs, const Batch& batch,
                                               const ResultDestinations& out, JobControl* control) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<FactorizeResult> result = [&]() -> absl::StatusOr<FactorizeResult> {
    switch (kind) {
      case FactorizationKind::kLu:
        return Lu<T>(a, rhs, batch, out, control);
      case FactorizationKind::kCholesky:
        return Cholesky<T>(a, rhs, batch, out, control);
      case FactorizationKind::kQr:
        return Qr<T>(a, rhs, batch, out, control);
    }
    return absl::InvalidArgumentError("unknown factorization kind");
  }();
  if (result.ok() && batch.estimate_condition) {
    MATRIXD_RETURN_IF_ERROR(EstimateCondition<T>(a, SecondsSince(start), *result));
  }
  return result;
}

// The checks that keep LAPACK inside its buffers; everything else is the caller's validation.
// Fills the batch's shape.
absl::Status CheckShapes(const MatrixView& a, const FactorizeOptions& options,
                         const MatrixView* rhs, Batch& batch) {
  constexpr int64_t kMaxDim = std::numeric_limits<lapack_int>::max();
  if (options.batch_count < 0 || (options.batch_count > 0 && a.rows % options.batch_count != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix.rows = ", a.rows, " is not a multiple of batch_count = ", options.batch_count));
  }
  batch.requested = options.batch_count > 0;
  batch.count = batch.requested ? options.batch_count : 1;
  const int64_t rows = a.rows / batch.count;
  if (rows < 1 || a.cols < 1 || rows > kMaxDim || a.cols > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has shape ", rows, "x", a.cols, "; LAPACK cannot take it"));
  }
  batch.rows = static_cast<lapack_int>(rows);
  batch.cols = static_cast<lapack_int>(a.cols);
  MATRIXD_RETURN_IF_ERROR(CheckEstimateCondition(options, rows, a.cols));
  batch.estimate_condition = options.estimate_condition;
  const bool square = batch.rows == batch.cols;
  if (options.kind == FactorizationKind::kCholesky && !square) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix must be square for CHOLESKY, got ", rows, "x", a.cols));
  }
  // Both backends take the same inputs, and cuBLAS's batched LU takes square matrices only.
  if (options.kind == FactorizationKind::kLu && batch.requested && !square) {
    return absl::InvalidArgumentError(
        absl::StrCat("each matrix of the batch must be square for LU, got ", rows, "x", a.cols));
  }
  if (rhs == nullptr) return absl::OkStatus();
  if (rhs->dtype != a.dtype || rhs->rows != a.rows || rhs->cols < 1 || rhs->cols > kMaxDim) {
    return absl::InvalidArgumentError(absl::StrCat("rhs is ", rhs->rows, "x", rhs->cols, " ",
                                                   DTypeName(rhs->dtype), "; want ", a.rows,
                                                   " rows of ", DTypeName(a.dtype)));
  }
  batch.rhs_cols = static_cast<lapack_int>(rhs->cols);
  if (options.kind == FactorizationKind::kLu && !square) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix must be square for an LU solve, got ", rows, "x", a.cols));
  }
  if (options.kind == FactorizationKind::kQr && batch.rows < batch.cols) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix is ", rows, "x", a.cols, "; a QR solve needs rows >= cols (least squares)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                          const MatrixView* rhs, int threads, JobControl* control) {
  if (IsCancelled(control)) return Cancelled();
  if (!IsFloating(a.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix.dtype is ", DTypeName(a.dtype),
                     "; want float32, float64, complex64 or complex128"));
  }
  MATRIXD_RETURN_IF_ERROR(CheckRefineOptions(options, rhs != nullptr));
  if (options.refine.enabled) return RefinedLuSolve(a, *rhs, options.refine, threads);
  Batch batch;
  MATRIXD_RETURN_IF_ERROR(CheckShapes(a, options, rhs, batch));
  batch.workers = Workers(batch, threads);
  switch (a.dtype) {
    case DType::kFloat32:
      return FactorizeTyped<float>(a, options.kind, rhs, batch, options.destinations, control);
    case DType::kFloat64:
      return FactorizeTyped<double>(a, options.kind, rhs, batch, options.destinations, control);
    case DType::kComplex64:
      return FactorizeTyped<std::complex<float>>(a, options.kind, rhs, batch, options.destinations,
                                                 control);
    case DType::kComplex128:
      return FactorizeTyped<std::complex<double>>(a, options.kind, rhs, batch, options.destinations,
                                                  control);
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("matrix.dtype ", DTypeName(a.dtype), " cannot be factorized"));
}

}  // namespace matrixd::cpu
