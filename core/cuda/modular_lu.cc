#include "core/cuda/modular_lu.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/balanced_residue.h"
#include "core/cuda/check_in_pacer.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/cuda_stream.h"
#include "core/cuda/elimination.h"
#include "core/cuda/modular_lu_kernels.h"
#include "core/cuda/pinned_staging.h"
#include "core/cuda/scoped_math_mode.h"
#include "core/cuda/side_lane.h"
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
static_assert(kPanelWidth == 2 * kLeafWidth && kLeafInverseSlots == 4,
              "two leaves a panel, two panels' leaves kept");
// Panels between host check-ins (cancellation, progress).
constexpr int64_t kPanelsPerCheckIn = 2;

// kFactor: the device time from the factorization's start to its end on the context's stream, both
// lanes together (the other phases overlap under look-ahead). kWait: a lane waiting for the other.
enum Phase { kResidues, kPanel, kGemm, kReduce, kFactor, kPhaseCount, kWait = kPhaseCount, kEnd };
constexpr std::array<const char*, kPhaseCount> kPhaseNames = {
    "modp_residues", "modp_panel", "modp_gemm", "modp_reduce", "modp_factor"};

std::atomic<bool> look_ahead_setting{true};

// Device time per phase on each stream, from timing events recorded at each change of phase (a
// phase's time on one lane includes its kernels' slowdown by what runs on the other). Owns its
// events.
class PhaseClock {
 public:
  PhaseClock() = default;
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;
  ~PhaseClock() {
    for (const Track& track : tracks_) {
      for (cudaEvent_t event : track.events) MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(event));
    }
  }

  // Work queued on `stream` from here on belongs to `phase` (kEnd closes the stream's last one).
  absl::Status Enter(Phase phase, cudaStream_t stream) {
    auto track = std::find_if(tracks_.begin(), tracks_.end(),
                              [&](const Track& t) { return t.stream == stream; });
    if (track == tracks_.end())
      track = tracks_.insert(tracks_.end(), Track{.stream = stream, .events = {}, .phases = {}});
    if (!track->phases.empty() && track->phases.back() == phase) return absl::OkStatus();
    cudaEvent_t event = nullptr;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreate(&event));
    track->events.push_back(event);
    track->phases.push_back(phase);
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream));
    return absl::OkStatus();
  }

  // Marks the start and the end of kFactor on the context's stream.
  absl::Status MarkFactor(cudaStream_t stream) {
    cudaEvent_t event = nullptr;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreate(&event));
    factor_.push_back(event);
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream));
    return absl::OkStatus();
  }

  // Waits for every stream's last event; seconds per phase.
  absl::StatusOr<std::array<double, kPhaseCount>> Seconds() {
    std::array<double, kPhaseCount> seconds = {};
    for (const Track& track : tracks_) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(track.events.back()));
      for (size_t i = 0; i + 1 < track.events.size(); ++i) {
        if (track.phases[i] >= kPhaseCount) continue;  // a wait
        MATRIXD_ASSIGN_OR_RETURN(const double s, Between(track.events[i], track.events[i + 1]));
        seconds[track.phases[i]] += s;
      }
    }
    for (size_t i = 0; i + 1 < factor_.size(); i += 2) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(factor_[i + 1]));
      MATRIXD_ASSIGN_OR_RETURN(const double s, Between(factor_[i], factor_[i + 1]));
      seconds[kFactor] += s;
    }
    return seconds;
  }

 private:
  struct Track {
    cudaStream_t stream = nullptr;
    std::vector<cudaEvent_t> events;
    std::vector<Phase> phases;
  };
  static absl::StatusOr<double> Between(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0.0f;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, from, to));
    return 1e-3 * ms;
  }
  std::vector<Track> tracks_;
  std::vector<cudaEvent_t> factor_;  // start, end
};

// Work per phase, for stats.kernels.
struct PhaseWork {
  std::array<double, kPhaseCount> flops = {};
  std::array<uint64_t, kPhaseCount> bytes = {};
};

// Where one part of the factorization queues its work, and the scratch of its products (device
// words per matrix; a lane's products follow one another on its stream, so they share them).
struct Lane {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  double* pieces = nullptr;  // the two-piece products' right operand, depth x 2 cols
  int64_t pieces_stride = 0;
  double* product = nullptr;  // their sums
  int64_t product_capacity = 0;
  double* apply_product = nullptr;  // the products with a leaf inverse, 2 kLeafWidth x cols
  int64_t apply_stride = 0;
};

