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
// spend 11 instructions per row and term instead of 2 (x5.5): row sums in double-double (TwoSum,
// 7) and products in double-double (4 per factor), because Ryser's terms cancel by up to 10
// orders of magnitude and a plain double walk loses that many digits. Complex walks spend 6 per
// row and term (2 adds, a complex multiply) with plain double row sums restarted every 1024
// terms. INT64 walks are integer-bound (a Montgomery product is four 64-bit multiplications) and
// run once per prime. Measured on an H100 80GB HBM3 (device time of the walk): real Glynn
// n = 30 16 ms, n = 32 65 ms, n = 34 0.28 s, 7.1-7.6x the floor; Ryser twice that; complex
// Glynn n = 32 43 ms (4.7x the real floor); INT64 Glynn n = 28 with entries below 1000, 7
// primes, 60 ms.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cpu/multimodular.h"
#include "core/cpu/permanent_preparation.h"
#include "core/cuda/blocking_event.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/permanent.h"
#include "core/cuda/permanent_walks.cuh"

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

// Runs the walk described by `data` (its partials buffer holds layout.blocks entries) slice by
// slice, then queues the combination of the partials into *total (device memory). Reports
// progress from progress_from to progress_to. CANCELLED between slices when asked.
template <typename Data>
absl::Status RunWalk(DeviceContext& context, const WalkLayout& layout, int padded_order,
                     const Data& data, typename Data::Partial* total, double progress_from,
                     double progress_to, JobControl* control) {
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
  for (int64_t done = 0; done < layout.blocks;) {
    if (IsCancelled(control)) return Cancelled();
    const int64_t count = std::min(slice_blocks, layout.blocks - done);
    const WalkSlice slice{layout.bits, layout.chunk_log2, layout.threads, done};
    const auto start = std::chrono::steady_clock::now();
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchWalk(padded_order, slice, count, data, context.stream()));
    MATRIXD_RETURN_IF_ERROR(slice_done.WaitFor(context.stream()));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    done += count;
    ReportProgress(control, progress_from + (progress_to - progress_from) *
                                                static_cast<double>(done) /
                                                static_cast<double>(layout.blocks));
    const double scale = std::clamp(kSliceSeconds / std::max(seconds, 1e-6), 0.25, 4.0);
    slice_blocks =
        std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(count) * scale) / wave * wave,
                            wave, kMaxSliceBlocks);
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchReducePartials(data, layout.blocks, total, context.stream()));
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
  std::complex<double> sum;   // the sum of the terms, before sign and scale
  double walk_seconds = 0.0;  // device time between events around the walk's kernels
};

// The sum of the terms of the walk of a (row-normalised) real matrix.
absl::StatusOr<WalkOutcome> Walk(const std::vector<double>& a, int n, PermanentMethod method,
                                 DeviceContext& context, JobControl* control) {
  const int padded_order = PaddedOrder(n);
  FloatPlan<double> plan = NewFloatPlan<double>(n, padded_order, method);
  cpu::FillPermanentWalk(a, n, method, padded_order, plan.steps, plan.base, plan.base_lo);
  const WalkLayout layout = PlanWalk(cpu::PermanentWalkBits(n, method), padded_order, 1.0);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer steps, UploadVector(context, plan.steps));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer base_hi, UploadVector(context, plan.base));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer base_lo, UploadVector(context, plan.base_lo));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer partials,
      context.Allocate(static_cast<size_t>(layout.blocks) * sizeof(DoubleDouble)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer total, context.Allocate(sizeof(DoubleDouble)));
  const RealWalkData data{steps.as<double>(), base_hi.as<double>(), base_lo.as<double>(),
                          partials.as<DoubleDouble>()};
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  MATRIXD_RETURN_IF_ERROR(timer.Start(context.stream()));
  MATRIXD_RETURN_IF_ERROR(
      RunWalk(context, layout, padded_order, data, total.as<DoubleDouble>(), 0.0, 1.0, control));
  MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
  DoubleDouble sum{0.0, 0.0};
  MATRIXD_RETURN_IF_ERROR(context.Download(total, &sum, sizeof(sum)));
  MATRIXD_ASSIGN_OR_RETURN(double seconds, timer.Seconds());
  return WalkOutcome{sum.hi + sum.lo, seconds};
}

