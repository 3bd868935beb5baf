#include "core/cuda/modular_lu.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/balanced_residue.h"
#include "core/cuda/check_in_pacer.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/elimination.h"
#include "core/cuda/modular_lu_kernels.h"
#include "core/cuda/scoped_math_mode.h"
#include "core/modular_arithmetic.h"
#include "core/status_macros.h"

namespace matrixd::cuda {
namespace {

// Columns per panel: the inner dimension of the trailing DGEMMs. Two pieces of 16 bits keep a
// sum of 128 products of a residue below 2^31 and a piece below 2^53; wider panels would take a
// third piece, narrower ones more passes of the reduction over the trailing matrix.
constexpr int64_t kPanelWidth = kMaxSolveDepth;
// A panel splits in halves down to leaves this wide, factored in one thread block each.
constexpr int64_t kLeafWidth = kMaxLeafWidth;
// Panels between host check-ins (cancellation, progress).
constexpr int64_t kPanelsPerCheckIn = 2;

enum Phase { kResidues, kPanel, kGemm, kReduce, kPhaseCount, kEnd = kPhaseCount };
constexpr std::array<const char*, kPhaseCount> kPhaseNames = {"modp_residues", "modp_panel",
                                                              "modp_gemm", "modp_reduce"};

// Device time per phase, from timing events recorded on the stream at each change of phase. Owns
// its events.
class PhaseClock {
 public:
  PhaseClock() = default;
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;
  ~PhaseClock() {
    for (cudaEvent_t event : events_) MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(event));
  }

  // Work queued from here on belongs to `phase` (kEnd closes the last one).
  absl::Status Enter(Phase phase, cudaStream_t stream) {
    if (!phases_.empty() && phases_.back() == phase) return absl::OkStatus();
    cudaEvent_t event = nullptr;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreate(&event));
    events_.push_back(event);
    phases_.push_back(phase);
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream));
    return absl::OkStatus();
  }

  // Waits for the kEnd event; seconds per phase.
  absl::StatusOr<std::array<double, kPhaseCount>> Seconds() {
    std::array<double, kPhaseCount> seconds = {};
    if (events_.empty()) return seconds;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(events_.back()));
    for (size_t i = 0; i + 1 < events_.size(); ++i) {
      float ms = 0.0f;
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]));
      seconds[phases_[i]] += 1e-3 * ms;
    }
    return seconds;
  }

 private:
  std::vector<cudaEvent_t> events_;
  std::vector<Phase> phases_;
};

// Work per phase, for stats.kernels.
struct PhaseWork {
  std::array<double, kPhaseCount> flops = {};
  std::array<uint64_t, kPhaseCount> bytes = {};
};

// The blocked LU of one n x n matrix of balanced residues held at `a` on the device.
class BalancedLu {
 public:
  BalancedLu(DeviceContext& context, const BalancedModulus& modulus, int64_t n, double* a,
             PhaseClock& clock, PhaseWork& work)
      : context_(context), modulus_(modulus), n_(n), a_(a), clock_(clock), work_(work) {}

  // Allocates the scratch buffers and resets the device state.
  absl::Status Prepare() {
    MATRIXD_ASSIGN_OR_RETURN(lu_, context_.Allocate(kLeafWidth * kLeafWidth * sizeof(double)));
    MATRIXD_ASSIGN_OR_RETURN(inverse_diagonal_, context_.Allocate(kLeafWidth * sizeof(double)));
    MATRIXD_ASSIGN_OR_RETURN(ipiv_, context_.Allocate(kLeafWidth * sizeof(int)));
    MATRIXD_ASSIGN_OR_RETURN(state_, context_.Allocate(sizeof(ModularLuState)));
    if (ProductPieces(modulus_.modulus(), kPanelWidth) > 1 && n_ > 1) {
      MATRIXD_ASSIGN_OR_RETURN(
          pieces_, context_.Allocate(static_cast<size_t>(kPanelWidth * 2 * n_) * sizeof(double)));
      // The two-piece products of a trailing update go through this buffer in row blocks; with
      // the pieces it is as large as the matrix (the memory estimate's 2 n^2 words) and takes the
      // first updates in two blocks.
      product_capacity_ = std::max(n_ * n_ - kPanelWidth * 2 * n_, 2 * n_);
      MATRIXD_ASSIGN_OR_RETURN(
          product_, context_.Allocate(static_cast<size_t>(product_capacity_) * sizeof(double)));
    }
    return LaunchResetState(context_.stream(), state());
  }