// The blocked LU of a batch of n x n matrices of balanced residues (one prime each), held side
// by side at `a` on the device: every step is one launch for the whole batch, and the trailing
// products one strided-batched DGEMM. Look-ahead: each panel (its leaves, and the updates and row
// moves inside its own columns) is factored on the context's side lane while the context's stream
// applies the previous panel to the columns right of it, the next panel's columns first; the
// lanes meet at two events a panel. Every column sees the same operations in the same order as
// without look-ahead (one lane), so the residues are the same.
class BalancedLu {
 public:
  BalancedLu(DeviceContext& context, std::span<const uint64_t> primes, int64_t n, double* a,
             PhaseClock& clock, PhaseWork& work)
      : context_(context),
        primes_(primes.begin(), primes.end()),
        largest_(*std::max_element(primes.begin(), primes.end())),
        n_(n),
        a_(a),
        clock_(clock),
        work_(work),
        look_ahead_(look_ahead_setting.load(std::memory_order_relaxed)) {}

  // Allocates the scratch buffers, uploads the moduli and resets the device states.
  absl::Status Prepare() {
    const size_t count = primes_.size();
    std::vector<BalancedModulus> moduli;
    moduli.reserve(count);
    for (const uint64_t p : primes_) moduli.push_back(BalancedModulus::Of(p));
    MATRIXD_ASSIGN_OR_RETURN(moduli_, context_.Allocate(count * sizeof(BalancedModulus)));
    MATRIXD_RETURN_IF_ERROR(
        context_.Upload(moduli.data(), moduli_, count * sizeof(BalancedModulus)));
    MATRIXD_ASSIGN_OR_RETURN(
        rows_, context_.Allocate(count * kLeafInverseSlots * kLeafRowWords * sizeof(int)));
    MATRIXD_ASSIGN_OR_RETURN(states_, context_.Allocate(count * sizeof(ModularLuState)));
    MATRIXD_ASSIGN_OR_RETURN(
        inverse_pieces_,
        context_.Allocate(count * kLeafInverseSlots * kLeafInverseWords * sizeof(double)));
    trailing_.stream = context_.stream();
    trailing_.cublas = context_.cublas();
    if (ProductPieces(largest_, kPanelWidth) > 1 && n_ > 1) {
      trailing_.pieces_stride = kPanelWidth * 2 * n_;
      MATRIXD_ASSIGN_OR_RETURN(pieces_, AllocateWords(trailing_.pieces_stride));
      trailing_.pieces = pieces_.as<double>();
      // The two-piece products of a trailing update go through this buffer in row blocks; with
      // the pieces it is as large as the matrix (the memory estimate's 2 n^2 words) and takes the
      // first updates in two blocks.
      trailing_.product_capacity = std::max(n_ * n_ - kPanelWidth * 2 * n_, 2 * n_);
      MATRIXD_ASSIGN_OR_RETURN(product_, AllocateWords(trailing_.product_capacity));
      trailing_.product = product_.as<double>();
    }
    // The products that apply a leaf inverse (2 kLeafWidth x at most n) share the two-piece
    // products' buffer where it is large enough (they never overlap on the stream).
    if (trailing_.product_capacity >= 2 * kLeafWidth * n_) {
      trailing_.apply_product = trailing_.product;
      trailing_.apply_stride = trailing_.product_capacity;
    } else {
      trailing_.apply_stride = 2 * kLeafWidth * n_;
      MATRIXD_ASSIGN_OR_RETURN(own_apply_product_, AllocateWords(trailing_.apply_stride));
      trailing_.apply_product = own_apply_product_.as<double>();
    }
    panel_ = trailing_;
    if (look_ahead_) MATRIXD_RETURN_IF_ERROR(PreparePanelLane());
    batch_ = ResidueBatch{.a = a_,
                          .n = n_,
                          .count = static_cast<int>(count),
                          .moduli = moduli_.as<BalancedModulus>(),
                          .states = states_.as<ModularLuState>()};
    scratch_ = LeafScratch{.rows = rows_.as<int>(), .inverse_pieces = inverse_pieces_.as<double>()};
    return LaunchResetStates(context_.stream(), batch_);
  }

  const ResidueBatch& batch() const { return batch_; }

