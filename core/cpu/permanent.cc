#include "core/cpu/permanent.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/compensated_sum.h"
#include "core/cpu/gray_code.h"
#include "core/cpu/montgomery.h"
#include "core/cpu/multimodular.h"
#include "core/modular_arithmetic.h"

// The floating-point walks use std::fma for double-double products. The baseline x86-64 build has
// no FMA instruction (std::fma is then a library call), so each walk is also compiled for
// AVX2 + FMA and picked at run time when the CPU has them.
#if defined(__x86_64__) && defined(__GNUC__)
#define MATRIXD_PERMANENT_FMA_CLONES 1
#define MATRIXD_TARGET_AVX2_FMA [[gnu::target("avx2,fma")]]
#endif

namespace matrixd::cpu {
namespace {

constexpr int kMaxOrder = 62;

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

// Ryser's and Glynn's formulas as one walk over k in [0, 2^bits) in Gray-code order: with
// g = GrayCode(k),
//   r_i(k) = base_i + sum over set bits b of g of step_b[i],  term(k) = (-1)^k prod_i r_i(k),
// and per(A) = sign * scale * sum_k term(k), where (-1)^k is the parity of |g|.
//   Ryser (bits = n):     base = 0, step_b = column b,  sign = (-1)^n, scale = 1; g is the set
//                         S of columns and r_i the row sums over S.
//   Glynn (bits = n - 1): base_i = sum_j a_ij (all delta_j = +1), step_b = -2 * column b + 1
//                         (bit b set: delta_{b+1} = -1, and delta_0 stays +1), sign = +1,
//                         scale = 2^-(n-1); prod_k delta_k = (-1)^|g|.
// Steps (one column each, contiguous) keep the per-step update a unit-stride loop.
template <typename T>
struct WalkPlan {
  int n = 0;
  int bits = 0;
  std::vector<T> base;     // n
  std::vector<T> base_lo;  // n, real walks only: base - fl(base), for double-double row sums
  std::vector<T> steps;    // bits * n: step b at [b * n, (b + 1) * n)