// The sum of the terms of the walk of a (row-normalised) complex matrix.
absl::StatusOr<WalkOutcome> Walk(const std::vector<std::complex<double>>& a, int n,
                                 PermanentMethod method, DeviceContext& context,
                                 JobControl* control) {
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
                                  total.as<ComplexDoubleDouble>(), 0.0, 1.0, control));
  MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
  ComplexDoubleDouble sum{};
  MATRIXD_RETURN_IF_ERROR(context.Download(total, &sum, sizeof(sum)));
  MATRIXD_ASSIGN_OR_RETURN(double seconds, timer.Seconds());
  return WalkOutcome{{sum.re.hi + sum.re.lo, sum.im.hi + sum.im.lo}, seconds};
}

// The real or complex permanent: sign * 2^exponent * (sum of the walk's terms), T = double or
// std::complex<double>.
template <typename T>
absl::StatusOr<std::complex<double>> FloatPermanent(const MatrixView& a, int n,
                                                    PermanentMethod method, DeviceContext& context,
                                                    JobControl* control, double* walk_seconds) {
  MATRIXD_ASSIGN_OR_RETURN(const cpu::ScaledRows<T> rows, cpu::ScalePermanentRows<T>(a));
  if (rows.zero_row) return std::complex<double>(0.0);
  MATRIXD_ASSIGN_OR_RETURN(WalkOutcome outcome, Walk(rows.entries, n, method, context, control));
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

absl::StatusOr<ExactPermanent> IntegerPermanent(const MatrixView& a, int n, PermanentMethod method,
                                                DeviceContext& context, JobControl* control) {
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
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_steps, UploadVector(context, steps));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_base, UploadVector(context, base));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer partials,
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
                                    static_cast<double>(q + 1) / prime_count, control));
  }
  MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
  std::vector<uint64_t> residues(primes.size());
  MATRIXD_RETURN_IF_ERROR(
      context.Download(sums, residues.data(), residues.size() * sizeof(uint64_t)));
  MATRIXD_ASSIGN_OR_RETURN(double walk_seconds, timer.Seconds());
  for (int q = 0; q < prime_count; ++q) {
    residues[q] = cpu::ModularPermanentValue(residues[q], n, method, primes[q]);
  }
  std::string decimal = cpu::ReconstructSigned(residues, primes);
  return ExactPermanent{
      std::move(decimal),
      cpu::PermanentCertificate(m, n, method, primes, std::move(residues), " on the GPU"),
      walk_seconds};
}

const char* WalkName(PermanentMethod method, DType dtype) {
  const bool ryser = method == PermanentMethod::kRyser;
  if (dtype == DType::kInt64)
    return ryser ? "permanent_ryser_modular_walk" : "permanent_glynn_modular_walk";
  if (IsComplex(dtype))
    return ryser ? "permanent_ryser_complex_walk" : "permanent_glynn_complex_walk";
  return ryser ? "permanent_ryser_real_walk" : "permanent_glynn_real_walk";
}

}  // namespace

absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                          DeviceContext& context, JobControl* control) {
  static_assert(kMaxPermanentOrder == kMaxWalkOrder);
  MATRIXD_RETURN_IF_ERROR(cpu::CheckPermanentInput(a, kMaxWalkOrder, "the CUDA permanent"));
  if (IsCancelled(control)) return Cancelled();
  const int n = static_cast<int>(a.rows);

  PermanentResult result = cpu::NewPermanentResult(a, options);

  double walk_seconds = 0.0;
  if (a.dtype == DType::kInt64) {
    MATRIXD_ASSIGN_OR_RETURN(ExactPermanent exact,
                             IntegerPermanent(a, n, result.method_used, context, control));
    // The exact value is the truth; `value` is its nearest double.
    cpu::SetExactPermanent(std::move(exact.decimal), std::move(exact.certificate), &result);
    walk_seconds = exact.walk_seconds;
  } else {
    MATRIXD_ASSIGN_OR_RETURN(
        std::complex<double> value,
        IsComplex(a.dtype)
            ? FloatPermanent<std::complex<double>>(a, n, result.method_used, context, control,
                                                   &walk_seconds)
            : FloatPermanent<double>(a, n, result.method_used, context, control, &walk_seconds));
    result.value = value;
  }
  if (walk_seconds > 0.0) {
    result.stats.kernels.push_back(KernelRecord{WalkName(result.method_used, a.dtype), walk_seconds,
                                                a.byte_size(), result.stats.flops});
  }
  ReportProgress(control, 1.0);
  return result;
}

}  // namespace matrixd::cuda