  // Queues the whole factorization, checking in with `control` every few panels. Whatever it
  // returns, the context's stream (which frees the buffers) waits for the panel lane's last work.
  absl::Status Run(JobControl* control) {
    MATRIXD_RETURN_IF_ERROR(clock_.MarkFactor(trailing_.stream));
    // Native FP64: the products must be exact integer sums, whatever mode a handle was left in.
    MATRIXD_ASSIGN_OR_RETURN(ScopedMathMode math,
                             ScopedMathMode::Set(trailing_.cublas, CUBLAS_DEFAULT_MATH));
    std::optional<ScopedMathMode> panel_math;
    if (panel_.cublas != trailing_.cublas) {
      MATRIXD_ASSIGN_OR_RETURN(ScopedMathMode mode,
                               ScopedMathMode::Set(panel_.cublas, CUBLAS_DEFAULT_MATH));
      panel_math.emplace(std::move(mode));
    }
    // The first panel waits for the residues and the states.
    MATRIXD_RETURN_IF_ERROR(Signal(ready_, trailing_));
    const absl::Status status = RunPanels(control);
    absl::Status joined = clock_.Enter(kEnd, panel_.stream);
    if (joined.ok()) joined = Signal(factored_, panel_);
    if (joined.ok()) joined = Await(factored_, trailing_);
    if (joined.ok()) joined = clock_.MarkFactor(trailing_.stream);
    return status.ok() ? joined : status;
  }

  // det mod each prime in [0, p), in the order of the primes, once the queued work is done.
  absl::StatusOr<std::vector<uint64_t>> Determinants() {
    std::vector<ModularLuState> states(primes_.size());
    MATRIXD_RETURN_IF_ERROR(
        context_.Download(states_, states.data(), states.size() * sizeof(ModularLuState)));
    std::vector<uint64_t> residues(primes_.size());
    for (size_t b = 0; b < primes_.size(); ++b) {
      residues[b] = states[b].status != 0
                        ? uint64_t{0}
                        : BalancedModulus::Of(primes_[b]).ToCanonical(states[b].determinant);
    }
    return residues;
  }

 private:
  int64_t offset(int64_t row, int64_t col) const { return row * n_ + col; }
  // Work per matrix, counted for the batch.
  double batch_size() const { return static_cast<double>(primes_.size()); }

  absl::StatusOr<DeviceBuffer> AllocateWords(int64_t words_per_matrix) {
    return context_.Allocate(primes_.size() * static_cast<size_t>(words_per_matrix) *
                             sizeof(double));
  }

  // The side lane and its own scratch: the products inside a panel are at most kLeafWidth deep and
  // kLeafWidth wide, n rows (the apply products 2 kLeafWidth rows) in one block.
  absl::Status PreparePanelLane() {
    MATRIXD_ASSIGN_OR_RETURN(SideLane * side, context_.side_lane());
    panel_ = Lane();
    panel_.stream = side->stream();
    panel_.cublas = side->cublas();
    if (ProductPieces(largest_, kLeafWidth) > 1 && n_ > 1) {
      panel_.pieces_stride = kLeafWidth * 2 * kLeafWidth;
      MATRIXD_ASSIGN_OR_RETURN(panel_pieces_, AllocateWords(panel_.pieces_stride));
      panel_.pieces = panel_pieces_.as<double>();
    }
    panel_.product_capacity = 2 * kLeafWidth * std::max(n_, kLeafWidth);
    MATRIXD_ASSIGN_OR_RETURN(panel_product_, AllocateWords(panel_.product_capacity));
    panel_.product = panel_product_.as<double>();
    panel_.apply_product = panel_.product;
    panel_.apply_stride = panel_.product_capacity;
    MATRIXD_ASSIGN_OR_RETURN(CudaEvent ready, CudaEvent::Create());
    MATRIXD_ASSIGN_OR_RETURN(CudaEvent factored, CudaEvent::Create());
    ready_.emplace(std::move(ready));
    factored_.emplace(std::move(factored));
    return absl::OkStatus();
  }

  // The other lane's work queued after Await(event, ...) waits for `lane`'s work queued so far.
  // Nothing to do on one lane.
  absl::Status Signal(std::optional<CudaEvent>& event, const Lane& lane) {
    if (!event.has_value()) return absl::OkStatus();
    return event->Record(lane.stream);
  }
  absl::Status Await(const std::optional<CudaEvent>& event, const Lane& lane) {
    if (!event.has_value()) return absl::OkStatus();
    MATRIXD_RETURN_IF_ERROR(clock_.Enter(kWait, lane.stream));
    return event->MakeWait(lane.stream);
  }

