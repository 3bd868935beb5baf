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

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/balanced_residue.h"
#include "core/cuda/check_in_pacer.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/cuda_stream.h"
#include "core/cuda/elimination.h"
#include "core/cuda/fused_modular_product.h"
#include "core/cuda/modular_lu_kernels.h"
#include "core/cuda/modular_lu_stages.h"
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

// kFactor: the device time from the factorization's start (its first columns in place) to its end
// on the context's stream, both lanes together (the other phases overlap under look-ahead).
// kTotal: the whole operation's device time, from before the upload to the end. kWait: a lane
// waiting for the other.
enum Phase {
  kResidues,
  kPanel,
  kGemm,
  kReduce,
  kFactor,
  kTotal,
  kPhaseCount,
  kWait = kPhaseCount,
  kEnd
};
constexpr std::array<const char*, kPhaseCount> kPhaseNames = {
    "modp_residues", "modp_panel", "modp_gemm", "modp_reduce", "modp_factor", "modp_total"};

std::atomic<bool> look_ahead_setting{true};
std::atomic<bool> overlap_setting{true};
std::atomic<int64_t> piece_rows_setting{0};
std::atomic<bool> fused_products_setting{true};

// Whether every product at most kLeafWidth deep (a leaf inverse applied, a panel's own update)
// goes through the fused kernels, which need no product buffers: fused on and one piece there.
bool LeafProductsFused(bool fused, uint64_t largest_prime) {
  return fused && ProductPieces(largest_prime, kLeafWidth) == 1;
}

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
    for (const Span& span : spans_) {
      for (cudaEvent_t event : {span.start, span.end}) {
        if (event != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(event));
      }
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

  // A span of `phase` (kFactor, kTotal, or kResidues overlapping the factorization) from here on
  // `stream` (Open) to there on the same or another stream (Close, of the last span opened):
  // device time from one point to the other, whatever ran between.
  absl::Status Open(Phase phase, cudaStream_t stream) {
    spans_.push_back(Span{.phase = phase, .start = nullptr, .end = nullptr});
    return Mark(spans_.back().start, stream);
  }
  absl::Status Close(Phase phase, cudaStream_t stream) {
    auto span = std::find_if(spans_.rbegin(), spans_.rend(),
                             [&](const Span& s) { return s.phase == phase && s.end == nullptr; });
    if (span == spans_.rend()) {
      return absl::InternalError(absl::StrCat("no open span of ", kPhaseNames[phase]));
    }
    return Mark(span->end, stream);
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
    for (const Span& span : spans_) {
      if (span.end == nullptr) continue;
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(span.end));
      MATRIXD_ASSIGN_OR_RETURN(const double s, Between(span.start, span.end));
      seconds[span.phase] += s;
    }
    return seconds;
  }

 private:
  struct Track {
    cudaStream_t stream = nullptr;
    std::vector<cudaEvent_t> events;
    std::vector<Phase> phases;
  };
  struct Span {
    Phase phase = kFactor;
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
  };
  static absl::Status Mark(cudaEvent_t& event, cudaStream_t stream) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreate(&event));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream));
    return absl::OkStatus();
  }
  static absl::StatusOr<double> Between(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0.0f;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, from, to));
    return 1e-3 * ms;
  }
  std::vector<Track> tracks_;
  std::vector<Span> spans_;
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
  // The one-piece products (trailing and panel: ProductPieces(p, depth) == 1) by the fused
  // kernel, product and reduction in one pass (ModularLuTuning::fused_products); else a DGEMM in
  // place, then the reduction.
  bool fused = false;
};

