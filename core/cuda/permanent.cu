// Permanents on the GPU: the host side of the walks in permanent_walks.cuh. The matrix is prepared
// by the code the CPU uses (core/cpu/permanent_preparation.h: rows scaled by powers of two, Glynn's
// base row sums in double-double, the same steps), the walk runs in slices of ~30 ms with a
// cancellation check and a progress report between slices, and the partial sums are combined on the
// device in a fixed order. INT64 matrices are walked modulo several primes of
// core/cpu/multimodular.h and the exact permanent is rebuilt by Chinese remaindering on the host,
// exactly as the CPU does.
//
// Speed floor. A walk of 2^bits terms (bits = n - 1 for Glynn, n for Ryser) updates n row sums
// and multiplies them at every term: at least 2^(n-1) * 2n FP64 instructions for Glynn (one add
// and one multiply per row), 3.2e10 at n = 30 and 4.4e13 at n = 40. An H100 SXM issues
// 132 SMs x 64 FP64 lanes x ~1.75 GHz = 1.5e13 FP64 instructions/s (its 34 TFLOPS count an FMA
// as two), so the floor is ~2 ms at n = 30 and ~3 s at n = 40, doubling with each n. Real walks
// spend per row and term (core/cpu/permanent_arithmetic.h): EXTENDED 4 instructions when every
// row sum is exact in double (1 add, a double-double product of 1 multiply + 2 FMAs), 11 when it
// is not (row sums in double-double by TwoSum, 7; products 4); FAST 2, the floor. Complex walks
// spend 6 per row and term (2 adds, a complex multiply) with plain double row sums restarted every
// 1024 terms. INT64 walks are integer-bound (a Montgomery product is four 64-bit multiplications)
// and run once per prime. Measured on an H100 80GB HBM3 before the precisions (device time of the
// walk, 11 instructions per row and term): real Glynn
// n = 30 16 ms, n = 32 65 ms, n = 34 0.28 s, 7.1-7.6x the floor; Ryser twice that; complex
// Glynn n = 32 43 ms (4.7x the real floor); INT64 Glynn n = 28 with entries below 1000, 7
// primes, 60 ms.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/multimodular.h"
#include "core/cpu/permanent_preparation.h"
#include "core/cuda/blocking_event.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/permanent.h"
#include "core/cuda/permanent_walks.cuh"
#include "core/walk_checkpoint.h"