  absl::Status RunPanels(JobControl* control) {
    MATRIXD_ASSIGN_OR_RETURN(CheckInPacer pacer, CheckInPacer::Create());
    int64_t panels = 0;
    for (int64_t k = 0; k < n_; k += kPanelWidth) {
      const int64_t width = std::min(kPanelWidth, n_ - k);
      MATRIXD_RETURN_IF_ERROR(Await(ready_, panel_));
      leaves_.clear();
      MATRIXD_RETURN_IF_ERROR(FactorColumns(k, k + width, k, width));
      MATRIXD_RETURN_IF_ERROR(Signal(factored_, panel_));
      MATRIXD_RETURN_IF_ERROR(Await(factored_, trailing_));
      const int64_t rest = n_ - k - width;
      if (rest <= 0) continue;
      MATRIXD_RETURN_IF_ERROR(UpdateTrailing(k, width));
      if (++panels % kPanelsPerCheckIn == 0) {
        MATRIXD_RETURN_IF_ERROR(
            pacer.CheckIn(trailing_.stream, control, EliminationProgress(rest, n_)));
      }
    }
    return absl::OkStatus();
  }

  // Columns [c, c + w) of rows [c, n) of the panel [panel, end), all columns left of c done, on
  // the panel lane: halves down to leaves. Only the diagonal blocks are factored (their inverses
  // kept per leaf); the blocks left and right of them stay as they are, and every update below a
  // diagonal block D takes the Schur complement A22 - A21 D^-1 A12 (= A22 - L21 U12 with
  // L21 = A21 U^-1, U12 = L^-1 A12).
  absl::Status FactorColumns(int64_t panel, int64_t end, int64_t c, int64_t w) {
    if (w <= kLeafWidth) return FactorLeaf(panel, end, c, static_cast<int>(w));
    const int64_t half = w / 2;
    MATRIXD_RETURN_IF_ERROR(FactorColumns(panel, end, c, half));
    MATRIXD_RETURN_IF_ERROR(ApplyInverse(panel_, panel, c, half, c + half, w - half));
    MATRIXD_RETURN_IF_ERROR(SubtractProduct(panel_, offset(c + half, c), offset(c, c + half),
                                            offset(c + half, c + half), n_ - c - half, w - half,
                                            half, kPanel, kPanel));
    return FactorColumns(panel, end, c + half, w - half);
  }

  // The leaf slot of the leaf at column c of the panel at column `panel`: the first or the second
  // of the panel, in the pair of the panel's parity (the previous panel's may still be in use).
  static int Slot(int64_t panel, int64_t c) {
    return static_cast<int>(2 * (panel / kPanelWidth % 2) + (c == panel ? 0 : 1));
  }

  absl::Status FactorLeaf(int64_t panel, int64_t end, int64_t c, int w) {
    const cudaStream_t stream = panel_.stream;
    MATRIXD_RETURN_IF_ERROR(clock_.Enter(kPanel, stream));
    leaves_.push_back({c, w});
    // One launch factors and inverts the leaf; one more moves its pivot rows in the panel's
    // columns (and, without look-ahead, in those to its right).
    MATRIXD_RETURN_IF_ERROR(LaunchFactorLeaf(stream, batch_, c, w, scratch_, Slot(panel, c)));
    MATRIXD_RETURN_IF_ERROR(LaunchApplyLeafRows(stream, batch_, panel, look_ahead_ ? end : n_, c, w,
                                                scratch_, Slot(panel, c)));
    const double leaf = static_cast<double>(w);
    // Two products per entry and step in the leaf; w^3 / 6 products for each triangular inverse
    // and w^3 / 3 for their product.
    work_.flops[kPanel] +=
        batch_size() * (4.0 * leaf * leaf * leaf / 3.0 + 4.0 * leaf * leaf * leaf / 3.0);
    // The leaf's block read and its inverse's pieces written; at most 2w rows of the panel's
    // columns and those right of it read and written by the moves.
    work_.bytes[kPanel] += static_cast<uint64_t>(
        batch_size() * (3.0 * leaf * leaf + 4.0 * leaf * static_cast<double>(n_ - panel)) * 8.0);
    return absl::OkStatus();
  }