// The blocked LU of a batch of n x n matrices of balanced residues (one prime each), held side
// by side at `a` on the device: every step is one launch for the whole batch, and the trailing
// products one strided-batched DGEMM. Look-ahead: each panel (its leaves, and the updates and row
// moves inside its own columns) is factored on the context's side lane while the context's stream
// applies the previous panel to the columns right of it, the next panel's columns first; the
// lanes meet at two events a panel. Every column sees the same operations in the same order as
// without look-ahead (one lane), so the residues are the same. Staged
// (core/cuda/modular_lu_stages.h): the columns arrive in groups, the panels go as far as the
// landed columns allow, and each new group first takes every earlier panel's update (so every
// panel's leaves are kept); again the same operations on every column in the same order.
class BalancedLu {
 public:
  // Called with the end of the columns in place so far (in the order of the context's stream).
  using ColumnAdvance = absl::FunctionRef<absl::Status(int64_t)>;
  // Brings the columns, calling advance(end) as each group lands, ends increasing to n.
  using ColumnFeed = absl::FunctionRef<absl::Status(ColumnAdvance)>;

  // `staged`: the columns may arrive in several groups (Run's feed).
  BalancedLu(DeviceContext& context, std::span<const uint64_t> primes, int64_t n, double* a,
             PhaseClock& clock, PhaseWork& work, bool staged)
      : context_(context),
        primes_(primes.begin(), primes.end()),
        largest_(*std::max_element(primes.begin(), primes.end())),
        n_(n),
        a_(a),
        clock_(clock),
        work_(work),
        look_ahead_(look_ahead_setting.load(std::memory_order_relaxed)),
        staged_(staged),
        slot_pairs_(staged ? (n + kPanelWidth - 1) / kPanelWidth : kLeafInverseSlots / 2),
        leaves_(static_cast<size_t>((n + kPanelWidth - 1) / kPanelWidth)) {}

