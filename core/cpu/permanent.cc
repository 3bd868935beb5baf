#include "core/cpu/permanent.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "core/cpu/compensated_sum.h"
#include "core/cpu/gray_code.h"
#include "core/cpu/montgomery.h"
#include "core/cpu/multimodular.h"
#include "core/cpu/permanent_arithmetic.h"
#include "core/cpu/permanent_preparation.h"
#include "core/modular_arithmetic.h"
#include "core/status_macros.h"
#include "core/walk_checkpoint.h"

// The floating-point walks use std::fma for double-double products. The baseline x86-64 build has
// no FMA instruction (std::fma is then a library call), so each walk is also compiled for
// AVX2 + FMA and picked at run time when the CPU has them.
#if defined(__x86_64__) && defined(__GNUC__)
#define MATRIXD_PERMANENT_FMA_CLONES 1
#define MATRIXD_TARGET_AVX2_FMA [[gnu::target("avx2,fma")]]
#endif

namespace matrixd::cpu {
namespace {

constexpr int kMaxOrder = kMaxPermanentOrder;

// Complex walks keep plain double row sums and restart them from scratch every 2^kSegmentLog2
// steps: each incremental update rounds, and over a long walk the errors of r + s - s + s ...
// random-walk; a segment of 1024 steps bounds that drift to ~32 ulp while the restart
// (n * popcount adds) costs < 2%. (Real walks carry their row sums in double-double instead.)
constexpr int kSegmentLog2 = 10;
// A chunk (the unit handed to a thread, with a cancellation check between chunks) does about
// 2^kChunkWorkLog2 row-sum updates: 5-30 ms at any n, so cancelling is prompt, yet the per-chunk
// overhead (an atomic increment, a mutex for progress, a restart) stays negligible.
constexpr int kChunkWorkLog2 = 23;
constexpr int kMinChunkLog2 = 12;
// Walks long enough are split into at least 2^kSpreadChunksLog2 chunks, so that up to 64 threads
// get 8 chunks each and those that finish early find more work.
constexpr int kSpreadChunksLog2 = 9;

// A walk of Ryser's or Glynn's formula (core/cpu/permanent_preparation.h gives its base and
// steps), one step a column, contiguous, so that the per-step update is a unit-stride loop.
template <typename T>
struct WalkPlan {
  int n = 0;
  int bits = 0;
  std::vector<T> base;     // n
  std::vector<T> base_lo;  // n, real walks only: base - fl(base), for double-double row sums
  std::vector<T> steps;    // bits * n: step b at [b * n, (b + 1) * n)

  const T* step(int b) const { return steps.data() + static_cast<size_t>(b) * n; }
};

template <typename T>
WalkPlan<T> NewWalkPlan(int n, PermanentMethod method) {
  WalkPlan<T> plan;
  plan.n = n;
  plan.bits = PermanentWalkBits(n, method);
  plan.base.assign(n, T{});
  plan.steps.resize(static_cast<size_t>(plan.bits) * n);
  return plan;
}

// Builds the walk of a complex matrix (row-major n x n).
WalkPlan<std::complex<double>> MakeComplexPlan(const std::vector<std::complex<double>>& a, int n,
                                               PermanentMethod method) {
  WalkPlan<std::complex<double>> plan = NewWalkPlan<std::complex<double>>(n, method);
  FillPermanentWalk(a, n, method, n, plan.steps, plan.base);
  return plan;
}

// r = base + the steps of the set bits of g.
template <typename T>
inline void StartRowSums(const WalkPlan<T>& plan, uint64_t g, T* r) {
  const int n = plan.n;
  for (int i = 0; i < n; ++i) r[i] = plan.base[i];
  for (uint64_t rest = g; rest != 0; rest &= rest - 1) {
    const T* s = plan.step(std::countr_zero(rest));
    for (int i = 0; i < n; ++i) r[i] += s[i];
  }
}

// Moves r from GrayCode(k - 1) to GrayCode(k). REQUIRES: k > 0.
template <typename T>
inline void StepRowSums(const WalkPlan<T>& plan, uint64_t k, T* r) {
  const int n = plan.n;
  const int bit = GrayCodeFlipBit(k);
  const T* s = plan.step(bit);
  if (((GrayCode(k) >> bit) & 1) != 0) {
    for (int i = 0; i < n; ++i) r[i] += s[i];
  } else {
    for (int i = 0; i < n; ++i) r[i] -= s[i];
  }
}

// Products of the n row sums run as independent chains, multiplied together at the end: one chain
// would wait out the multiply latency at every factor. The row sums are padded with ones to a
// multiple of the chain count so that the chains stay in registers. Four chains everywhere (the
// real walks' products are walk::RowProduct's, shared with the CUDA kernels).
constexpr int kRealChains = 4;
constexpr int kComplexChains = 4;
constexpr int kModularChains = 4;
constexpr int kPaddedMaxOrder = 64;
constexpr int PaddedOrder(int n, int chains) { return (n + chains - 1) / chains * chains; }
static_assert(PaddedOrder(kMaxOrder, 4) <= kPaddedMaxOrder);

// A running complex product, written out rather than std::complex's operator*, which checks for
// NaN and Inf on every call.
struct ComplexProduct {
  double re = 1.0;
  double im = 0.0;