  // The panel [k, k + width) factored: on the context's stream, its leaves' row moves in the
  // columns right of it (look-ahead), rows [k, k + width) of those columns become Y (ApplyInverse)
  // and the rows below take A22 -= A21 Y, the Schur complement's update A21 D^-1 A12
  // (tests/core/block_inverse_test.cc): the next panel's columns first, then `ready_` lets the
  // panel lane go on while the rest are updated.
  absl::Status UpdateTrailing(int64_t k, int64_t width) {
    const int64_t j = k + width;
    const int64_t cols = n_ - j;
    if (look_ahead_) {
      MATRIXD_RETURN_IF_ERROR(clock_.Enter(kPanel, trailing_.stream));
      for (const auto& [c, w] : leaves_) {
        MATRIXD_RETURN_IF_ERROR(
            LaunchApplyLeafRows(trailing_.stream, batch_, j, n_, c, w, scratch_, Slot(k, c)));
      }
    }
    MATRIXD_RETURN_IF_ERROR(ApplyInverse(trailing_, k, k, width, j, cols));
    const int64_t first = look_ahead_ ? std::min(kPanelWidth, cols) : cols;
    MATRIXD_RETURN_IF_ERROR(SubtractProduct(trailing_, offset(j, k), offset(k, j), offset(j, j),
                                            cols, first, width, kGemm, kReduce));
    MATRIXD_RETURN_IF_ERROR(Signal(ready_, trailing_));
    if (first == cols) return absl::OkStatus();
    return SubtractProduct(trailing_, offset(j, k), offset(k, j + first), offset(j, j + first),
                           cols, cols - first, width, kGemm, kReduce);
  }

  // Rows [c, c + h) of columns [j, j + cols) := Y, by block forward substitution over the leaves
  // that FactorColumns split columns [c, c + h) of the panel at `panel` into: for two halves,
  // Y1 = D1^-1 B1 and Y2 = S^-1 (B2 - A21 Y1), D1 and S (the Schur complement) the two factored
  // diagonal blocks. The rows below, whose second block column the panel updated
  // (A32 - A31 D1^-1 A12), then take exactly A31 Y1 + A32' Y2 = [A31 A32] D^-1 B. One leaf:
  // Y = D^-1 B.
  absl::Status ApplyInverse(const Lane& lane, int64_t panel, int64_t c, int64_t h, int64_t j,
                            int64_t cols) {
    if (h <= kLeafWidth) return ApplyLeafInverse(lane, panel, c, static_cast<int>(h), j, cols);
    const int64_t half = h / 2;
    MATRIXD_RETURN_IF_ERROR(ApplyInverse(lane, panel, c, half, j, cols));
    MATRIXD_RETURN_IF_ERROR(SubtractProduct(lane, offset(c + half, c), offset(c, j),
                                            offset(c + half, j), h - half, cols, half, kPanel,
                                            kPanel));
    return ApplyInverse(lane, panel, c + half, h - half, j, cols);
  }