  // Allocates the scratch buffers, uploads the moduli and resets the device states.
  absl::Status Prepare() {
    const size_t count = primes_.size();
    std::vector<BalancedModulus> moduli;
    moduli.reserve(count);
    for (const uint64_t p : primes_) moduli.push_back(BalancedModulus::Of(p));
    MATRIXD_ASSIGN_OR_RETURN(moduli_, context_.Allocate(count * sizeof(BalancedModulus)));
    MATRIXD_RETURN_IF_ERROR(
        context_.Upload(moduli.data(), moduli_, count * sizeof(BalancedModulus)));
    const size_t slots = 2 * static_cast<size_t>(slot_pairs_);
    MATRIXD_ASSIGN_OR_RETURN(rows_, context_.Allocate(count * slots * kLeafRowWords * sizeof(int)));
    MATRIXD_ASSIGN_OR_RETURN(states_, context_.Allocate(count * sizeof(ModularLuState)));
    MATRIXD_ASSIGN_OR_RETURN(inverse_pieces_,
                             context_.Allocate(count * slots * kLeafInverseWords * sizeof(double)));
    trailing_.stream = context_.stream();
    trailing_.cublas = context_.cublas();
    trailing_.fused = fused_products_setting.load(std::memory_order_relaxed);
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
    // products' buffer where it is large enough (they never overlap on the stream); fused, they
    // need none.
    if (LeafProductsFused(trailing_.fused, largest_)) {
      // ApplyLeafInverse never forms them.
    } else if (trailing_.product_capacity >= 2 * kLeafWidth * n_) {
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
    scratch_ = LeafScratch{.rows = rows_.as<int>(),
                           .inverse_pieces = inverse_pieces_.as<double>(),
                           .slots = static_cast<int>(slots)};
    return LaunchResetStates(context_.stream(), batch_);
  }

  const ResidueBatch& batch() const { return batch_; }

  // Queues the factorization as `feed` brings the columns, checking in with `control` every few
  // panels (only once all columns are in: before, the host must stay free to bring the next ones,
  // so it only looks for cancellation). Whatever it returns, the context's stream (which frees the
  // buffers) waits for the panel lane's last work.
  absl::Status Run(JobControl* control, ColumnFeed feed) {
    // Native FP64: the products must be exact integer sums, whatever mode a handle was left in.
    MATRIXD_ASSIGN_OR_RETURN(ScopedMathMode math,
                             ScopedMathMode::Set(trailing_.cublas, CUBLAS_DEFAULT_MATH));
    std::optional<ScopedMathMode> panel_math;
    if (panel_.cublas != trailing_.cublas) {
      MATRIXD_ASSIGN_OR_RETURN(ScopedMathMode mode,
                               ScopedMathMode::Set(panel_.cublas, CUBLAS_DEFAULT_MATH));
      panel_math.emplace(std::move(mode));
    }
    MATRIXD_ASSIGN_OR_RETURN(CheckInPacer pacer, CheckInPacer::Create());
    absl::Status status = feed([&](int64_t end) { return Advance(end, control, pacer); });
    if (status.ok() && done_ < n_) {
      status = absl::InternalError(absl::StrCat("the modular LU got columns up to ", landed_,
                                                " of ", n_, " and factored ", done_));
    }
    absl::Status joined = clock_.Enter(kEnd, panel_.stream);
    if (joined.ok()) joined = Signal(factored_, panel_);
    if (joined.ok()) joined = Await(factored_, trailing_);
    if (joined.ok() && factor_open_) joined = clock_.Close(kFactor, trailing_.stream);
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
    panel_.fused = trailing_.fused;  // the panel's own products and leaf inverses too
    // Its products are at most kLeafWidth deep: fused and in one piece there, it needs no buffer.
    if (!LeafProductsFused(panel_.fused, largest_)) {
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
    }
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

  // Columns [landed_, end) are in place: every panel factored so far applies its work to them, in
  // order; then the panels wholly inside the landed columns are factored, their updates cut at
  // `end`.
  absl::Status Advance(int64_t end, JobControl* control, CheckInPacer& pacer) {
    if (end <= landed_ || end > n_ || (end < n_ && !staged_)) {
      return absl::InternalError(
          absl::StrCat("the modular LU got columns up to ", end, " after ", landed_, " of ", n_));
    }
    if (!factor_open_) {
      MATRIXD_RETURN_IF_ERROR(clock_.Open(kFactor, trailing_.stream));
      factor_open_ = true;
    }
    for (int64_t k = 0; k < done_; k += kPanelWidth) {
      MATRIXD_RETURN_IF_ERROR(
          ApplyPanel(k, std::min(kPanelWidth, n_ - k), landed_, end, /*moves=*/true, /*split=*/0));
    }
    landed_ = end;
    // The next panel waits for its columns (their residues, and the updates just queued).
    MATRIXD_RETURN_IF_ERROR(Signal(ready_, trailing_));
    const int64_t stop = FactorableEnd(done_, landed_, n_, kPanelWidth);
    while (done_ < stop) {
      const int64_t k = done_;
      const int64_t width = std::min(kPanelWidth, n_ - k);
      MATRIXD_RETURN_IF_ERROR(Await(ready_, panel_));
      MATRIXD_RETURN_IF_ERROR(FactorColumns(k, k + width, k, width));
      MATRIXD_RETURN_IF_ERROR(Signal(factored_, panel_));
      MATRIXD_RETURN_IF_ERROR(Await(factored_, trailing_));
      done_ = k + width;
      if (done_ >= landed_) continue;
      // Look-ahead: the next panel's columns first, then the panel lane may go on.
      MATRIXD_RETURN_IF_ERROR(ApplyPanel(k, width, done_, landed_, /*moves=*/look_ahead_,
                                         /*split=*/look_ahead_ ? kPanelWidth : 0));
      if (++panels_ % kPanelsPerCheckIn != 0) continue;
      if (landed_ == n_) {
        MATRIXD_RETURN_IF_ERROR(
            pacer.CheckIn(trailing_.stream, control, EliminationProgress(n_ - done_, n_)));
      } else if (IsCancelled(control)) {
        return absl::CancelledError("determinant cancelled");
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
  // of the panel, in the panel's pair (two pairs taken in turn, the previous panel's may still be
  // in use; staged, a pair per panel, each kept for the columns still to come).
  int Slot(int64_t panel, int64_t c) const {
    return static_cast<int>(2 * (panel / kPanelWidth % slot_pairs_) + (c == panel ? 0 : 1));
  }

  absl::Status FactorLeaf(int64_t panel, int64_t end, int64_t c, int w) {
    const cudaStream_t stream = panel_.stream;
    MATRIXD_RETURN_IF_ERROR(clock_.Enter(kPanel, stream));
    leaves_[static_cast<size_t>(panel / kPanelWidth)].push_back({c, w});
    // One launch factors and inverts the leaf; one more moves its pivot rows in the panel's
    // columns (and, without look-ahead, in the landed ones to its right).
    MATRIXD_RETURN_IF_ERROR(LaunchFactorLeaf(stream, batch_, c, w, scratch_, Slot(panel, c)));
    MATRIXD_RETURN_IF_ERROR(LaunchApplyLeafRows(stream, batch_, panel, look_ahead_ ? end : landed_,
                                                c, w, scratch_, Slot(panel, c)));
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

  // The panel [k, k + width) factored, its work on columns [lo, hi) right of it, on the context's
  // stream: its leaves' row moves there when `moves` (those FactorLeaf left: look-ahead, or
  // columns that landed after the panel), rows [k, k + width) of those columns become Y
  // (ApplyInverse) and the rows below take A22 -= A21 Y, the Schur complement's update A21 D^-1 A12
  // (tests/core/block_inverse_test.cc). With `split`, the first `split` columns (the next panel's)
  // first, then `ready_` lets the panel lane go on while the rest are updated.
  absl::Status ApplyPanel(int64_t k, int64_t width, int64_t lo, int64_t hi, bool moves,
                          int64_t split) {
    const int64_t j = k + width;
    const int64_t rows = n_ - j;
    const int64_t cols = hi - lo;
    if (moves) {
      MATRIXD_RETURN_IF_ERROR(clock_.Enter(kPanel, trailing_.stream));
      for (const auto& [c, w] : leaves_[static_cast<size_t>(k / kPanelWidth)]) {
        MATRIXD_RETURN_IF_ERROR(
            LaunchApplyLeafRows(trailing_.stream, batch_, lo, hi, c, w, scratch_, Slot(k, c)));
      }
    }
    MATRIXD_RETURN_IF_ERROR(ApplyInverse(trailing_, k, k, width, lo, cols));
    const int64_t first = split > 0 ? std::min(split, cols) : cols;
    MATRIXD_RETURN_IF_ERROR(SubtractProduct(trailing_, offset(j, k), offset(k, lo), offset(j, lo),
                                            rows, first, width, kGemm, kReduce));
    if (split > 0) MATRIXD_RETURN_IF_ERROR(Signal(ready_, trailing_));
    if (first == cols) return absl::OkStatus();
    return SubtractProduct(trailing_, offset(j, k), offset(k, lo + first), offset(j, lo + first),
                           rows, cols - first, width, kGemm, kReduce);
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
  // two pieces' sums into place; or, where the whole inverse's products sum exactly and the
  // products are fused, one kernel for both (LaunchFusedApplyInverse).
  absl::Status ApplyLeafInverse(const Lane& lane, int64_t panel, int64_t c, int w, int64_t j,
                                int64_t cols) {
    MATRIXD_RETURN_IF_ERROR(clock_.Enter(kPanel, lane.stream));
    const double* pieces = inverse_pieces_.as<double>() + Slot(panel, c) * kLeafInverseWords;
    const double k = static_cast<double>(w);
    const double m = static_cast<double>(cols);
    if (lane.fused && ProductPieces(largest_, w) == 1) {
      // The whole inverse times B sums exactly: one product, reduced in place.
      MATRIXD_RETURN_IF_ERROR(LaunchFusedApplyInverse(
          lane.stream, batch_,
          LeafInverses{.first = pieces, .matrix_stride = scratch_.slots * kLeafInverseWords}, w,
          offset(c, j), cols));
      work_.flops[kPanel] += batch_size() * 2.0 * k * k * m;
      work_.bytes[kPanel] +=
          static_cast<uint64_t>(batch_size() * (2.0 * k * k + 2.0 * k * m) * 8.0);
      return absl::OkStatus();
    }
    const double one = 1.0;
    const double zero = 0.0;
    // Row-major P (2w x cols) = [low; high] (2w x w) B (w x cols); column-major: P^T = B^T [..]^T.
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemmStridedBatched(
        lane.cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(cols), 2 * w, w, &one,
        a_ + offset(c, j), static_cast<int>(n_), static_cast<long long>(n_ * n_), pieces, w,
        static_cast<long long>(scratch_.slots * kLeafInverseWords), &zero, lane.apply_product,
        static_cast<int>(cols), static_cast<long long>(lane.apply_stride), batch_.count));
    MATRIXD_RETURN_IF_ERROR(LaunchReduceProduct(lane.stream, batch_, offset(c, j), w, cols,
                                                PieceProduct{.data = lane.apply_product,
                                                             .stride = lane.apply_stride,
                                                             .ld = cols,
                                                             .high_offset = w * cols},
                                                ProductUse::kAssign));
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
    if (lane.fused && ProductPieces(largest_, depth) == 1) {
      // |C| <= p / 2 and depth products below (p / 2)^2 each, as for the DGEMM below: the same
      // bits in one pass over C.
      MATRIXD_RETURN_IF_ERROR(LaunchFusedSubtractProduct(stream, batch_,
                                                         FusedProductBlocks{.a_offset = a_offset,
                                                                            .b_offset = b_offset,
                                                                            .c_offset = c_offset,
                                                                            .rows = rows,
                                                                            .cols = cols,
                                                                            .depth = depth}));
      work_.flops[gemm] += 2.0 * r * m * k;
      work_.bytes[gemm] +=
          static_cast<uint64_t>((r * k + batch_size() * k * m + 2.0 * r * m) * 8.0);
      return absl::OkStatus();
    }
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
  const bool staged_;
  const int64_t slot_pairs_;  // leaf slots / 2: one pair per panel kept (Slot)
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
  // (column, width) of each panel's leaves, by panel.
  std::vector<std::vector<std::pair<int64_t, int>>> leaves_;
  int64_t landed_ = 0;  // columns [0, landed_) in place
  int64_t done_ = 0;    // panels [0, done_) factored
  int64_t panels_ = 0;  // panels whose update was queued, for the check-ins
  bool factor_open_ = false;
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

// The LU of the residue matrices of `primes` at `residues`, their columns brought by `feed`
// (which may queue their conversion on the context's stream, given the batch's layout, before
// calling advance): det mod each prime. Closes the kTotal span. `staged`: BalancedLu's.
using ResidueFeed =
    absl::FunctionRef<absl::Status(const ResidueBatch& batch, BalancedLu::ColumnAdvance advance)>;
absl::StatusOr<std::vector<uint64_t>> FactorBatch(double* residues, int64_t n,
                                                  std::span<const uint64_t> primes,
                                                  DeviceContext& context, JobControl* control,
                                                  PhaseClock& clock, PhaseWork& work, bool staged,
                                                  ResidueFeed feed) {
  BalancedLu lu(context, primes, n, residues, clock, work, staged);
  MATRIXD_RETURN_IF_ERROR(lu.Prepare());
  MATRIXD_RETURN_IF_ERROR(lu.Run(
      control, [&](BalancedLu::ColumnAdvance advance) { return feed(lu.batch(), advance); }));
  MATRIXD_RETURN_IF_ERROR(clock.Enter(kEnd, context.stream()));
  MATRIXD_RETURN_IF_ERROR(clock.Close(kTotal, context.stream()));
  return lu.Determinants();
}

// Every matrix of `batch` := the residues of the int64 `entries` on the device (in place for a
// batch of one), then all columns at once.
absl::Status ConvertEntries(const int64_t* entries, const ResidueBatch& batch,
                            DeviceContext& context, PhaseClock& clock, PhaseWork& work,
                            BalancedLu::ColumnAdvance advance) {
  MATRIXD_RETURN_IF_ERROR(clock.Enter(kResidues, context.stream()));
  MATRIXD_RETURN_IF_ERROR(LaunchBalancedResidues(context.stream(), batch, entries));
  work.bytes[kResidues] +=
      2 * static_cast<uint64_t>(batch.count) * static_cast<uint64_t>(batch.n * batch.n) * 8;
  return advance(batch.n);
}

// Uploads the `count` int64 values at pageable `host` through `staging` and converts them to
// balanced residues mod p at `residues` piece by piece, each conversion queued as its piece lands
// (the host narrows or copies the next piece meanwhile); the factorization starts after the last
// (ModularLuTuning::overlap off). The pieces travel as int32 while the values fit: the host copy
// into pinned memory is the cost here, and narrowing writes half of it.
absl::Status StageResidues(PinnedStaging& staging, const int64_t* host, size_t count, uint64_t p,
                           double* residues, DeviceContext& context, PhaseWork& work) {
  const size_t slot_bytes = std::min(count, PinnedStaging::kPieceValues) * sizeof(int64_t);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer slots, context.Allocate(2 * slot_bytes));
  const BalancedModulus modulus = BalancedModulus::Of(p);
  return staging.UploadInPieces(
      host, count, PinnedStaging::kPieceValues, {slots.data(), slots.as<char>() + slot_bytes},
      [&](const PinnedStaging::LandedPiece& piece) -> absl::Status {
        const size_t width = piece.narrow ? sizeof(int32_t) : sizeof(int64_t);
        work.bytes[kResidues] += piece.count * (2 * width + sizeof(double));  // sent, read, written
        double* to = residues + piece.first;
        const auto length = static_cast<int64_t>(piece.count);
        return piece.narrow
                   ? LaunchBalancedResiduesOfValues(
                         piece.stream, modulus, static_cast<const int32_t*>(piece.data), length, to)
                   : LaunchBalancedResiduesOfValues(piece.stream, modulus,
                                                    static_cast<const int64_t*>(piece.data), length,
                                                    to);
      });
}

// The overlapped upload (ModularLuTuning::overlap): A (n x n at pageable `host`) through
// `staging` in pieces of `piece_rows` rows, each piece's residues mod p written transposed at
// `residues` on the staging's copy stream, so that rows [r0, r1) of A become columns [r0, r1) of
// the matrix factored (det A^T = det A); the context's stream waits for each piece and
// advance(r1) queues the factorization of what the landed columns allow, while the host copies the
// next piece and the copy stream moves it. The kResidues span runs from the first transfer to the
// last piece's conversion.
absl::Status StageTransposed(PinnedStaging& staging, const int64_t* host, int64_t n,
                             int64_t piece_rows, uint64_t p, double* residues,
                             DeviceContext& context, PhaseClock& clock, PhaseWork& work,
                             BalancedLu::ColumnAdvance advance) {
  const size_t count = static_cast<size_t>(n) * static_cast<size_t>(n);
  const size_t piece_values = static_cast<size_t>(piece_rows) * static_cast<size_t>(n);
  const size_t slot_bytes = std::min(count, piece_values) * sizeof(int64_t);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer slots, context.Allocate(2 * slot_bytes));
  MATRIXD_ASSIGN_OR_RETURN(CudaEvent landed, CudaEvent::Create());
  const BalancedModulus modulus = BalancedModulus::Of(p);
  MATRIXD_RETURN_IF_ERROR(clock.Open(kResidues, context.stream()));
  return staging.UploadInPieces(
      host, count, piece_values, {slots.data(), slots.as<char>() + slot_bytes},
      [&](const PinnedStaging::LandedPiece& piece) -> absl::Status {
        const size_t width = piece.narrow ? sizeof(int32_t) : sizeof(int64_t);
        work.bytes[kResidues] += piece.count * (2 * width + sizeof(double));  // sent, read, written
        const auto first_row = static_cast<int64_t>(piece.first) / n;
        const auto rows = static_cast<int64_t>(piece.count) / n;
        MATRIXD_RETURN_IF_ERROR(
            piece.narrow ? LaunchTransposedResiduesOfRows(piece.stream, modulus,
                                                          static_cast<const int32_t*>(piece.data),
                                                          rows, n, first_row, residues)
                         : LaunchTransposedResiduesOfRows(piece.stream, modulus,
                                                          static_cast<const int64_t*>(piece.data),
                                                          rows, n, first_row, residues));
        if (first_row + rows == n) MATRIXD_RETURN_IF_ERROR(clock.Close(kResidues, piece.stream));
        MATRIXD_RETURN_IF_ERROR(landed.Record(piece.stream));
        MATRIXD_RETURN_IF_ERROR(landed.MakeWait(context.stream()));
        return advance(first_row + rows);
      });
}

// det mod p for p < 2^32 (the header's first path): a batch of one. From pageable memory through
// `staging` (non-null): overlapped with the factorization (StageTransposed) or converted piece by
// piece before it (StageResidues); otherwise converted in place after a direct upload.
absl::StatusOr<uint64_t> BalancedLuDeterminant(const MatrixView& a, uint64_t p,
                                               PinnedStaging* staging, DeviceContext& context,
                                               JobControl* control, ComputeStats* stats) {
  const int64_t n = a.rows;
  const size_t count = static_cast<size_t>(n) * static_cast<size_t>(n);
  const size_t bytes = count * sizeof(int64_t);
  const ModularLuTuning tuning = GetModularLuTuning();
  const int64_t piece_rows =
      StagedPieceRows(n, tuning.piece_rows, static_cast<int64_t>(PinnedStaging::kPieceValues));
  // Pieces sized automatically overlap only where that pays; a size asked for always does.
  const bool overlap =
      staging != nullptr && tuning.overlap && (tuning.piece_rows > 0 || OverlapPays(n, piece_rows));
  PhaseClock clock;
  PhaseWork work;
  MATRIXD_RETURN_IF_ERROR(clock.Open(kTotal, context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer matrix, context.Allocate(bytes));
  const int64_t* host = a.As<int64_t>().data();
  auto overlapped = [&](const ResidueBatch&, BalancedLu::ColumnAdvance advance) {
    return StageTransposed(*staging, host, n, piece_rows, p, matrix.as<double>(), context, clock,
                           work, advance);
  };
  auto staged = [&](const ResidueBatch&, BalancedLu::ColumnAdvance advance) -> absl::Status {
    MATRIXD_RETURN_IF_ERROR(clock.Enter(kResidues, context.stream()));
    MATRIXD_RETURN_IF_ERROR(
        StageResidues(*staging, host, count, p, matrix.as<double>(), context, work));
    return advance(n);
  };
  auto direct = [&](const ResidueBatch& batch, BalancedLu::ColumnAdvance advance) -> absl::Status {
    MATRIXD_RETURN_IF_ERROR(clock.Enter(kResidues, context.stream()));
    MATRIXD_RETURN_IF_ERROR(context.Upload(host, matrix, bytes));
    work.bytes[kResidues] += bytes;  // uploaded
    return ConvertEntries(matrix.as<int64_t>(), batch, context, clock, work, advance);
  };
  const uint64_t primes[] = {p};
  MATRIXD_ASSIGN_OR_RETURN(
      std::vector<uint64_t> det,
      FactorBatch(matrix.as<double>(), n, primes, context, control, clock, work, overlap,
                  overlap              ? ResidueFeed(overlapped)
                  : staging != nullptr ? ResidueFeed(staged)
                                       : ResidueFeed(direct)));
  MATRIXD_ASSIGN_OR_RETURN(auto seconds, clock.Seconds());
  AddPhases(work, seconds, stats);
  return det[0];
}

// ModularLuDeterminant with the staging to take pageable entries through (null: a direct upload).
absl::StatusOr<DeterminantResult> ModularLuDeterminantThrough(const MatrixView& a, uint64_t p,
                                                              PinnedStaging* staging,
                                                              DeviceContext& context,
                                                              JobControl* control) {
  MATRIXD_RETURN_IF_ERROR(ValidateModularDeterminantInput(a, p));
  if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
  DeterminantResult result;
  result.method_used = DeterminantMethod::kLu;
  if (p < kBalancedResidueLimit) {
    MATRIXD_ASSIGN_OR_RETURN(result.residue,
                             BalancedLuDeterminant(a, p, staging, context, control, &result.stats));
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

}  // namespace

absl::StatusOr<DeterminantResult> ModularLuDeterminant(const MatrixView& a, uint64_t p,
                                                       DeviceContext& context,
                                                       JobControl* control) {
  MATRIXD_RETURN_IF_ERROR(ValidateModularDeterminantInput(a, p));
  const size_t bytes = static_cast<size_t>(a.rows) * static_cast<size_t>(a.rows) * sizeof(int64_t);
  return ModularLuDeterminantThrough(a, p, context.StagingFor(a.data, bytes), context, control);
}

absl::StatusOr<DeterminantResult> StagedModularLuDeterminant(const MatrixView& a, uint64_t p,
                                                             PinnedStaging& staging,
                                                             DeviceContext& context,
                                                             JobControl* control) {
  return ModularLuDeterminantThrough(a, p, &staging, context, control);
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
  MATRIXD_RETURN_IF_ERROR(clock.Open(kTotal, context.stream()));
  const size_t bytes =
      primes.size() * static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(double);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer matrices, context.Allocate(bytes));
  MATRIXD_ASSIGN_OR_RETURN(
      std::vector<uint64_t> residues,
      FactorBatch(matrices.as<double>(), n, primes, context, control, clock, work,
                  /*staged=*/false,
                  [&](const ResidueBatch& batch, BalancedLu::ColumnAdvance advance) {
                    return ConvertEntries(entries, batch, context, clock, work, advance);
                  }));
  MATRIXD_ASSIGN_OR_RETURN(auto seconds, clock.Seconds());
  AddPhases(work, seconds, stats);
  return residues;
}

void SetModularLuTuning(const ModularLuTuning& tuning) {
  look_ahead_setting.store(tuning.look_ahead, std::memory_order_relaxed);
  overlap_setting.store(tuning.overlap, std::memory_order_relaxed);
  piece_rows_setting.store(std::max<int64_t>(0, tuning.piece_rows), std::memory_order_relaxed);
  fused_products_setting.store(tuning.fused_products, std::memory_order_relaxed);
}

ModularLuTuning GetModularLuTuning() {
  return ModularLuTuning{.look_ahead = look_ahead_setting.load(std::memory_order_relaxed),
                         .overlap = overlap_setting.load(std::memory_order_relaxed),
                         .piece_rows = piece_rows_setting.load(std::memory_order_relaxed),
                         .fused_products = fused_products_setting.load(std::memory_order_relaxed)};
}

uint64_t ModularLuBatchBytesPerPrime(int64_t n, uint64_t largest_prime) {
  const uint64_t n2 = static_cast<uint64_t>(n) * static_cast<uint64_t>(n);
  uint64_t bytes = n2 * sizeof(double) + sizeof(BalancedModulus) + sizeof(ModularLuState) +
                   kLeafInverseSlots * kLeafRowWords * sizeof(int) +
                   kLeafInverseSlots * kLeafInverseWords * sizeof(double);
  // The panel lane's scratch under look-ahead (BalancedLu::PreparePanelLane), counted always, and
  // the leaf inverses' products: neither where the fused kernels take them.
  const bool leaves_fused =
      LeafProductsFused(fused_products_setting.load(std::memory_order_relaxed), largest_prime);
  if (!leaves_fused) {
    bytes += (2 * kLeafWidth * static_cast<uint64_t>(std::max(n, kLeafWidth)) +
              2 * kLeafWidth * kLeafWidth) *
             sizeof(double);
  }
  const uint64_t apply = leaves_fused ? 0 : 2 * kLeafWidth * static_cast<uint64_t>(n);
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