  // Queues the whole factorization, checking in with `control` every few panels.
  absl::Status Run(JobControl* control) {
    MATRIXD_ASSIGN_OR_RETURN(CheckInPacer pacer, CheckInPacer::Create());
    // Native FP64: the products must be exact integer sums, whatever mode the handle was left in.
    MATRIXD_ASSIGN_OR_RETURN(ScopedMathMode math,
                             ScopedMathMode::Set(context_.cublas(), CUBLAS_DEFAULT_MATH));
    int64_t panels = 0;
    for (int64_t k = 0; k < n_; k += kPanelWidth) {
      const int64_t width = std::min(kPanelWidth, n_ - k);
      MATRIXD_RETURN_IF_ERROR(FactorColumns(k, width));
      const int64_t rest = n_ - k - width;
      MATRIXD_RETURN_IF_ERROR(Update(k, width, k + width, rest, /*trailing=*/true));
      if (rest > 0 && ++panels % kPanelsPerCheckIn == 0) {
        MATRIXD_RETURN_IF_ERROR(
            pacer.CheckIn(context_.stream(), control, EliminationProgress(rest, n_)));
      }
    }
    return absl::OkStatus();
  }

  // det mod p in [0, p) once the queued work is done.
  absl::StatusOr<uint64_t> Determinant() {
    ModularLuState result{};
    MATRIXD_RETURN_IF_ERROR(context_.Download(state_, &result, sizeof(result)));
    return result.status != 0 ? uint64_t{0} : modulus_.ToCanonical(result.determinant);
  }

 private:
  ModularLuState* state() const { return state_.as<ModularLuState>(); }
  double* at(int64_t row, int64_t col) const { return a_ + row * n_ + col; }

  // Columns [c, c + w) of rows [c, n), all columns left of c done: halves down to leaves.
  absl::Status FactorColumns(int64_t c, int64_t w) {
    if (w <= kLeafWidth) return FactorLeaf(c, static_cast<int>(w));
    const int64_t half = w / 2;
    MATRIXD_RETURN_IF_ERROR(FactorColumns(c, half));
    MATRIXD_RETURN_IF_ERROR(Update(c, half, c + half, w - half, /*trailing=*/false));
    return FactorColumns(c + half, w - half);
  }

  absl::Status FactorLeaf(int64_t c, int w) {
    const cudaStream_t stream = context_.stream();
    MATRIXD_RETURN_IF_ERROR(clock_.Enter(kPanel, stream));
    MATRIXD_RETURN_IF_ERROR(LaunchFactorLeaf(stream, modulus_, a_, n_, c, w, lu_.as<double>(),
                                             inverse_diagonal_.as<double>(), ipiv_.as<int>(),
                                             state()));
    MATRIXD_RETURN_IF_ERROR(
        LaunchApplyLeafSwaps(stream, a_, n_, c, w, lu_.as<double>(), ipiv_.as<int>(), state()));
    MATRIXD_RETURN_IF_ERROR(LaunchSolveUpperRight(stream, modulus_, a_, n_, c, w,
                                                  inverse_diagonal_.as<double>(), state()));
    const double rows = static_cast<double>(n_ - c - w);
    const double leaf = static_cast<double>(w);
    // Two products per entry and step in the leaf; w(w-1)/2 per solved row.
    work_.flops[kPanel] += 4.0 * leaf * leaf * leaf / 3.0 + rows * leaf * (leaf - 1.0);
    // The leaf's rows read (and L21 read and written) and its factors written back.
    work_.bytes[kPanel] += static_cast<uint64_t>((3.0 * leaf * leaf + 2.0 * rows * leaf) * 8.0);
    return absl::OkStatus();
  }