  // Rows [c, c + w) of columns [j, j + cols) := D^-1 times themselves for the leaf at c: one
  // product with the pieces of D^-1 stacked as the left operand (2w x w), then a reduction of the
  // two pieces' sums into place.
  absl::Status ApplyLeafInverse(const Lane& lane, int64_t panel, int64_t c, int w, int64_t j,
                                int64_t cols) {
    MATRIXD_RETURN_IF_ERROR(clock_.Enter(kPanel, lane.stream));
    const double one = 1.0;
    const double zero = 0.0;
    // Row-major P (2w x cols) = [low; high] (2w x w) B (w x cols); column-major: P^T = B^T [..]^T.
    const double* pieces = inverse_pieces_.as<double>() + Slot(panel, c) * kLeafInverseWords;
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemmStridedBatched(
        lane.cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(cols), 2 * w, w, &one,
        a_ + offset(c, j), static_cast<int>(n_), static_cast<long long>(n_ * n_), pieces, w,
        static_cast<long long>(kLeafInverseSlots * kLeafInverseWords), &zero, lane.apply_product,
        static_cast<int>(cols), static_cast<long long>(lane.apply_stride), batch_.count));
    MATRIXD_RETURN_IF_ERROR(LaunchReduceProduct(lane.stream, batch_, offset(c, j), w, cols,
                                                PieceProduct{.data = lane.apply_product,
                                                             .stride = lane.apply_stride,
                                                             .ld = cols,
                                                             .high_offset = w * cols},
                                                ProductUse::kAssign));
    const double k = static_cast<double>(w);
    const double m = static_cast<double>(cols);
    work_.flops[kPanel] += batch_size() * 4.0 * k * k * m;
    work_.bytes[kPanel] += static_cast<uint64_t>(batch_size() * (2.0 * k * k + 7.0 * k * m) * 8.0);
    return absl::OkStatus();
  }

  // In every matrix, C -= A B mod p for its blocks A (rows x depth), B (depth x cols) and
  // C (rows x cols) at the given element offsets, all of stride n. cuBLAS is column-major: a
  // row-major X is its transpose there, so C^T -= B^T A^T.
  absl::Status SubtractProduct(const Lane& lane, int64_t a_offset, int64_t b_offset,
                               int64_t c_offset, int64_t rows, int64_t cols, int64_t depth,
                               Phase gemm, Phase reduce) {
    const cudaStream_t stream = lane.stream;
    const cublasHandle_t cublas = lane.cublas;
    const int ld = static_cast<int>(n_);
    const long long stride = static_cast<long long>(n_ * n_);
    const int count = batch_.count;
    const double r = static_cast<double>(rows) * batch_size();  // rows of the whole batch
    const double k = static_cast<double>(depth);
    const double m = static_cast<double>(cols);
    MATRIXD_RETURN_IF_ERROR(clock_.Enter(gemm, stream));
    if (ProductPieces(largest_, depth) == 1) {
      const double minus_one = -1.0;
      const double one = 1.0;
      MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemmStridedBatched(
          cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(cols), static_cast<int>(rows),
          static_cast<int>(depth), &minus_one, a_ + b_offset, ld, stride, a_ + a_offset, ld, stride,
          &one, a_ + c_offset, ld, stride, count));
      MATRIXD_RETURN_IF_ERROR(clock_.Enter(reduce, stream));
      MATRIXD_RETURN_IF_ERROR(LaunchReduceProduct(stream, batch_, c_offset, rows, cols,
                                                  PieceProduct{}, ProductUse::kSubtract));
      work_.flops[gemm] += 2.0 * r * m * k;
      work_.bytes[gemm] +=
          static_cast<uint64_t>((r * k + batch_size() * k * m + 2.0 * r * m) * 8.0);
      work_.bytes[reduce] += static_cast<uint64_t>(2.0 * r * m * 8.0);
      return absl::OkStatus();
    }
    double* pieces = lane.pieces;
    double* product = lane.product;
    MATRIXD_RETURN_IF_ERROR(LaunchSplitPieces(stream, batch_, b_offset, static_cast<int>(depth),
                                              cols, pieces, lane.pieces_stride));
    work_.bytes[gemm] += static_cast<uint64_t>(batch_size() * 3.0 * k * m * 8.0);
    const int64_t block_rows = std::max<int64_t>(1, lane.product_capacity / (2 * cols));
    for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
      const int64_t block = std::min(block_rows, rows - r0);
      const double one = 1.0;
      const double zero = 0.0;
      MATRIXD_RETURN_IF_ERROR(clock_.Enter(gemm, stream));
      MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemmStridedBatched(
          cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(2 * cols), static_cast<int>(block),
          static_cast<int>(depth), &one, pieces, static_cast<int>(2 * cols), lane.pieces_stride,
          a_ + a_offset + r0 * n_, ld, stride, &zero, product, static_cast<int>(2 * cols),
          lane.product_capacity, count));
      MATRIXD_RETURN_IF_ERROR(clock_.Enter(reduce, stream));
      MATRIXD_RETURN_IF_ERROR(LaunchReduceProduct(stream, batch_, c_offset + r0 * n_, block, cols,
                                                  PieceProduct{.data = product,
                                                               .stride = lane.product_capacity,
                                                               .ld = 2 * cols,
                                                               .high_offset = cols},
                                                  ProductUse::kSubtract));
    }
    work_.flops[gemm] += 4.0 * r * m * k;
    work_.bytes[gemm] +=
        static_cast<uint64_t>((r * k + batch_size() * 2.0 * k * m + 2.0 * r * m) * 8.0);
    work_.bytes[reduce] += static_cast<uint64_t>(4.0 * r * m * 8.0);
    return absl::OkStatus();
  }

  DeviceContext& context_;
  std::vector<uint64_t> primes_;
  uint64_t largest_;
  int64_t n_;
  double* a_;
  PhaseClock& clock_;
  PhaseWork& work_;
  const bool look_ahead_;
  DeviceBuffer moduli_;
  DeviceBuffer rows_;
  DeviceBuffer states_;
  DeviceBuffer inverse_pieces_;
  DeviceBuffer own_apply_product_;
  DeviceBuffer pieces_;
  DeviceBuffer product_;
  DeviceBuffer panel_pieces_;
  DeviceBuffer panel_product_;
  ResidueBatch batch_;
  LeafScratch scratch_;
  Lane trailing_;                      // the context's stream: the trailing updates
  Lane panel_;                         // the side lane under look-ahead, else the same as trailing_
  std::optional<CudaEvent> ready_;     // the next panel's columns are up to date (look-ahead)
  std::optional<CudaEvent> factored_;  // the panel is factored (look-ahead)
  std::vector<std::pair<int64_t, int>> leaves_;  // (column, width) of the panel's leaves
};