namespace matrixd::cuda {
namespace {

// A thread's chunk is at least 2^kMinChunkLog2 terms (its start adds up to bits columns) and
// at most ~kThreadWork row-sum updates (one wave of chunks, the shortest possible slice, then
// takes a few ms); within those bounds the walk is cut into at least 2^kMinThreadsLog2 chunks,
// several waves of the ~34k threads an H100 holds at once.
constexpr int kMinChunkLog2 = 6;
constexpr int kMinThreadsLog2 = 16;
constexpr double kThreadWork = 1 << 19;
// Modular row-sum updates and products cost ~4x the floating-point ones.
constexpr double kModularCost = 4.0;
// The device time aimed at per slice: a cancel returns within about this long.
constexpr double kSliceSeconds = 0.03;

absl::Status Cancelled() { return absl::CancelledError("permanent cancelled"); }

// SetSparsePermanentHeadRows's value.
std::atomic<int> sparse_head_rows{-1};

int PaddedOrder(int n) {
  return std::max(kOrderStep, (n + kOrderStep - 1) / kOrderStep * kOrderStep);
}

// How a walk is cut into per-thread chunks and blocks.
struct WalkLayout {
  int bits = 0;
  int chunk_log2 = 0;
  uint64_t threads = 1;
  int64_t blocks = 1;
};

WalkLayout PlanWalk(int bits, int padded_order, double cost_per_update) {
  const int work_log2 =
      static_cast<int>(std::floor(std::log2(kThreadWork / (padded_order * cost_per_update))));
  int chunk_log2 = std::min(bits - kMinThreadsLog2, work_log2);
  chunk_log2 = std::min(std::max(chunk_log2, kMinChunkLog2), bits);
  WalkLayout layout;
  layout.bits = bits;
  layout.chunk_log2 = chunk_log2;
  layout.threads = uint64_t{1} << (bits - chunk_log2);
  layout.blocks = static_cast<int64_t>((layout.threads + kWalkThreads - 1) / kWalkThreads);
  return layout;
}

template <typename T>
absl::StatusOr<DeviceBuffer> UploadVector(DeviceContext& context, const std::vector<T>& values) {
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                           context.Allocate(std::max<size_t>(values.size(), 1) * sizeof(T)));
  MATRIXD_RETURN_IF_ERROR(context.Upload(values.data(), buffer, values.size() * sizeof(T)));
  return buffer;
}

// Share `index` of `count` equal shares of a walk's checkpoint items (a walk split over several
// GPUs).
struct WalkShare {
  int index = 0;
  int count = 1;
};

// Checkpoints (core/walk_checkpoint.h, --state_dir): a walk's blocks are grouped into at most
// kCheckpointItems items of consecutive blocks, whatever the device; each item's per-block
// partials are recorded once the slices have finished all its blocks, and a recorded item is
// restored instead of walked. The partials are combined as before, so a resumed walk gives the
// uninterrupted value bit for bit (with the same number of GPUs: shares are reduced apart).
constexpr int64_t kCheckpointItems = 256;

int64_t ItemBlocks(const WalkLayout& layout) {
  return (layout.blocks + kCheckpointItems - 1) / kCheckpointItems;
}

int64_t ItemCount(const WalkLayout& layout) {
  const int64_t item_blocks = ItemBlocks(layout);
  return (layout.blocks + item_blocks - 1) / item_blocks;
}

struct WalkCheckpointing {
  WalkCheckpoint* file = nullptr;  // null: no checkpoints
  int64_t first_item = 0;          // this walk's first item in the file (one walk per prime)
};

// The checkpoint of a walk of `walks` walks (primes) of `layout` and partials of `partial_bytes`
// each under state_dir, or null without a state_dir. `parameters` tell walks apart (see WalkKey).
absl::StatusOr<std::unique_ptr<WalkCheckpoint>> OpenCheckpoint(const std::string& state_dir,
                                                               const MatrixView& a,
                                                               std::vector<int64_t> parameters,
                                                               const WalkLayout& layout, int walks,
                                                               size_t partial_bytes) {
  if (state_dir.empty()) return nullptr;
  // "cuda": these partials are per block, not the CPU's per chunk.
  parameters.insert(parameters.end(), {0x637564, layout.bits, layout.chunk_log2, layout.blocks});
  return WalkCheckpoint::Open(state_dir, WalkKey(a, parameters), walks * ItemCount(layout),
                              static_cast<size_t>(ItemBlocks(layout)) * partial_bytes);
}

// Runs share `share` of the walk described by `data` (its partials buffer holds layout.blocks
// entries; the share's blocks are written at their walk-wide indices) slice by slice, then queues
// the combination of the share's partials into *total (device memory). Reports progress from
// progress_from to progress_to. CANCELLED between slices when asked. With a checkpoint, restores
// the share's recorded items and records the others as they finish.
template <typename Data>
absl::Status RunWalk(DeviceContext& context, const WalkLayout& layout, int padded_order,
                     const Data& data, typename Data::Partial* total, double progress_from,
                     double progress_to, JobControl* control, WalkShare share = {},
                     const WalkCheckpointing& checkpoint = {}) {
  using Partial = typename Data::Partial;
  const cudaStream_t stream = context.stream();
  const int64_t item_blocks = ItemBlocks(layout);
  const int64_t items = ItemCount(layout);
  const int64_t first_item = items * share.index / share.count;
  const int64_t end_item = items * (share.index + 1) / share.count;
  const auto item_first = [&](int64_t item) { return std::min(layout.blocks, item * item_blocks); };
  const int64_t first = item_first(first_item);
  const int64_t end = item_first(end_item);
  const auto recorded = [&](int64_t item) {
    return checkpoint.file != nullptr && checkpoint.file->done(checkpoint.first_item + item);
  };
  // An item's partials through the host: the whole item_blocks of them are what a record holds.
  std::vector<Partial> host(checkpoint.file != nullptr ? item_blocks : 0);
  const auto host_bytes = [&] { return std::as_writable_bytes(std::span<Partial>(host)); };
  int64_t finished = 0;  // blocks of the share walked or restored
  for (int64_t item = first_item; item < end_item; ++item) {
    if (!recorded(item)) continue;
    checkpoint.file->Load(checkpoint.first_item + item, host_bytes());
    const int64_t blocks = item_first(item + 1) - item_first(item);
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(data.partials + item_first(item), host.data(),
                                                 blocks * sizeof(Partial), cudaMemcpyHostToDevice,
                                                 stream));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));  // `host` is reused
    finished += blocks;
  }

  int per_multiprocessor = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      WalkBlocksPerMultiprocessor<Data>(padded_order, layout.bits, &per_multiprocessor));
  const int64_t wave =
      std::max<int64_t>(1, int64_t{per_multiprocessor} * context.properties().multiProcessorCount);
  MATRIXD_ASSIGN_OR_RETURN(BlockingEvent slice_done, BlockingEvent::Create());
  // The first slice is one wave; later ones are scaled by the time the last one took, so that
  // the slices last ~kSliceSeconds on any device and at any order.
  constexpr int64_t kMaxSliceBlocks = int64_t{1} << 30;
  int64_t slice_blocks = wave;
  // Runs of consecutive items not recorded, each walked slice by slice.
  for (int64_t run = first_item; run < end_item;) {
    if (recorded(run)) {
      ++run;
      continue;
    }
    int64_t run_end = run;
    while (run_end < end_item && !recorded(run_end)) ++run_end;
    int64_t next_record = run;  // the first item of the run not yet recorded
    for (int64_t done = item_first(run); done < item_first(run_end);) {
      if (IsCancelled(control)) return Cancelled();
      const int64_t count = std::min(slice_blocks, item_first(run_end) - done);
      const WalkSlice slice{layout.bits, layout.chunk_log2, layout.threads, done};
      const auto start = std::chrono::steady_clock::now();
      MATRIXD_CUDA_RETURN_IF_ERROR(LaunchWalk(padded_order, slice, count, data, stream));
      MATRIXD_RETURN_IF_ERROR(slice_done.WaitFor(stream));
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      done += count;
      finished += count;
      ReportProgress(control, progress_from + (progress_to - progress_from) *
                                                  static_cast<double>(finished) /
                                                  static_cast<double>(end - first));
      for (; checkpoint.file != nullptr && next_record < run_end &&
             item_first(next_record + 1) <= done;
           ++next_record) {
        const int64_t blocks = item_first(next_record + 1) - item_first(next_record);
        MATRIXD_CUDA_RETURN_IF_ERROR(
            cudaMemcpyAsync(host.data(), data.partials + item_first(next_record),
                            blocks * sizeof(Partial), cudaMemcpyDeviceToHost, stream));
        MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
        MATRIXD_RETURN_IF_ERROR(
            checkpoint.file->Record(checkpoint.first_item + next_record, host_bytes()));
      }
      const double scale = std::clamp(kSliceSeconds / std::max(seconds, 1e-6), 0.25, 4.0);
      slice_blocks = std::clamp<int64_t>(
          static_cast<int64_t>(static_cast<double>(count) * scale) / wave * wave, wave,
          kMaxSliceBlocks);
    }
    run = run_end;
  }
  Data share_partials = data;
  share_partials.partials += first;
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchReducePartials(share_partials, end - first, total, stream));
  return absl::OkStatus();
}