  [[gnu::always_inline]] void Multiply(double x, double y) {
    const double new_re = re * x - im * y;
    im = re * y + im * x;
    re = new_re;
  }
};

// A real walk: WalkPlan's dense steps, and for the sparse walk the same steps compressed (the
// non-zero entries of each step with their rows) and the row blocks each step touches.
struct RealPlan {
  WalkPlan<double> walk;
  std::vector<size_t> step_start;  // bits + 1: step b's entries at [step_start[b], step_start[b+1])
  std::vector<int> step_rows;
  std::vector<double> step_values;
  std::vector<uint64_t> block_masks;  // PermanentBlockMasks
};

RealPlan MakeRealPlan(const std::vector<double>& a, int n, PermanentMethod method) {
  RealPlan plan;
  plan.block_masks = PermanentBlockMasks(a, n, method);
  plan.walk = NewWalkPlan<double>(n, method);
  plan.walk.base_lo.assign(n, 0.0);
  FillPermanentWalk(a, n, method, n, plan.walk.steps, plan.walk.base, plan.walk.base_lo);
  plan.step_start.push_back(0);
  for (int b = 0; b < plan.walk.bits; ++b) {
    const double* s = plan.walk.step(b);
    for (int i = 0; i < n; ++i) {
      if (s[i] == 0.0) continue;  // adding 0 changes no row sum
      plan.step_rows.push_back(i);
      plan.step_values.push_back(s[i]);
    }
    plan.step_start.push_back(plan.step_rows.size());
  }
  return plan;
}

// The row sums of GrayCode(k) from the base, in double-double (exact for the rows that
// PermanentRowSumsAreExact covers), rounded to double unless the arithmetic keeps the lo parts.
template <walk::RealArithmetic A>
inline void StartRealRowSums(const WalkPlan<double>& plan, uint64_t k, walk::RowSum<A>* r) {
  const int n = plan.n;
  double hi[kPaddedMaxOrder];
  double lo[kPaddedMaxOrder];
  for (int i = 0; i < n; ++i) {
    hi[i] = plan.base[i];
    lo[i] = plan.base_lo[i];
  }
  for (uint64_t rest = GrayCode(k); rest != 0; rest &= rest - 1) {
    const double* s = plan.step(std::countr_zero(rest));
    for (int i = 0; i < n; ++i) walk::AddToRowSum(hi[i], lo[i], s[i]);
  }
  for (int i = 0; i < n; ++i) {
    if constexpr (A == walk::RealArithmetic::kDoubleDoubleRows) {
      r[i].Set(hi[i], lo[i]);
    } else {
      r[i].Set(hi[i] + lo[i], 0.0);
    }
  }
}

constexpr int kBlockRows = kPermanentBlockRows;
static_assert(kBlockRows == kRealChains);
constexpr int kMaxBlocks = kPaddedMaxOrder / kBlockRows;

// The sparse walk's cached products (core/cpu/permanent_preparation.h): block[q] of the rows
// [4q, 4q + 4), suffix[q] = block[q] ... block[blocks - 1]; the term is suffix[0].
template <walk::RealArithmetic A>
struct BlockProducts {
  int blocks = 0;
  walk::DoubleDouble block[kMaxBlocks];
  walk::DoubleDouble suffix[kMaxBlocks];