// Adds the work and device time of each phase to `stats`, one record per phase (summed into a
// record of the same name already there, so that successive batches read as one operation).
void AddPhases(const PhaseWork& work, const std::array<double, kPhaseCount>& seconds,
               ComputeStats* stats) {
  for (int phase = 0; phase < kPhaseCount; ++phase) {
    stats->flops += work.flops[phase];
    stats->bytes_moved += work.bytes[phase];
    auto record =
        std::find_if(stats->kernels.begin(), stats->kernels.end(),
                     [&](const KernelRecord& r) { return r.kernel == kPhaseNames[phase]; });
    if (record == stats->kernels.end()) {
      stats->kernels.push_back(
          {kPhaseNames[phase], seconds[phase], work.bytes[phase], work.flops[phase]});
    } else {
      record->seconds += seconds[phase];
      record->bytes += work.bytes[phase];
      record->flops += work.flops[phase];
    }
  }
}

// The residue matrices of `primes` at `residues` from the int64 entries on the device (which may
// be `residues` itself for one prime; null when the one prime's residues are there already),
// factored together: det mod each prime.
absl::StatusOr<std::vector<uint64_t>> FactorBatch(const int64_t* entries, double* residues,
                                                  int64_t n, std::span<const uint64_t> primes,
                                                  DeviceContext& context, JobControl* control,
                                                  PhaseClock& clock, PhaseWork& work) {
  BalancedLu lu(context, primes, n, residues, clock, work);
  MATRIXD_RETURN_IF_ERROR(lu.Prepare());
  if (entries != nullptr) {
    MATRIXD_RETURN_IF_ERROR(clock.Enter(kResidues, context.stream()));
    MATRIXD_RETURN_IF_ERROR(LaunchBalancedResidues(context.stream(), lu.batch(), entries));
    work.bytes[kResidues] += 2 * primes.size() * static_cast<uint64_t>(n * n) * sizeof(double);
  }
  MATRIXD_RETURN_IF_ERROR(lu.Run(control));
  MATRIXD_RETURN_IF_ERROR(clock.Enter(kEnd, context.stream()));
  return lu.Determinants();
}

// Uploads the `count` int64 values at pageable `host` through `staging` and converts them to
// balanced residues mod p at `residues` piece by piece, each conversion queued as its piece lands
// (the host narrows or copies the next piece meanwhile). The pieces travel as int32 while the
// values fit: the host copy into pinned memory is the cost here, and narrowing writes half of it.
absl::Status StageResidues(PinnedStaging& staging, const int64_t* host, size_t count, uint64_t p,
                           double* residues, DeviceContext& context, PhaseWork& work) {
  const size_t slot_bytes = std::min(count, PinnedStaging::kPieceValues) * sizeof(int64_t);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer slots, context.Allocate(2 * slot_bytes));
  const BalancedModulus modulus = BalancedModulus::Of(p);
  return staging.UploadInPieces(
      host, count, {slots.data(), slots.as<char>() + slot_bytes},
      [&](const PinnedStaging::LandedPiece& piece) -> absl::Status {
        const size_t width = piece.narrow ? sizeof(int32_t) : sizeof(int64_t);
        work.bytes[kResidues] += piece.count * (2 * width + sizeof(double));  // sent, read, written
        double* to = residues + piece.first;
        const auto length = static_cast<int64_t>(piece.count);
        return piece.narrow
                   ? LaunchBalancedResiduesOfValues(context.stream(), modulus,
                                                    static_cast<const int32_t*>(piece.data), length,
                                                    to)
                   : LaunchBalancedResiduesOfValues(context.stream(), modulus,
                                                    static_cast<const int64_t*>(piece.data), length,
                                                    to);
      });
}