// ---- Floating-point matrices: prepared by core/cpu/permanent_preparation.h ----

// The walk's steps (bits x padded_order) and base (padded_order), of which rows n..padded_order-1
// are padding: base 1, steps 0.
template <typename T>
struct FloatPlan {
  std::vector<T> steps;         // bits x padded_order
  std::vector<T> base;          // padded_order
  std::vector<double> base_lo;  // real walks: base - fl(base)
};

template <typename T>
FloatPlan<T> NewFloatPlan(int n, int padded_order, PermanentMethod method) {
  FloatPlan<T> plan;
  plan.steps.assign(static_cast<size_t>(cpu::PermanentWalkBits(n, method)) * padded_order, T(0));
  plan.base.assign(padded_order, T(1));
  plan.base_lo.assign(padded_order, 0.0);
  return plan;
}

std::vector<double2> ToDouble2(const std::vector<std::complex<double>>& values) {
  std::vector<double2> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = make_double2(values[i].real(), values[i].imag());
  return out;
}

struct WalkOutcome {
  std::complex<double> sum;      // the sum of the terms, before sign and scale
  double walk_seconds = 0.0;     // device time between events around the walk's kernels
  ComplexDoubleDouble dd_sum{};  // `sum` before rounding to doubles (real walks: im 0)
};

// Runs `walk` on each of `contexts` at once, share i of contexts.size() on context i from a thread
// of its own (one context: the whole walk, on this thread), and returns the outcomes in share
// order, or the failure of the first share that failed, naming the share and its device.
template <typename Outcome>
absl::StatusOr<std::vector<Outcome>> WalkShares(
    std::span<DeviceContext* const> contexts,
    const std::function<absl::StatusOr<Outcome>(DeviceContext&, WalkShare)>& walk) {
  const int count = static_cast<int>(contexts.size());
  if (count == 1) {
    MATRIXD_ASSIGN_OR_RETURN(Outcome whole, walk(*contexts[0], WalkShare{}));
    std::vector<Outcome> outcomes;
    outcomes.push_back(std::move(whole));
    return outcomes;
  }
  std::vector<absl::StatusOr<Outcome>> shares(count, absl::UnknownError("not run"));
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < count; ++i) {
      threads.emplace_back([&, i] {
        // A new thread starts on device 0: the context's stream and memory are on its own.
        // (void): nvcc warns that StatusOr's assignment result, a nodiscard type, is unused.
        if (absl::Status active = contexts[i]->Activate(); !active.ok()) {
          static_cast<void>(shares[i] = active);
          return;
        }
        static_cast<void>(shares[i] = walk(*contexts[i], WalkShare{i, count}));
      });
    }
  }
  std::vector<Outcome> outcomes;
  for (int i = 0; i < count; ++i) {
    if (!shares[i].ok()) {
      return absl::Status(shares[i].status().code(),
                          absl::StrCat("share ", i, " of ", count, " (device ",
                                       contexts[i]->device(), "): ", shares[i].status().message()));
    }
    outcomes.push_back(*std::move(shares[i]));
  }
  return outcomes;
}