  // Recomputes the blocks of `mask` (bit q: block q) from the row sums r, and the suffix
  // products from the highest of them down.
  [[gnu::always_inline]] void Refresh(const walk::RowSum<A>* r, uint64_t mask) {
    for (int q = static_cast<int>(std::bit_width(mask)) - 1; q >= 0; --q) {
      if (((mask >> q) & 1) != 0) {
        const walk::RowSum<A>* x = r + q * kBlockRows;
        block[q] = walk::BlockProduct<A>(x[0], x[1], x[2], x[3]);
      }
      suffix[q] = q + 1 < blocks ? walk::MultiplyProducts<A>(block[q], suffix[q + 1]) : block[q];
    }
  }
};

// Sum of the terms k in [begin, end) of a real walk (core/cpu/permanent_arithmetic.h gives the
// row-sum update and product of arithmetic A), the terms summed in double-double. Ryser's terms
// cancel by ~7 orders of magnitude for a random positive n = 16 matrix and ~10 for the all-ones
// n = 20 one, so a rounding of 2^-53 in a row sum or a product shows in the 7th to 10th digit of
// its result: kFast is for Glynn, whose terms cancel far less. kSparse updates only the non-zero
// entries of each step and recomputes only the products of the blocks they lie in.
template <walk::RealArithmetic A, bool kSparse>
[[gnu::always_inline]] inline CompensatedSum WalkRealChunk(const RealPlan& plan, uint64_t begin,
                                                           uint64_t end) {
  const WalkPlan<double>& dense = plan.walk;
  const int n = dense.n;
  const int padded_n = PaddedOrder(n, kRealChains);
  walk::RowSum<A> r[kPaddedMaxOrder];
  for (int i = n; i < padded_n; ++i) r[i].Set(1.0, 0.0);
  // kFast restarts its plain row sums every 2^kFastSegmentLog2 terms; the others run a chunk
  // through (their row sums do not drift).
  const uint64_t segment_length =
      A == walk::RealArithmetic::kFast ? uint64_t{1} << walk::kFastSegmentLog2 : end - begin;
  BlockProducts<A> products;
  products.blocks = padded_n / kBlockRows;
  CompensatedSum sum;
  for (uint64_t segment = begin; segment < end; segment += segment_length) {
    const uint64_t segment_end = std::min(end, segment + segment_length);
    StartRealRowSums<A>(dense, segment, r);
    if constexpr (kSparse) products.Refresh(r, (uint64_t{1} << products.blocks) - 1);
    for (uint64_t k = segment;;) {
      const walk::DoubleDouble product =
          kSparse ? products.suffix[0] : walk::RowProduct<A>(r, padded_n);
      if ((k & 1) != 0) {
        sum.Add(-product.hi, -product.lo);
      } else {
        sum.Add(product.hi, product.lo);
      }
      if (++k == segment_end) break;
      const int bit = GrayCodeFlipBit(k);
      const bool adds = ((GrayCode(k) >> bit) & 1) != 0;
      if constexpr (kSparse) {
        const size_t first = plan.step_start[bit];
        const size_t last = plan.step_start[bit + 1];
        if (adds) {
          for (size_t q = first; q < last; ++q) r[plan.step_rows[q]].Update(plan.step_values[q]);
        } else {
          for (size_t q = first; q < last; ++q) r[plan.step_rows[q]].Update(-plan.step_values[q]);
        }
        products.Refresh(r, plan.block_masks[bit]);
      } else {
        const double* s = dense.step(bit);
        if (adds) {
          for (int j = 0; j < n; ++j) r[j].Update(s[j]);
        } else {
          for (int j = 0; j < n; ++j) r[j].Update(-s[j]);
        }
      }
    }
  }
  return sum;
}

// As WalkRealChunk for complex matrices, but with the row sums and products in plain double: a
// double-double complex product costs ~7x the plain one. The sum of the terms is still
// compensated, component by component. Glynn's terms cancel far less than Ryser's, so Glynn (the
// default) is the accurate choice here: on random n = 20 matrices the two agree to ~1e-10.
[[gnu::always_inline]] inline ComplexCompensatedSum WalkComplexChunk(
    const WalkPlan<std::complex<double>>& plan, uint64_t begin, uint64_t end) {
  const int padded_n = PaddedOrder(plan.n, kComplexChains);
  std::complex<double> r[kPaddedMaxOrder];
  for (int i = plan.n; i < padded_n; ++i) r[i] = 1.0;
  ComplexCompensatedSum sum;
  for (uint64_t segment = begin; segment < end; segment += uint64_t{1} << kSegmentLog2) {
    const uint64_t segment_end = std::min(end, segment + (uint64_t{1} << kSegmentLog2));
    StartRowSums(plan, GrayCode(segment), r);
    for (uint64_t k = segment;;) {
      ComplexProduct chain[kComplexChains];
      for (int i = 0; i < padded_n; i += kComplexChains) {
        for (int c = 0; c < kComplexChains; ++c) {
          chain[c].Multiply(r[i + c].real(), r[i + c].imag());
        }
      }
      static_assert(kComplexChains == 4);
      chain[0].Multiply(chain[1].re, chain[1].im);
      chain[2].Multiply(chain[3].re, chain[3].im);
      chain[0].Multiply(chain[2].re, chain[2].im);
      const double re = chain[0].re;
      const double im = chain[0].im;
      if ((k & 1) != 0) {
        sum.Add(-re, -im);
      } else {
        sum.Add(re, im);
      }
      if (++k == segment_end) break;
      StepRowSums(plan, k, r);
    }
  }
  return sum;
}

template <walk::RealArithmetic A, bool kSparse>
CompensatedSum RealChunkPortable(const RealPlan& plan, uint64_t begin, uint64_t end) {
  return WalkRealChunk<A, kSparse>(plan, begin, end);
}
ComplexCompensatedSum ComplexChunkPortable(const WalkPlan<std::complex<double>>& plan,
                                           uint64_t begin, uint64_t end) {
  return WalkComplexChunk(plan, begin, end);
}
#ifdef MATRIXD_PERMANENT_FMA_CLONES
template <walk::RealArithmetic A, bool kSparse>
MATRIXD_TARGET_AVX2_FMA CompensatedSum RealChunkAvx2Fma(const RealPlan& plan, uint64_t begin,
                                                        uint64_t end) {
  return WalkRealChunk<A, kSparse>(plan, begin, end);
}
MATRIXD_TARGET_AVX2_FMA ComplexCompensatedSum
ComplexChunkAvx2Fma(const WalkPlan<std::complex<double>>& plan, uint64_t begin, uint64_t end) {
  return WalkComplexChunk(plan, begin, end);
}
#endif

bool HasAvx2Fma() {
#ifdef MATRIXD_PERMANENT_FMA_CLONES
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

using RealChunkFn = CompensatedSum (*)(const RealPlan&, uint64_t, uint64_t);
using ComplexChunkFn = ComplexCompensatedSum (*)(const WalkPlan<std::complex<double>>&, uint64_t,
                                                 uint64_t);

template <walk::RealArithmetic A, bool kSparse>
RealChunkFn SelectRealChunk() {
#ifdef MATRIXD_PERMANENT_FMA_CLONES
  if (HasAvx2Fma()) return RealChunkAvx2Fma<A, kSparse>;
#endif
  return RealChunkPortable<A, kSparse>;
}
template <walk::RealArithmetic A>
RealChunkFn SelectRealChunk(bool sparse) {
  return sparse ? SelectRealChunk<A, true>() : SelectRealChunk<A, false>();
}
RealChunkFn SelectRealChunk(walk::RealArithmetic arithmetic, bool sparse) {
  switch (arithmetic) {
    case walk::RealArithmetic::kDoubleDoubleRows:
      return SelectRealChunk<walk::RealArithmetic::kDoubleDoubleRows>(sparse);
    case walk::RealArithmetic::kExactRows:
      return SelectRealChunk<walk::RealArithmetic::kExactRows>(sparse);
    case walk::RealArithmetic::kFast:
      break;
  }
  return SelectRealChunk<walk::RealArithmetic::kFast>(sparse);
}
ComplexChunkFn SelectComplexChunk() {
#ifdef MATRIXD_PERMANENT_FMA_CLONES
  if (HasAvx2Fma()) return ComplexChunkAvx2Fma;
#endif
  return ComplexChunkPortable;
}

// The walk of an INT64 matrix modulo one odd prime p: entries, base and steps reduced into
// [0, p), products by Montgomery multiplication.
struct ModularPlan {
  explicit ModularPlan(uint64_t p) : modulus(p) {}
  MontgomeryModulus modulus;
  WalkPlan<uint64_t> walk;
};

ModularPlan MakeModularPlan(std::span<const int64_t> a, int n, PermanentMethod method, uint64_t p) {
  ModularPlan plan(p);
  plan.walk = NewWalkPlan<uint64_t>(n, method);
  FillModularPermanentWalk(a, n, method, p, n, plan.walk.steps, plan.walk.base);
  return plan;
}

// Sum mod p of the terms k in [begin, end), each product scaled by R^-(n-1) (Montgomery); the
// caller multiplies by R^(n-1) once.
[[gnu::always_inline]] inline uint64_t WalkModularChunk(const ModularPlan& plan, uint64_t begin,
                                                        uint64_t end) {
  const WalkPlan<uint64_t>& walk = plan.walk;
  const MontgomeryModulus& mont = plan.modulus;
  const uint64_t p = mont.modulus();
  const int n = walk.n;
  const int padded_n = PaddedOrder(n, kModularChains);
  uint64_t r[kPaddedMaxOrder];
  for (int i = 0; i < n; ++i) r[i] = walk.base[i];
  // The padding is R mod p, the Montgomery form of 1: multiplying by it changes nothing, so the
  // product is prod_i r_i R^-(n-1) however the chains are arranged.
  const uint64_t one = mont.r_mod_p();
  for (int i = n; i < padded_n; ++i) r[i] = one;
  for (uint64_t rest = GrayCode(begin); rest != 0; rest &= rest - 1) {
    const uint64_t* s = walk.step(std::countr_zero(rest));
    for (int i = 0; i < n; ++i) r[i] = AddMod(r[i], s[i], p);
  }
  uint64_t sum = 0;
  for (uint64_t k = begin;;) {
    uint64_t chain[kModularChains];
    for (int c = 0; c < kModularChains; ++c) chain[c] = r[c];
    for (int i = kModularChains; i < padded_n; i += kModularChains) {
      for (int c = 0; c < kModularChains; ++c) chain[c] = mont.MultiplyLazy(chain[c], r[i + c]);
    }
    static_assert(kModularChains == 4);
    const uint64_t product = mont.Reduce(mont.MultiplyLazy(mont.MultiplyLazy(chain[0], chain[1]),
                                                           mont.MultiplyLazy(chain[2], chain[3])));
    sum = (k & 1) != 0 ? SubMod(sum, product, p) : AddMod(sum, product, p);
    if (++k == end) break;
    const int bit = GrayCodeFlipBit(k);
    const uint64_t* s = walk.step(bit);
    if (((GrayCode(k) >> bit) & 1) != 0) {
      for (int j = 0; j < n; ++j) r[j] = AddMod(r[j], s[j], p);
    } else {
      for (int j = 0; j < n; ++j) r[j] = SubMod(r[j], s[j], p);
    }
  }
  return sum;
}

uint64_t ModularChunkPortable(const ModularPlan& plan, uint64_t begin, uint64_t end) {
  return WalkModularChunk(plan, begin, end);
}
#ifdef MATRIXD_PERMANENT_FMA_CLONES
MATRIXD_TARGET_AVX2_FMA uint64_t ModularChunkAvx2Fma(const ModularPlan& plan, uint64_t begin,
                                                     uint64_t end) {
  return WalkModularChunk(plan, begin, end);
}
#endif

using ModularChunkFn = uint64_t (*)(const ModularPlan&, uint64_t, uint64_t);
ModularChunkFn SelectModularChunk() {
#ifdef MATRIXD_PERMANENT_FMA_CLONES
  if (HasAvx2Fma()) return ModularChunkAvx2Fma;
#endif
  return ModularChunkPortable;
}

// How the 2^bits steps of a walk split into chunks of 2^log2_size steps.
struct ChunkPlan {
  int log2_size = 0;
  int64_t count = 1;

  uint64_t begin(int64_t chunk) const { return static_cast<uint64_t>(chunk) << log2_size; }
  uint64_t end(int64_t chunk) const { return static_cast<uint64_t>(chunk + 1) << log2_size; }
};

// The split depends on the walk only, not on the thread count, so that (with the partial sums
// combined in chunk order) a result is bit-for-bit the same on any number of threads.
ChunkPlan PlanChunks(int bits, int n) {
  const int work_limit = kChunkWorkLog2 - std::bit_width(static_cast<unsigned>(n));
  ChunkPlan plan;
  plan.log2_size = std::clamp(bits - kSpreadChunksLog2, std::min(bits, kMinChunkLog2), work_limit);
  plan.count = int64_t{1} << (bits - plan.log2_size);
  return plan;
}

// Runs run_item(item) for every item in [0, items) on up to `threads` threads, the caller being
// one of them; an atomic counter hands the items out in order. Checks for cancellation before
// each item and reports the fraction of items done after each. Returns false when cancelled
// before every item ran.
template <typename RunItem>
bool RunItems(int64_t items, int threads, JobControl* control, const RunItem& run_item) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex progress_mutex;
  int64_t done = 0;  // guarded by progress_mutex; reported under it so progress never goes back
  auto worker = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (IsCancelled(control)) {
        stop.store(true, std::memory_order_relaxed);
        break;
      }
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= items) break;
      run_item(item);
      std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      ReportProgress(control, static_cast<double>(done) / static_cast<double>(items));
    }
  };
  const int helpers = static_cast<int>(std::min<int64_t>(std::max(threads, 1), items)) - 1;
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (int t = 0; t < helpers; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& thread : pool) thread.join();
  return done == items;
}