  // With columns [c, c + h) factored: rows [c, c + h) of columns [j, j + cols) become U12 and
  // the rows below take A22 -= L21 U12. `trailing`: the update after a whole panel (timed as the
  // gemm and reduce phases; inside a panel it counts as the panel's).
  absl::Status Update(int64_t c, int64_t h, int64_t j, int64_t cols, bool trailing) {
    if (cols <= 0) return absl::OkStatus();
    const cudaStream_t stream = context_.stream();
    MATRIXD_RETURN_IF_ERROR(clock_.Enter(kPanel, stream));
    MATRIXD_RETURN_IF_ERROR(LaunchSolveLowerUnitLeft(stream, modulus_, a_, n_, c,
                                                     static_cast<int>(h), j, cols, state()));
    const double depth = static_cast<double>(h);
    work_.flops[kPanel] += static_cast<double>(cols) * depth * (depth - 1.0);
    work_.bytes[kPanel] += static_cast<uint64_t>(2.0 * depth * static_cast<double>(cols) * 8.0);
    const int64_t rows = n_ - c - h;
    if (rows <= 0) return absl::OkStatus();
    return SubtractProduct(at(c + h, c), at(c, j), at(c + h, j), rows, cols, h,
                           trailing ? kGemm : kPanel, trailing ? kReduce : kPanel);
  }

  // C -= A B mod p for A (rows x depth), B (depth x cols), C (rows x cols), all of stride n.
  // cuBLAS is column-major: a row-major X is its transpose there, so C^T -= B^T A^T.
  absl::Status SubtractProduct(const double* a, const double* b, double* c, int64_t rows,
                               int64_t cols, int64_t depth, Phase gemm, Phase reduce) {
    const cudaStream_t stream = context_.stream();
    const cublasHandle_t cublas = context_.cublas();
    const int ld = static_cast<int>(n_);
    const double r = static_cast<double>(rows);
    const double k = static_cast<double>(depth);
    const double m = static_cast<double>(cols);
    MATRIXD_RETURN_IF_ERROR(clock_.Enter(gemm, stream));
    if (ProductPieces(modulus_.modulus(), depth) == 1) {
      const double minus_one = -1.0;
      const double one = 1.0;
      MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemm(
          cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(cols), static_cast<int>(rows),
          static_cast<int>(depth), &minus_one, b, ld, a, ld, &one, c, ld));
      MATRIXD_RETURN_IF_ERROR(clock_.Enter(reduce, stream));
      MATRIXD_RETURN_IF_ERROR(LaunchReduceProduct(stream, modulus_, c, n_, rows, cols,
                                                  /*product=*/nullptr, state()));
      work_.flops[gemm] += 2.0 * r * m * k;
      work_.bytes[gemm] += static_cast<uint64_t>((r * k + k * m + 2.0 * r * m) * 8.0);
      work_.bytes[reduce] += static_cast<uint64_t>(2.0 * r * m * 8.0);
      return absl::OkStatus();
    }
    double* pieces = pieces_.as<double>();
    double* product = product_.as<double>();
    MATRIXD_RETURN_IF_ERROR(
        LaunchSplitPieces(stream, b, n_, static_cast<int>(depth), cols, pieces, state()));
    work_.bytes[gemm] += static_cast<uint64_t>(3.0 * k * m * 8.0);
    const int64_t block_rows = std::max<int64_t>(1, product_capacity_ / (2 * cols));
    for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
      const int64_t block = std::min(block_rows, rows - r0);
      const double one = 1.0;
      const double zero = 0.0;
      MATRIXD_RETURN_IF_ERROR(clock_.Enter(gemm, stream));
      MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemm(
          cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(2 * cols), static_cast<int>(block),
          static_cast<int>(depth), &one, pieces, static_cast<int>(2 * cols), a + r0 * n_, ld, &zero,
          product, static_cast<int>(2 * cols)));
      MATRIXD_RETURN_IF_ERROR(clock_.Enter(reduce, stream));
      MATRIXD_RETURN_IF_ERROR(
          LaunchReduceProduct(stream, modulus_, c + r0 * n_, n_, block, cols, product, state()));
    }
    work_.flops[gemm] += 4.0 * r * m * k;
    work_.bytes[gemm] += static_cast<uint64_t>((r * k + 2.0 * k * m + 2.0 * r * m) * 8.0);
    work_.bytes[reduce] += static_cast<uint64_t>(4.0 * r * m * 8.0);
    return absl::OkStatus();
  }

  DeviceContext& context_;
  BalancedModulus modulus_;
  int64_t n_;
  double* a_;
  PhaseClock& clock_;
  PhaseWork& work_;
  DeviceBuffer lu_;
  DeviceBuffer inverse_diagonal_;
  DeviceBuffer ipiv_;
  DeviceBuffer state_;
  DeviceBuffer pieces_;
  DeviceBuffer product_;
  int64_t product_capacity_ = 0;
};