// The floating-point walk's shares combined: their double-double sums added in share order (real
// and imaginary parts apart), so that the value does not depend on the timing; walk_seconds is the
// slowest share's. One share: its own outcome.
WalkOutcome CombineShares(const std::vector<WalkOutcome>& shares) {
  if (shares.size() == 1) return shares[0];
  WalkOutcome outcome;
  for (const WalkOutcome& share : shares) {
    outcome.dd_sum.re = walk::AddDd(outcome.dd_sum.re, share.dd_sum.re.hi, share.dd_sum.re.lo);
    outcome.dd_sum.im = walk::AddDd(outcome.dd_sum.im, share.dd_sum.im.hi, share.dd_sum.im.lo);
    outcome.walk_seconds = std::max(outcome.walk_seconds, share.walk_seconds);
  }
  outcome.sum = {outcome.dd_sum.re.hi + outcome.dd_sum.re.lo,
                 outcome.dd_sum.im.hi + outcome.dd_sum.im.lo};
  return outcome;
}

// The real walk's steps with its base and the sparse walk's block masks after them
// (core/cuda/permanent_walks.cuh's RealWalkData layout): bits x padded_order, base hi, base lo,
// then padded_order words of which the first bits are the masks, bit-cast to double.
std::vector<double> MakeRealWalkInputs(const std::vector<double>& a, int n, int padded_order,
                                       PermanentMethod method) {
  FloatPlan<double> plan = NewFloatPlan<double>(n, padded_order, method);
  cpu::FillPermanentWalk(a, n, method, padded_order, plan.steps, plan.base, plan.base_lo);
  std::vector<double> inputs = std::move(plan.steps);
  inputs.insert(inputs.end(), plan.base.begin(), plan.base.end());
  inputs.insert(inputs.end(), plan.base_lo.begin(), plan.base_lo.end());
  std::vector<double> masks(padded_order, 0.0);
  const std::vector<uint64_t> block_masks = cpu::PermanentBlockMasks(a, n, method);
  static_assert(cpu::kPermanentBlockRows == 4);  // the kernels' blocks
  for (size_t b = 0; b < block_masks.size(); ++b) masks[b] = std::bit_cast<double>(block_masks[b]);
  inputs.insert(inputs.end(), masks.begin(), masks.end());
  return inputs;
}

// Which real walk runs: dense, the block walk (sparse, head.head_rows 0) or the head walk.
struct RealWalkKind {
  bool sparse = false;
  cpu::HeadWalkPlan head;
};

// The sparse walk of the ordered matrix a: the head walk with SetSparsePermanentHeadRows's head
// rows, or by default the one of cpu::ChooseHeadWalk (straight-line code, which runs near the
// FP64 rate as the dense walk does, where the block walk's branches cost ~3 x its count); the
// block walk where no head size fits.
RealWalkKind SparseWalkKind(const std::vector<double>& a, int n, PermanentMethod method,
                            walk::RealArithmetic arithmetic) {
  RealWalkKind kind{true, {}};
  const int asked = sparse_head_rows.load(std::memory_order_relaxed);
  if (asked < 0) {
    kind.head = cpu::ChooseHeadWalk(a, n, method, arithmetic);
  } else if (std::ranges::find(walk::kHeadWalkRows, asked) != std::end(walk::kHeadWalkRows)) {
    kind.head = cpu::PlanHeadWalk(a, n, method, arithmetic, asked);
  }
  return kind;
}

// Runs the real walk of arithmetic A (dense, block or head) on uploaded inputs.
template <walk::RealArithmetic A, bool kSparse, int kHead>
absl::Status RunRealWalk(DeviceContext& context, const WalkLayout& layout, int padded_order,
                         int head_bits, const DeviceBuffer& steps, const DeviceBuffer& partials,
                         const DeviceBuffer& total, JobControl* control, WalkShare share,
                         const WalkCheckpointing& checkpoint) {
  const RealWalkData<A, kSparse, kHead> data{steps.as<double>(), partials.as<DoubleDouble>(),
                                             head_bits};
  return RunWalk(context, layout, padded_order, data, total.as<DoubleDouble>(), 0.0, 1.0, control,
                 share, checkpoint);
}