absl::Status Cancelled() { return absl::CancelledError("permanent cancelled"); }

// Runs walk_item(item) into partial[item] for every item as RunItems does; with a state_dir, the
// items a checkpoint there recorded are loaded instead of walked, and each item walked is recorded
// as it finishes. A cancelled or failed walk keeps its checkpoint (a restart resumes it); a
// complete one removes it. `walk` names the walk's parameters for its key.
template <typename Sum, typename WalkItem>
absl::Status RunResumable(const MatrixView& a, std::span<const int64_t> walk,
                          const std::string& state_dir, int threads, JobControl* control,
                          std::vector<Sum>& partial, const WalkItem& walk_item) {
  static_assert(std::is_trivially_copyable_v<Sum>);
  const int64_t items = static_cast<int64_t>(partial.size());
  std::unique_ptr<WalkCheckpoint> checkpoint;
  if (!state_dir.empty()) {
    MATRIXD_ASSIGN_OR_RETURN(checkpoint,
                             WalkCheckpoint::Open(state_dir, WalkKey(a, walk), items, sizeof(Sum)));
  }
  std::mutex error_mutex;
  absl::Status error;
  const bool complete = RunItems(items, threads, control, [&](int64_t item) {
    Sum& sum = partial[static_cast<size_t>(item)];
    const auto bytes = std::as_writable_bytes(std::span<Sum, 1>(&sum, 1));
    if (checkpoint != nullptr && checkpoint->done(item)) {
      checkpoint->Load(item, bytes);
      return;
    }
    sum = walk_item(item);
    if (checkpoint == nullptr) return;
    if (absl::Status recorded = checkpoint->Record(item, bytes); !recorded.ok()) {
      std::lock_guard<std::mutex> lock(error_mutex);
      error.Update(recorded);
    }
  });
  if (!complete) return Cancelled();
  MATRIXD_RETURN_IF_ERROR(error);
  if (checkpoint != nullptr) checkpoint->Remove();
  return absl::OkStatus();
}