  const T* step(int b) const { return steps.data() + static_cast<size_t>(b) * n; }
};

int WalkBits(int n, PermanentMethod method) {
  return method == PermanentMethod::kRyser ? n : n - 1;
}

// Builds the walk of a real or complex matrix (row-major n x n).
template <typename T>
WalkPlan<T> MakeFloatPlan(const std::vector<T>& a, int n, PermanentMethod method) {
  WalkPlan<T> plan;
  plan.n = n;
  plan.bits = WalkBits(n, method);
  plan.base.assign(n, T{});
  plan.steps.resize(static_cast<size_t>(plan.bits) * n);
  const bool glynn = method == PermanentMethod::kGlynn;
  const int first_column = glynn ? 1 : 0;
  for (int b = 0; b < plan.bits; ++b) {
    for (int i = 0; i < n; ++i) {
      const T entry = a[static_cast<size_t>(i) * n + b + first_column];
      plan.steps[static_cast<size_t>(b) * n + i] = glynn ? -2.0 * entry : entry;
    }
  }
  if (glynn) {
    for (int i = 0; i < n; ++i) {
      T sum{};
      for (int j = 0; j < n; ++j) sum += a[static_cast<size_t>(i) * n + j];
      plan.base[i] = sum;
    }
  }
  return plan;
}

WalkPlan<double> MakeRealPlan(const std::vector<double>& a, int n, PermanentMethod method) {
  WalkPlan<double> plan = MakeFloatPlan(a, n, method);
  plan.base_lo.assign(n, 0.0);
  if (method == PermanentMethod::kGlynn) {
    for (int i = 0; i < n; ++i) {
      CompensatedSum sum;
      for (int j = 0; j < n; ++j) sum.Add(a[static_cast<size_t>(i) * n + j]);
      plan.base[i] = sum.hi();
      plan.base_lo[i] = sum.lo();
    }
  }
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
// multiple of the chain count so that the chains stay in registers. Measured best: two chains
// for the real double-double product (then bound by throughput), four for the complex one.
constexpr int kRealChains = 2;
constexpr int kComplexChains = 4;
constexpr int kModularChains = 4;
constexpr int kPaddedMaxOrder = 64;
constexpr int PaddedOrder(int n, int chains) { return (n + chains - 1) / chains * chains; }
static_assert(PaddedOrder(kMaxOrder, 4) <= kPaddedMaxOrder);

struct DoubleDouble {
  double hi;
  double lo;
};

// (a.hi + a.lo)(x_hi + x_lo) to ~2^-104 relative: a.hi x_hi exactly by fma (TwoProduct), plus
// the cross terms; a.lo x_lo is below that precision. Needs no renormalisation over a chain of n
// factors: |lo| grows by at most ~2^-53 |hi| per factor.
[[gnu::always_inline]] inline DoubleDouble MultiplyDd(DoubleDouble a, double x_hi, double x_lo) {
  const double hi = a.hi * x_hi;
  return {hi, std::fma(a.lo, x_hi, std::fma(a.hi, x_lo, std::fma(a.hi, x_hi, -hi)))};
}

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

// Sum of the terms k in [begin, end) of a real walk, in double-double throughout: the row sums
// (hi + lo, updated by TwoSum), each product prod_i r_i (an exact TwoProduct per factor via fma)
// and the sum of the terms. Ryser's terms cancel by ~7 orders of magnitude for a random positive
// n = 16 matrix and ~10 for the all-ones n = 20 one, so a rounding of 2^-53 in a row sum or a
// product would show in the 7th to 10th digit of the result.
[[gnu::always_inline]] inline CompensatedSum WalkRealChunk(const WalkPlan<double>& plan,
                                                           uint64_t begin, uint64_t end) {
  const int n = plan.n;
  const int padded_n = PaddedOrder(n, kRealChains);
  double r_hi[kPaddedMaxOrder];
  double r_lo[kPaddedMaxOrder];
  for (int i = 0; i < n; ++i) {
    r_hi[i] = plan.base[i];
    r_lo[i] = plan.base_lo[i];
  }
  for (int i = n; i < padded_n; ++i) {
    r_hi[i] = 1.0;
    r_lo[i] = 0.0;
  }
  for (uint64_t rest = GrayCode(begin); rest != 0; rest &= rest - 1) {
    const double* s = plan.step(std::countr_zero(rest));
    for (int i = 0; i < n; ++i) {
      double e;
      TwoSum(r_hi[i], s[i], r_hi[i], e);
      r_lo[i] += e;
    }
  }
  CompensatedSum sum;
  for (uint64_t k = begin;;) {
    DoubleDouble chain[kRealChains];
    for (DoubleDouble& c : chain) c = {1.0, 0.0};
    for (int i = 0; i < padded_n; i += kRealChains) {
      for (int c = 0; c < kRealChains; ++c) {
        chain[c] = MultiplyDd(chain[c], r_hi[i + c], r_lo[i + c]);
      }
    }
    static_assert(kRealChains == 2);
    const DoubleDouble product = MultiplyDd(chain[0], chain[1].hi, chain[1].lo);
    const double hi = product.hi;
    const double lo = product.lo;
    if ((k & 1) != 0) {
      sum.Add(-hi, -lo);
    } else {
      sum.Add(hi, lo);
    }
    if (++k == end) break;
    const int bit = GrayCodeFlipBit(k);
    const double* s = plan.step(bit);
    // The lo parts collect the exact rounding errors, so unlike a plain double they do not
    // drift over a long walk.
    if (((GrayCode(k) >> bit) & 1) != 0) {
      for (int j = 0; j < n; ++j) {
        double e;
        TwoSum(r_hi[j], s[j], r_hi[j], e);
        r_lo[j] += e;
      }
    } else {
      for (int j = 0; j < n; ++j) {
        double e;
        TwoSum(r_hi[j], -s[j], r_hi[j], e);
        r_lo[j] += e;
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

CompensatedSum RealChunkPortable(const WalkPlan<double>& plan, uint64_t begin, uint64_t end) {
  return WalkRealChunk(plan, begin, end);
}
ComplexCompensatedSum ComplexChunkPortable(const WalkPlan<std::complex<double>>& plan,
                                           uint64_t begin, uint64_t end) {
  return WalkComplexChunk(plan, begin, end);
}
#ifdef MATRIXD_PERMANENT_FMA_CLONES
MATRIXD_TARGET_AVX2_FMA CompensatedSum RealChunkAvx2Fma(const WalkPlan<double>& plan,
                                                        uint64_t begin, uint64_t end) {
  return WalkRealChunk(plan, begin, end);
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

using RealChunkFn = CompensatedSum (*)(const WalkPlan<double>&, uint64_t, uint64_t);
using ComplexChunkFn = ComplexCompensatedSum (*)(const WalkPlan<std::complex<double>>&, uint64_t,
                                                 uint64_t);

RealChunkFn SelectRealChunk() {
#ifdef MATRIXD_PERMANENT_FMA_CLONES
  if (HasAvx2Fma()) return RealChunkAvx2Fma;
#endif
  return RealChunkPortable;
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
  WalkPlan<uint64_t>& walk = plan.walk;
  walk.n = n;
  walk.bits = WalkBits(n, method);
  walk.base.assign(n, 0);
  walk.steps.resize(static_cast<size_t>(walk.bits) * n);
  const bool glynn = method == PermanentMethod::kGlynn;
  const int first_column = glynn ? 1 : 0;
  for (int b = 0; b < walk.bits; ++b) {
    for (int i = 0; i < n; ++i) {
      const uint64_t entry = ReduceSigned(a[static_cast<size_t>(i) * n + b + first_column], p);
      walk.steps[static_cast<size_t>(b) * n + i] =
          glynn ? SubMod(0, AddMod(entry, entry, p), p) : entry;
    }
  }
  if (glynn) {
    for (int i = 0; i < n; ++i) {
      uint64_t sum = 0;
      for (int j = 0; j < n; ++j) {
        sum = AddMod(sum, ReduceSigned(a[static_cast<size_t>(i) * n + j], p), p);
      }
      walk.base[i] = sum;
    }
  }
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

double StepCount(int bits) { return std::ldexp(1.0, bits); }

// Largest magnitude (max(|re|, |im|)) of a row, or NaN when some entry is not finite.
double LargestMagnitude(const double* row, int n) {
  double largest = 0.0;
  for (int j = 0; j < n; ++j) {
    if (!std::isfinite(row[j])) return std::nan("");
    largest = std::max(largest, std::fabs(row[j]));
  }
  return largest;
}
double LargestMagnitude(const std::complex<double>* row, int n) {
  double largest = 0.0;
  for (int j = 0; j < n; ++j) {
    if (!std::isfinite(row[j].real()) || !std::isfinite(row[j].imag())) return std::nan("");
    largest = std::max({largest, std::fabs(row[j].real()), std::fabs(row[j].imag())});
  }
  return largest;
}

double ScaleByPowerOfTwo(double x, int e) { return std::ldexp(x, e); }
std::complex<double> ScaleByPowerOfTwo(std::complex<double> x, int e) {
  return {std::ldexp(x.real(), e), std::ldexp(x.imag(), e)};
}

enum class RowScaling { kScaled, kZeroRow };

// Scales each row by a power of two so that its largest entry lies in [1, 2): exact, and it keeps
// the products of n row sums away from overflow, underflow and subnormal slowness whatever the
// scale of the input. Adds the exponents taken out to *exponent. A zero row makes the permanent 0.
template <typename T>
absl::StatusOr<RowScaling> NormalizeRows(std::vector<T>& a, int n, int* exponent) {
  for (int i = 0; i < n; ++i) {
    T* row = a.data() + static_cast<size_t>(i) * n;
    const double largest = LargestMagnitude(row, n);
    if (std::isnan(largest)) {
      return absl::InvalidArgumentError(
          absl::StrCat("matrix row ", i, " has a NaN or infinite entry"));
    }
    if (largest == 0.0) return RowScaling::kZeroRow;
    const int e = std::ilogb(largest);
    // Entry by entry: 2^-e itself overflows for a row of subnormals (e < -1023).
    for (int j = 0; j < n; ++j) row[j] = ScaleByPowerOfTwo(row[j], -e);
    *exponent += e;
  }
  return RowScaling::kScaled;
}

// The matrix as doubles or complex doubles (FLOAT32 and COMPLEX64 are widened: the sums are done
// in double whatever the input precision).
template <typename T>
std::vector<T> Widen(const MatrixView& a) {
  std::vector<T> out(static_cast<size_t>(a.size()));
  switch (a.dtype) {
    case DType::kFloat32: {
      const auto v = a.As<float>();
      std::copy(v.begin(), v.end(), out.begin());
      break;
    }
    case DType::kFloat64: {
      const auto v = a.As<double>();
      std::copy(v.begin(), v.end(), out.begin());
      break;
    }
    case DType::kComplex64: {
      if constexpr (!std::is_same_v<T, double>) {
        const auto v = a.As<std::complex<float>>();
        std::transform(v.begin(), v.end(), out.begin(), [](std::complex<float> x) { return T(x); });
      }
      break;
    }
    case DType::kComplex128: {
      if constexpr (!std::is_same_v<T, double>) {
        const auto v = a.As<std::complex<double>>();
        std::copy(v.begin(), v.end(), out.begin());
      }
      break;
    }
    default:
      break;
  }
  return out;
}

std::complex<double> ScaledValue(const CompensatedSum& sum, double sign, int exponent) {
  return sign * std::ldexp(sum.value(), exponent);
}
std::complex<double> ScaledValue(const ComplexCompensatedSum& sum, double sign, int exponent) {
  const std::complex<double> value = sum.value();
  return {sign * std::ldexp(value.real(), exponent), sign * std::ldexp(value.imag(), exponent)};
}

// The real (T = double) or complex permanent, from the plan builder and chunk walk for T.
template <typename T, typename Sum>
absl::StatusOr<std::complex<double>> FloatPermanent(
    const MatrixView& a, int n, PermanentMethod method, int threads, JobControl* control,
    WalkPlan<T> (*make_plan)(const std::vector<T>&, int, PermanentMethod),
    Sum (*walk)(const WalkPlan<T>&, uint64_t, uint64_t)) {
  std::vector<T> m = Widen<T>(a);
  int exponent = 0;
  const absl::StatusOr<RowScaling> scaling = NormalizeRows(m, n, &exponent);
  if (!scaling.ok()) return scaling.status();
  if (*scaling == RowScaling::kZeroRow) return std::complex<double>(0.0);
  const WalkPlan<T> plan = make_plan(m, n, method);
  const ChunkPlan chunks = PlanChunks(plan.bits, n);
  std::vector<Sum> partial(static_cast<size_t>(chunks.count));
  if (!RunItems(chunks.count, threads, control,
                [&](int64_t c) { partial[c] = walk(plan, chunks.begin(c), chunks.end(c)); })) {
    return Cancelled();
  }
  // Combined in chunk order, so the result does not depend on the number of threads.
  Sum total;
  for (const Sum& s : partial) total.Add(s);
  double sign = 1.0;
  if (method == PermanentMethod::kGlynn) {
    exponent -= n - 1;
  } else if (n % 2 != 0) {
    sign = -1.0;
  }
  return ScaledValue(total, sign, exponent);
}

// log2 of prod_i sum_j |a_ij|, which bounds |per A|; -infinity when some row is zero.
long double Log2PermanentBound(std::span<const int64_t> a, int n) {
  long double bits = 0.0L;
  for (int i = 0; i < n; ++i) {
    long double row = 0.0L;
    for (int j = 0; j < n; ++j) row += std::fabs(static_cast<long double>(a[i * n + j]));
    bits += std::log2(row);
  }
  return bits;
}

struct ExactPermanent {
  std::string decimal;
  int primes = 0;
};

absl::StatusOr<ExactPermanent> IntegerPermanent(const MatrixView& a, int n, PermanentMethod method,
                                                int threads, JobControl* control) {
  const std::span<const int64_t> m = a.As<int64_t>();
  const long double bound_bits = Log2PermanentBound(m, n);
  if (std::isinf(bound_bits)) return ExactPermanent{"0", 0};
  const std::vector<uint64_t> primes =
      LargePrimes(PrimesForBound(static_cast<double>(std::max(bound_bits, 0.0L))));
  std::vector<ModularPlan> plans;
  plans.reserve(primes.size());
  for (uint64_t p : primes) plans.push_back(MakeModularPlan(m, n, method, p));
  const ChunkPlan chunks = PlanChunks(WalkBits(n, method), n);
  const ModularChunkFn walk = SelectModularChunk();
  const int64_t items = chunks.count * static_cast<int64_t>(primes.size());
  std::vector<uint64_t> partial(static_cast<size_t>(items));
  if (!RunItems(items, threads, control, [&](int64_t item) {
        const int64_t c = item % chunks.count;
        partial[item] = walk(plans[item / chunks.count], chunks.begin(c), chunks.end(c));
      })) {
    return Cancelled();
  }
  std::vector<uint64_t> residues(primes.size());
  for (size_t q = 0; q < primes.size(); ++q) {
    const uint64_t p = primes[q];
    uint64_t sum = 0;
    for (int64_t c = 0; c < chunks.count; ++c) {
      sum = AddMod(sum, partial[q * chunks.count + c], p);
    }
    // Undo the R^-(n-1) of the Montgomery products, then apply the formula's sign and scale.
    sum = MulMod(sum, PowMod(plans[q].modulus.r_mod_p(), n - 1, p), p);
    if (method == PermanentMethod::kGlynn) {
      sum = MulMod(sum, InvMod(PowMod(2, n - 1, p), p), p);
    } else if (n % 2 != 0) {
      sum = SubMod(0, sum, p);
    }
    residues[q] = sum;
  }
  return ExactPermanent{ReconstructSigned(residues, primes), static_cast<int>(primes.size())};
}

}  // namespace

absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                          int threads, JobControl* control) {
  if (a.rows != a.cols || a.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix is ", a.rows, "x", a.cols, ", want a non-empty square matrix"));
  }
  if (a.rows > kMaxOrder) {
    return absl::InvalidArgumentError(absl::StrCat("matrix is ", a.rows, "x", a.cols,
                                                   ", the permanent supports n <= ", kMaxOrder));
  }
  if (a.dtype == DType::kUInt32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix.dtype is ", std::string(DTypeName(a.dtype)), ", want floating point or int64"));
  }
  if (IsCancelled(control)) return Cancelled();
  const int n = static_cast<int>(a.rows);
  threads = std::max(threads, 1);

  PermanentResult result;
  result.method_used =
      options.method == PermanentMethod::kRyser ? PermanentMethod::kRyser : PermanentMethod::kGlynn;
  const int bits = WalkBits(n, result.method_used);
  result.stats.bytes_moved = a.byte_size();
  result.stats.flops = StepCount(bits) * 2.0 * n * (IsComplex(a.dtype) ? 4.0 : 1.0);

  if (a.dtype == DType::kInt64) {
    absl::StatusOr<ExactPermanent> exact =
        IntegerPermanent(a, n, result.method_used, threads, control);
    if (!exact.ok()) return exact.status();
    result.exact = std::move(exact->decimal);
    // The exact value is the truth; `value` is its nearest double (or +-inf past 1.8e308).
    result.value = std::strtod(result.exact.c_str(), nullptr);
    result.stats.flops *= std::max(exact->primes, 1);
  } else {
    absl::StatusOr<std::complex<double>> value =
        IsComplex(a.dtype)
            ? FloatPermanent(a, n, result.method_used, threads, control,
                             &MakeFloatPlan<std::complex<double>>, SelectComplexChunk())
            : FloatPermanent(a, n, result.method_used, threads, control, &MakeRealPlan,
                             SelectRealChunk());
    if (!value.ok()) return value.status();
    result.value = *value;
  }
  ReportProgress(control, 1.0);
  return result;
}

}  // namespace matrixd::cpu