// The head walk's kernels for head rows kHeadWalkRows[kIndex] and up.
template <walk::RealArithmetic A, size_t kIndex = 0>
absl::Status RunHeadWalk(int head_rows, int head_bits, DeviceContext& context,
                         const WalkLayout& layout, int padded_order, const DeviceBuffer& steps,
                         const DeviceBuffer& partials, const DeviceBuffer& total,
                         JobControl* control, WalkShare share,
                         const WalkCheckpointing& checkpoint) {
  constexpr int kHead = walk::kHeadWalkRows[kIndex];
  if (head_rows != kHead) {
    // Every instantiation uses every parameter (nvcc's host code keeps no discarded branch).
    if constexpr (kIndex + 1 < std::size(walk::kHeadWalkRows)) {
      return RunHeadWalk<A, kIndex + 1>(head_rows, head_bits, context, layout, padded_order, steps,
                                        partials, total, control, share, checkpoint);
    }
    return absl::InternalError(absl::StrCat("no head permanent walk of ", head_rows, " rows"));
  }
  return RunRealWalk<A, true, kHead>(context, layout, padded_order, head_bits, steps, partials,
                                     total, control, share, checkpoint);
}

template <walk::RealArithmetic A>
absl::Status RunRealWalk(const RealWalkKind& kind, DeviceContext& context, const WalkLayout& layout,
                         int padded_order, const DeviceBuffer& steps, const DeviceBuffer& partials,
                         const DeviceBuffer& total, JobControl* control, WalkShare share,
                         const WalkCheckpointing& checkpoint) {
  if (!kind.sparse) {
    return RunRealWalk<A, false, 0>(context, layout, padded_order, 0, steps, partials, total,
                                    control, share, checkpoint);
  }
  if (kind.head.head_rows == 0) {
    return RunRealWalk<A, true, 0>(context, layout, padded_order, 0, steps, partials, total,
                                   control, share, checkpoint);
  }
  return RunHeadWalk<A>(kind.head.head_rows, kind.head.head_bits, context, layout, padded_order,
                        steps, partials, total, control, share, checkpoint);
}

// The sum of the terms of share `share` of the walk of a (row-normalised, for the sparse walk
// column-ordered) real matrix, at `arithmetic`.
absl::StatusOr<WalkOutcome> Walk(const std::vector<double>& a, int n, PermanentMethod method,
                                 walk::RealArithmetic arithmetic, const RealWalkKind& kind,
                                 DeviceContext& context, JobControl* control, WalkShare share,
                                 const WalkCheckpointing& checkpoint) {
  const int padded_order = PaddedOrder(n);
  const WalkLayout layout = PlanWalk(cpu::PermanentWalkBits(n, method), padded_order, 1.0);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer steps,
                           UploadVector(context, MakeRealWalkInputs(a, n, padded_order, method)));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer partials,
      context.Allocate(static_cast<size_t>(layout.blocks) * sizeof(DoubleDouble)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer total, context.Allocate(sizeof(DoubleDouble)));
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  MATRIXD_RETURN_IF_ERROR(timer.Start(context.stream()));
  switch (arithmetic) {
    case walk::RealArithmetic::kDoubleDoubleRows:
      MATRIXD_RETURN_IF_ERROR(RunRealWalk<walk::RealArithmetic::kDoubleDoubleRows>(
          kind, context, layout, padded_order, steps, partials, total, control, share, checkpoint));
      break;
    case walk::RealArithmetic::kExactRows:
      MATRIXD_RETURN_IF_ERROR(RunRealWalk<walk::RealArithmetic::kExactRows>(
          kind, context, layout, padded_order, steps, partials, total, control, share, checkpoint));
      break;
    case walk::RealArithmetic::kFast:
      MATRIXD_RETURN_IF_ERROR(RunRealWalk<walk::RealArithmetic::kFast>(
          kind, context, layout, padded_order, steps, partials, total, control, share, checkpoint));
      break;
  }
  MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
  DoubleDouble sum{0.0, 0.0};
  MATRIXD_RETURN_IF_ERROR(context.Download(total, &sum, sizeof(sum)));
  MATRIXD_ASSIGN_OR_RETURN(double seconds, timer.Seconds());
  return WalkOutcome{sum.hi + sum.lo, seconds, {sum, {0.0, 0.0}}};
}

// The real walk split into equal shares over `contexts` (WalkShares, CombineShares).
absl::StatusOr<WalkOutcome> SplitWalk(const std::vector<double>& a, int n, PermanentMethod method,
                                      walk::RealArithmetic arithmetic, const RealWalkKind& kind,
                                      std::span<DeviceContext* const> contexts, JobControl* control,
                                      WalkCheckpointing checkpoint) {
  MATRIXD_ASSIGN_OR_RETURN(
      const std::vector<WalkOutcome> shares,
      WalkShares<WalkOutcome>(contexts, [&](DeviceContext& context, WalkShare share) {
        return Walk(a, n, method, arithmetic, kind, context, control, share, checkpoint);
      }));
  return CombineShares(shares);
}