// The walk's terms summed over its chunks on `threads` threads, resumably (RunResumable), then
// combined in chunk order so that the result does not depend on the number of threads.
template <typename Sum, typename Plan>
absl::StatusOr<Sum> SumChunks(const MatrixView& a, const Plan& plan, int bits, int n,
                              std::span<const int64_t> walk_key, int threads, JobControl* control,
                              const std::string& state_dir,
                              Sum (*walk)(const Plan&, uint64_t, uint64_t)) {
  const ChunkPlan chunks = PlanChunks(bits, n);
  std::vector<Sum> partial(static_cast<size_t>(chunks.count));
  std::vector<int64_t> key(walk_key.begin(), walk_key.end());
  key.push_back(chunks.log2_size);
  MATRIXD_RETURN_IF_ERROR(
      RunResumable(a, key, state_dir, threads, control, partial,
                   [&](int64_t c) { return walk(plan, chunks.begin(c), chunks.end(c)); }));
  Sum total;
  for (const Sum& s : partial) total.Add(s);
  return total;
}

// The real permanent; sets result->walk_used.
absl::StatusOr<std::complex<double>> RealPermanent(const MatrixView& a, int n,
                                                   const PermanentOptions& options, int threads,
                                                   JobControl* control,
                                                   const std::string& state_dir,
                                                   PermanentResult* result) {
  const PermanentMethod method = result->method_used;
  MATRIXD_ASSIGN_OR_RETURN(ScaledRows<double> rows, ScalePermanentRows<double>(a));
  if (rows.zero_row) {
    result->walk_used =
        options.walk == PermanentWalk::kSparse ? PermanentWalk::kSparse : PermanentWalk::kDense;
    return std::complex<double>(0.0);
  }
  const walk::RealArithmetic arithmetic =
      ChooseRealWalkArithmetic(rows.entries, n, options.precision, method).arithmetic();
  result->walk_used = PrepareRealPermanentWalk(rows.entries, n, method, arithmetic, options.walk);
  const bool sparse = result->walk_used == PermanentWalk::kSparse;
  const RealPlan plan = MakeRealPlan(rows.entries, n, method);
  // The walk's parameters that change its partial sums (a checkpoint of another walk is not
  // resumed from). kSparseWalkKey: the sparse walk's version (2: rows and columns ordered, block
  // products), since its order and partial sums changed.
  constexpr int64_t kSparseWalkKey = 2;
  const int64_t walk_key[] = {0, static_cast<int64_t>(method), static_cast<int64_t>(arithmetic),
                              sparse ? kSparseWalkKey : 0};
  MATRIXD_ASSIGN_OR_RETURN(const CompensatedSum total,
                           SumChunks(a, plan, plan.walk.bits, n, walk_key, threads, control,
                                     state_dir, SelectRealChunk(arithmetic, sparse)));
  return FloatPermanentValue(total.value(), n, method, rows.exponent);
}