// det mod p for p < 2^32 (the header's first path): a batch of one, its residues converted piece
// by piece as they arrive from pageable memory, or in place after a direct upload.
absl::StatusOr<uint64_t> BalancedLuDeterminant(const MatrixView& a, uint64_t p,
                                               DeviceContext& context, JobControl* control,
                                               ComputeStats* stats) {
  const int64_t n = a.rows;
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(int64_t);
  PhaseClock clock;
  PhaseWork work;
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer matrix, context.Allocate(bytes));
  MATRIXD_RETURN_IF_ERROR(clock.Enter(kResidues, context.stream()));
  const int64_t* host = a.As<int64_t>().data();
  const int64_t* entries = nullptr;  // null: the residues are in `matrix` already
  if (PinnedStaging* staging = context.StagingFor(host, bytes)) {
    MATRIXD_RETURN_IF_ERROR(StageResidues(*staging, host, static_cast<size_t>(n * n), p,
                                          matrix.as<double>(), context, work));
  } else {
    MATRIXD_RETURN_IF_ERROR(context.Upload(host, matrix, bytes));
    work.bytes[kResidues] += bytes;  // uploaded
    entries = matrix.as<int64_t>();
  }
  const uint64_t primes[] = {p};
  MATRIXD_ASSIGN_OR_RETURN(
      std::vector<uint64_t> det,
      FactorBatch(entries, matrix.as<double>(), n, primes, context, control, clock, work));
  MATRIXD_ASSIGN_OR_RETURN(auto seconds, clock.Seconds());
  AddPhases(work, seconds, stats);
  return det[0];
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

absl::StatusOr<std::vector<uint64_t>> BatchedModularLuDeterminants(
    const int64_t* entries, int64_t n, std::span<const uint64_t> primes, DeviceContext& context,
    JobControl* control, ComputeStats* stats) {
  if (primes.empty() || primes.size() > static_cast<size_t>(kMaxResidueBatch)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch of ", primes.size(), " primes; want 1 to ", kMaxResidueBatch));
  }
  for (const uint64_t p : primes) {
    if (p < 2 || p >= kBalancedResidueLimit) {
      return absl::InvalidArgumentError(
          absl::StrCat("batched modulus ", p, " must be a prime below 2^32"));
    }
  }
  if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
  PhaseClock clock;
  PhaseWork work;
  const size_t bytes =
      primes.size() * static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(double);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer matrices, context.Allocate(bytes));
  MATRIXD_RETURN_IF_ERROR(clock.Enter(kResidues, context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(
      std::vector<uint64_t> residues,
      FactorBatch(entries, matrices.as<double>(), n, primes, context, control, clock, work));
  MATRIXD_ASSIGN_OR_RETURN(auto seconds, clock.Seconds());
  AddPhases(work, seconds, stats);
  return residues;
}

void SetModularLuTuning(const ModularLuTuning& tuning) {
  look_ahead_setting.store(tuning.look_ahead, std::memory_order_relaxed);
}

ModularLuTuning GetModularLuTuning() {
  return ModularLuTuning{.look_ahead = look_ahead_setting.load(std::memory_order_relaxed)};
}

uint64_t ModularLuBatchBytesPerPrime(int64_t n, uint64_t largest_prime) {
  const uint64_t n2 = static_cast<uint64_t>(n) * static_cast<uint64_t>(n);
  uint64_t bytes = n2 * sizeof(double) + sizeof(BalancedModulus) + sizeof(ModularLuState) +
                   kLeafInverseSlots * kLeafRowWords * sizeof(int) +
                   kLeafInverseSlots * kLeafInverseWords * sizeof(double);
  // The panel lane's scratch under look-ahead (BalancedLu::PreparePanelLane), counted always.
  bytes += (2 * kLeafWidth * static_cast<uint64_t>(std::max(n, kLeafWidth)) +
            2 * kLeafWidth * kLeafWidth) *
           sizeof(double);
  const uint64_t apply = 2 * kLeafWidth * static_cast<uint64_t>(n);
  uint64_t product = 0;
  if (ProductPieces(largest_prime, kPanelWidth) > 1 && n > 1) {
    const uint64_t pieces = static_cast<uint64_t>(kPanelWidth * 2 * n);
    product = std::max(n2 - std::min(n2, pieces), 2 * static_cast<uint64_t>(n));
    bytes += pieces * sizeof(double);
  }
  bytes += (product >= apply ? product : product + apply) * sizeof(double);
  return bytes;
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