// The sum of the terms of share `share` of the walk of a (row-normalised) complex matrix.
absl::StatusOr<WalkOutcome> Walk(const std::vector<std::complex<double>>& a, int n,
                                 PermanentMethod method, DeviceContext& context,
                                 JobControl* control, WalkShare share,
                                 const WalkCheckpointing& checkpoint) {
  const int padded_order = PaddedOrder(n);
  FloatPlan<std::complex<double>> plan =
      NewFloatPlan<std::complex<double>>(n, padded_order, method);
  cpu::FillPermanentWalk(a, n, method, padded_order, plan.steps, plan.base);
  const WalkLayout layout = PlanWalk(cpu::PermanentWalkBits(n, method), padded_order, 1.0);
  std::vector<std::complex<double>> steps_and_base = plan.steps;
  steps_and_base.insert(steps_and_base.end(), plan.base.begin(), plan.base.end());
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer steps, UploadVector(context, ToDouble2(steps_and_base)));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer partials,
      context.Allocate(static_cast<size_t>(layout.blocks) * sizeof(ComplexDoubleDouble)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer total, context.Allocate(sizeof(ComplexDoubleDouble)));
  const ComplexWalkData data{steps.as<double2>(), partials.as<ComplexDoubleDouble>()};
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  MATRIXD_RETURN_IF_ERROR(timer.Start(context.stream()));
  MATRIXD_RETURN_IF_ERROR(RunWalk(context, layout, padded_order, data,
                                  total.as<ComplexDoubleDouble>(), 0.0, 1.0, control, share,
                                  checkpoint));
  MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
  ComplexDoubleDouble sum{};
  MATRIXD_RETURN_IF_ERROR(context.Download(total, &sum, sizeof(sum)));
  MATRIXD_ASSIGN_OR_RETURN(double seconds, timer.Seconds());
  return WalkOutcome{{sum.re.hi + sum.re.lo, sum.im.hi + sum.im.lo}, seconds, sum};
}

// The real permanent: sign * 2^exponent * (sum of the walk's terms). Sets result->walk_used.
absl::StatusOr<std::complex<double>> RealPermanent(const MatrixView& a, int n,
                                                   const PermanentOptions& options,
                                                   std::span<DeviceContext* const> contexts,
                                                   JobControl* control, PermanentResult* result,
                                                   const std::string& state_dir,
                                                   double* walk_seconds) {
  const PermanentMethod method = result->method_used;
  MATRIXD_ASSIGN_OR_RETURN(cpu::ScaledRows<double> rows, cpu::ScalePermanentRows<double>(a));
  if (rows.zero_row) {
    result->walk_used =
        options.walk == PermanentWalk::kSparse ? PermanentWalk::kSparse : PermanentWalk::kDense;
    return std::complex<double>(0.0);
  }
  // The walk by the estimate of core/cpu/permanent_preparation.h, priced as the GPU's sparse walk
  // runs (the head walk where a head fits).
  const walk::RealArithmetic arithmetic =
      cpu::ChooseRealWalkArithmetic(rows.entries, n, options.precision, method).arithmetic();
  result->walk_used =
      cpu::PrepareRealPermanentWalk(rows.entries, n, method, arithmetic, options.walk,
                                    cpu::kSparsePermanentCostRatio, cpu::SparseWalkCostModel::kGpu);
  const RealWalkKind kind = result->walk_used == PermanentWalk::kSparse
                                ? SparseWalkKind(rows.entries, n, method, arithmetic)
                                : RealWalkKind{};
  // The walk's parameters that change its partials (a checkpoint of another walk is not resumed);
  // 2: the block walk (rows and columns ordered, block products); 1000 + head rows: the head
  // walk.
  const int64_t walk_key = !kind.sparse               ? 0
                           : kind.head.head_rows == 0 ? 2
                                                      : 1000 + kind.head.head_rows;
  MATRIXD_ASSIGN_OR_RETURN(
      std::unique_ptr<WalkCheckpoint> checkpoint,
      OpenCheckpoint(state_dir, a,
                     {0, static_cast<int64_t>(method), static_cast<int64_t>(arithmetic), walk_key},
                     PlanWalk(cpu::PermanentWalkBits(n, method), PaddedOrder(n), 1.0), 1,
                     sizeof(DoubleDouble)));
  MATRIXD_ASSIGN_OR_RETURN(WalkOutcome outcome,
                           SplitWalk(rows.entries, n, method, arithmetic, kind, contexts, control,
                                     {checkpoint.get(), 0}));
  if (checkpoint != nullptr) checkpoint->Remove();
  *walk_seconds = outcome.walk_seconds;
  return cpu::FloatPermanentValue(outcome.sum, n, method, rows.exponent);
}