// det mod p for p < 2^32 (the header's first path).
absl::StatusOr<uint64_t> BalancedLuDeterminant(const MatrixView& a, uint64_t p,
                                               DeviceContext& context, JobControl* control,
                                               ComputeStats* stats) {
  const int64_t n = a.rows;
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(int64_t);
  const BalancedModulus modulus = BalancedModulus::Of(p);
  PhaseClock clock;
  PhaseWork work;
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer matrix, context.Allocate(bytes));
  MATRIXD_RETURN_IF_ERROR(clock.Enter(kResidues, context.stream()));
  MATRIXD_RETURN_IF_ERROR(context.Upload(a.As<int64_t>().data(), matrix, bytes));
  MATRIXD_RETURN_IF_ERROR(
      LaunchBalancedResidues(context.stream(), modulus, matrix.as<int64_t>(), n * n));
  work.bytes[kResidues] += 3 * bytes;  // uploaded, read, written

  BalancedLu lu(context, modulus, n, matrix.as<double>(), clock, work);
  MATRIXD_RETURN_IF_ERROR(lu.Prepare());
  MATRIXD_RETURN_IF_ERROR(lu.Run(control));
  MATRIXD_RETURN_IF_ERROR(clock.Enter(kEnd, context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(uint64_t det, lu.Determinant());
  MATRIXD_ASSIGN_OR_RETURN(auto seconds, clock.Seconds());
  for (int phase = 0; phase < kPhaseCount; ++phase) {
    stats->flops += work.flops[phase];
    stats->bytes_moved += work.bytes[phase];
    stats->kernels.push_back(
        {kPhaseNames[phase], seconds[phase], work.bytes[phase], work.flops[phase]});
  }
  return det;
}

}  // namespace

absl::StatusOr<DeterminantResult> ModularLuDeterminant(const MatrixView& a, uint64_t p,
                                                       DeviceContext& context,
                                                       JobControl* control) {
  MATRIXD_RETURN_IF_ERROR(ValidateModularDeterminantInput(a, p));
  if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
  DeterminantResult result;
  result.method_used = DeterminantMethod::kLu;
  if (p < kBalancedResidueLimit) {
    MATRIXD_ASSIGN_OR_RETURN(result.residue,
                             BalancedLuDeterminant(a, p, context, control, &result.stats));
  } else {
    EliminationWork work;
    MATRIXD_ASSIGN_OR_RETURN(
        result.residue,
        ModularDeterminantOnDevice(context, a.As<int64_t>().data(), a.rows, p,
                                   ResidueArithmetic::kUint64, Schedule::kBlocked, control, &work));
    result.stats.flops += work.flops;
    result.stats.bytes_moved += work.bytes_moved;
  }
  ReportProgress(control, 1.0);
  return result;
}

absl::Status ValidateModularDeterminantInput(const MatrixView& a, uint64_t p) {
  if (a.dtype != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix.dtype is ", DTypeName(a.dtype), "; want int64 when modulus > 0"));
  }
  if (a.rows != a.cols || a.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has shape ", a.rows, "x", a.cols, "; want square and non-empty"));
  }
  if (p < 2 || p >= kModulusLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("modulus ", p, " must be 0 or a prime below 2^62"));
  }
  return absl::OkStatus();
}

}  // namespace matrixd::cuda