// The complex permanent (one precision, the dense walk).
absl::StatusOr<std::complex<double>> ComplexPermanent(const MatrixView& a, int n,
                                                      PermanentMethod method, int threads,
                                                      JobControl* control,
                                                      const std::string& state_dir) {
  MATRIXD_ASSIGN_OR_RETURN(const ScaledRows<std::complex<double>> rows,
                           ScalePermanentRows<std::complex<double>>(a));
  if (rows.zero_row) return std::complex<double>(0.0);
  const WalkPlan<std::complex<double>> plan = MakeComplexPlan(rows.entries, n, method);
  const int64_t walk_key[] = {0, static_cast<int64_t>(method)};
  MATRIXD_ASSIGN_OR_RETURN(const ComplexCompensatedSum total,
                           SumChunks(a, plan, plan.bits, n, walk_key, threads, control, state_dir,
                                     SelectComplexChunk()));
  return FloatPermanentValue(total.value(), n, method, rows.exponent);
}

struct ExactPermanent {
  std::string decimal;
  ExactCertificate certificate;
};

absl::StatusOr<ExactPermanent> IntegerPermanent(const MatrixView& a, int n, PermanentMethod method,
                                                int threads, JobControl* control,
                                                const std::string& state_dir) {
  const std::span<const int64_t> m = a.As<int64_t>();
  const std::vector<uint64_t> primes = PermanentPrimes(m, n);
  if (primes.empty()) return ExactPermanent{"0", ZeroRowCertificate()};
  std::vector<ModularPlan> plans;
  plans.reserve(primes.size());
  for (uint64_t p : primes) plans.push_back(MakeModularPlan(m, n, method, p));
  const ChunkPlan chunks = PlanChunks(PermanentWalkBits(n, method), n);
  const ModularChunkFn walk = SelectModularChunk();
  const int64_t items = chunks.count * static_cast<int64_t>(primes.size());
  std::vector<uint64_t> partial(static_cast<size_t>(items));
  const int64_t walk_key[] = {1, static_cast<int64_t>(method), chunks.log2_size,
                              static_cast<int64_t>(primes.size())};
  MATRIXD_RETURN_IF_ERROR(
      RunResumable(a, walk_key, state_dir, threads, control, partial, [&](int64_t item) {
        const int64_t c = item % chunks.count;
        return walk(plans[item / chunks.count], chunks.begin(c), chunks.end(c));
      }));
  std::vector<uint64_t> residues(primes.size());
  for (size_t q = 0; q < primes.size(); ++q) {
    const uint64_t p = primes[q];
    uint64_t sum = 0;
    for (int64_t c = 0; c < chunks.count; ++c) {
      sum = AddMod(sum, partial[q * chunks.count + c], p);
    }
    residues[q] = ModularPermanentValue(sum, n, method, p);
  }
  std::string decimal = ReconstructSigned(residues, primes);
  return ExactPermanent{std::move(decimal),
                        PermanentCertificate(m, n, method, primes, std::move(residues), "")};
}

}  // namespace

absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                          int threads, JobControl* control,
                                          const std::string& state_dir) {
  MATRIXD_RETURN_IF_ERROR(CheckPermanentInput(a, kMaxOrder, "the permanent"));
  if (IsCancelled(control)) return Cancelled();
  const int n = static_cast<int>(a.rows);
  threads = std::max(threads, 1);

  PermanentResult result = NewPermanentResult(a, options);

  if (a.dtype == DType::kInt64) {
    MATRIXD_ASSIGN_OR_RETURN(ExactPermanent exact, IntegerPermanent(a, n, result.method_used,
                                                                    threads, control, state_dir));
    // The exact value is the truth; `value` is its nearest double.
    SetExactPermanent(std::move(exact.decimal), std::move(exact.certificate), &result);
  } else {
    MATRIXD_ASSIGN_OR_RETURN(
        std::complex<double> value,
        IsComplex(a.dtype) ? ComplexPermanent(a, n, result.method_used, threads, control, state_dir)
                           : RealPermanent(a, n, options, threads, control, state_dir, &result));
    result.value = value;
  }
  ReportProgress(control, 1.0);
  return result;
}

}  // namespace matrixd::cpu