// The complex permanent (one precision, the dense walk), its walk split over `contexts`
// (WalkShares, CombineShares).
absl::StatusOr<std::complex<double>> ComplexPermanent(
    const MatrixView& a, int n, PermanentMethod method, std::span<DeviceContext* const> contexts,
    JobControl* control, const std::string& state_dir, double* walk_seconds) {
  MATRIXD_ASSIGN_OR_RETURN(const cpu::ScaledRows<std::complex<double>> rows,
                           cpu::ScalePermanentRows<std::complex<double>>(a));
  if (rows.zero_row) return std::complex<double>(0.0);
  MATRIXD_ASSIGN_OR_RETURN(
      std::unique_ptr<WalkCheckpoint> checkpoint,
      OpenCheckpoint(state_dir, a, {1, static_cast<int64_t>(method)},
                     PlanWalk(cpu::PermanentWalkBits(n, method), PaddedOrder(n), 1.0), 1,
                     sizeof(ComplexDoubleDouble)));
  const WalkCheckpointing checkpointing{checkpoint.get(), 0};
  MATRIXD_ASSIGN_OR_RETURN(
      const std::vector<WalkOutcome> shares,
      WalkShares<WalkOutcome>(contexts, [&](DeviceContext& context, WalkShare share) {
        return Walk(rows.entries, n, method, context, control, share, checkpointing);
      }));
  if (checkpoint != nullptr) checkpoint->Remove();
  const WalkOutcome outcome = CombineShares(shares);
  *walk_seconds = outcome.walk_seconds;
  return cpu::FloatPermanentValue(outcome.sum, n, method, rows.exponent);
}

// ---- INT64: the walk modulo primes ----

// -p^-1 mod 2^64 by Newton's iteration (p p = 1 mod 8 gives 3 bits; each step doubles them).
uint64_t NegativeInverse(uint64_t p) {
  uint64_t inverse = p;
  for (int i = 0; i < 5; ++i) inverse *= 2 - p * inverse;
  return uint64_t{0} - inverse;
}

// 2^64 mod p, the Montgomery form of 1.
uint64_t MontgomeryOne(uint64_t p) { return (~uint64_t{0} % p + 1) % p; }

struct ExactPermanent {
  std::string decimal;
  ExactCertificate certificate;
  double walk_seconds = 0.0;
};

// One share's sum of each prime's walk (Montgomery form, mod that prime).
struct ModularOutcome {
  std::vector<uint64_t> sums;
  double walk_seconds = 0.0;
};

// The exact permanent, each prime's walk split over `contexts` (WalkShares); the shares' sums are
// added mod the prime, so the value is the one GPU's exactly.
absl::StatusOr<ExactPermanent> IntegerPermanent(const MatrixView& a, int n, PermanentMethod method,
                                                std::span<DeviceContext* const> contexts,
                                                JobControl* control, const std::string& state_dir) {
  const std::span<const int64_t> m = a.As<int64_t>();
  const std::vector<uint64_t> primes = cpu::PermanentPrimes(m, n);
  if (primes.empty()) return ExactPermanent{"0", ZeroRowCertificate(), 0.0};
  const int prime_count = static_cast<int>(primes.size());
  const int padded_order = PaddedOrder(n);
  const int bits = cpu::PermanentWalkBits(n, method);
  const WalkLayout layout = PlanWalk(bits, padded_order, kModularCost);

  // The steps and bases of every prime, prime q's at [q * size, (q + 1) * size).
  const size_t step_count = static_cast<size_t>(bits) * padded_order;
  std::vector<uint64_t> steps(step_count * prime_count, 0);
  std::vector<uint64_t> base(static_cast<size_t>(padded_order) * prime_count, 0);
  for (int q = 0; q < prime_count; ++q) {
    const uint64_t p = primes[q];
    const std::span<uint64_t> prime_steps(steps.data() + q * step_count, step_count);
    const std::span<uint64_t> prime_base(base.data() + static_cast<size_t>(q) * padded_order,
                                         padded_order);
    cpu::FillModularPermanentWalk(m, n, method, p, padded_order, prime_steps, prime_base);
    // Padding multiplies by R mod p, the Montgomery 1, so the product keeps R^-(n-1).
    for (int i = n; i < padded_order; ++i) prime_base[i] = MontgomeryOne(p);
  }
  // One file for every prime's walk, prime q's items after those of the primes before it.
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<WalkCheckpoint> checkpoint,
                           OpenCheckpoint(state_dir, a, {2, static_cast<int64_t>(method)}, layout,
                                          prime_count, sizeof(uint64_t)));
  const auto walk_share = [&](DeviceContext& context,
                              WalkShare share) -> absl::StatusOr<ModularOutcome> {
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_steps, UploadVector(context, steps));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_base, UploadVector(context, base));
    MATRIXD_ASSIGN_OR_RETURN(
        DeviceBuffer partials,
        context.Allocate(static_cast<size_t>(layout.blocks) * sizeof(uint64_t)));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer sums, context.Allocate(primes.size() * sizeof(uint64_t)));
    MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
    MATRIXD_RETURN_IF_ERROR(timer.Start(context.stream()));
    for (int q = 0; q < prime_count; ++q) {
      const ModularWalkData data{device_steps.as<uint64_t>() + q * step_count,
                                 device_base.as<uint64_t>() + static_cast<size_t>(q) * padded_order,
                                 primes[q], NegativeInverse(primes[q]), partials.as<uint64_t>()};
      // Each prime's walk reuses the partials buffer: stream order keeps the reduction of one
      // before the walk of the next.
      MATRIXD_RETURN_IF_ERROR(RunWalk(context, layout, padded_order, data, sums.as<uint64_t>() + q,
                                      static_cast<double>(q) / prime_count,
                                      static_cast<double>(q + 1) / prime_count, control, share,
                                      {checkpoint.get(), q * ItemCount(layout)}));
    }
    MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
    ModularOutcome outcome{std::vector<uint64_t>(primes.size()), 0.0};
    MATRIXD_RETURN_IF_ERROR(
        context.Download(sums, outcome.sums.data(), outcome.sums.size() * sizeof(uint64_t)));
    MATRIXD_ASSIGN_OR_RETURN(outcome.walk_seconds, timer.Seconds());
    return outcome;
  };
  MATRIXD_ASSIGN_OR_RETURN(const std::vector<ModularOutcome> shares,
                           WalkShares<ModularOutcome>(contexts, walk_share));
  if (checkpoint != nullptr) checkpoint->Remove();
  // Residues below p < 2^62: a sum of two fits 64 bits.
  std::vector<uint64_t> residues(primes.size(), 0);
  double walk_seconds = 0.0;
  for (const ModularOutcome& share : shares) {
    for (int q = 0; q < prime_count; ++q) residues[q] = (residues[q] + share.sums[q]) % primes[q];
    walk_seconds = std::max(walk_seconds, share.walk_seconds);
  }
  for (int q = 0; q < prime_count; ++q) {
    residues[q] = cpu::ModularPermanentValue(residues[q], n, method, primes[q]);
  }
  std::string decimal = cpu::ReconstructSigned(residues, primes);
  return ExactPermanent{
      std::move(decimal),
      cpu::PermanentCertificate(m, n, method, primes, std::move(residues), " on the GPU"),
      walk_seconds};
}

// The walk's kernel name for stats.kernels: method, kind, and for real walks the precision and
// the sparse walk (permanent_glynn_real_fast_sparse_walk).
std::string WalkName(const PermanentResult& result, DType dtype) {
  const char* method = result.method_used == PermanentMethod::kRyser ? "ryser" : "glynn";
  if (dtype == DType::kInt64) return absl::StrCat("permanent_", method, "_modular_walk");
  if (IsComplex(dtype)) return absl::StrCat("permanent_", method, "_complex_walk");
  return absl::StrCat("permanent_", method, "_real",
                      result.precision_used == PermanentPrecision::kFast ? "_fast" : "",
                      result.walk_used == PermanentWalk::kSparse ? "_sparse" : "", "_walk");
}

}  // namespace

void SetSparsePermanentHeadRows(int head_rows) {
  sparse_head_rows.store(head_rows, std::memory_order_relaxed);
}

absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                          DeviceContext& context, JobControl* control,
                                          const std::string& state_dir) {
  DeviceContext* const contexts[] = {&context};
  return Permanent(a, options, contexts, control, state_dir);
}

absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                          std::span<DeviceContext* const> contexts,
                                          JobControl* control, const std::string& state_dir) {
  static_assert(kMaxPermanentOrder == kMaxWalkOrder);
  if (contexts.empty()) return absl::InvalidArgumentError("the CUDA permanent: no device");
  MATRIXD_RETURN_IF_ERROR(cpu::CheckPermanentInput(a, kMaxWalkOrder, "the CUDA permanent"));
  if (IsCancelled(control)) return Cancelled();
  const int n = static_cast<int>(a.rows);

  PermanentResult result = cpu::NewPermanentResult(a, options);

  double walk_seconds = 0.0;
  if (a.dtype == DType::kInt64) {
    MATRIXD_ASSIGN_OR_RETURN(ExactPermanent exact, IntegerPermanent(a, n, result.method_used,
                                                                    contexts, control, state_dir));
    // The exact value is the truth; `value` is its nearest double.
    cpu::SetExactPermanent(std::move(exact.decimal), std::move(exact.certificate), &result);
    walk_seconds = exact.walk_seconds;
  } else {
    MATRIXD_ASSIGN_OR_RETURN(
        std::complex<double> value,
        IsComplex(a.dtype)
            ? ComplexPermanent(a, n, result.method_used, contexts, control, state_dir,
                               &walk_seconds)
            : RealPermanent(a, n, options, contexts, control, &result, state_dir, &walk_seconds));
    result.value = value;
  }
  if (walk_seconds > 0.0) {
    result.stats.kernels.push_back(
        KernelRecord{WalkName(result, a.dtype), walk_seconds, a.byte_size(), result.stats.flops});
  }
  ReportProgress(control, 1.0);
  return result;
}

}  // namespace matrixd::cuda
