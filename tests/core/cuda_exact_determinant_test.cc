// The GPU's exact integer determinant (core/cuda/exact_determinant.h: batched LU mod random 24-bit
// primes, CRT, early stop) against the CPU backend's exact decimal, and the batched modular LU
// (core/cuda/modular_lu.h) against the single-prime one, prime by prime, including primes modulo
// which the matrix is singular. Skips without a CUDA device.
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/exact_determinant.h"
#include "core/cuda/modular_lu.h"
#include "core/make_backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

// n x n entries uniform in [-bound, bound]; every seventh entry up to 2^40 when `wide`.
std::vector<int64_t> RandomEntries(int64_t n, int64_t bound, bool wide, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> small(-bound, bound);
  std::uniform_int_distribution<int64_t> large(-(int64_t{1} << 40), int64_t{1} << 40);
  std::vector<int64_t> a(static_cast<size_t>(n * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = wide && i % 7 == 3 ? large(rng) : small(rng);
  return a;
}

// L U with L unit lower and U unit upper triangular, small random entries: det = 1.
std::vector<int64_t> Unimodular(int64_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> entry(-2, 2);
  std::vector<int64_t> l(static_cast<size_t>(n * n), 0), u(static_cast<size_t>(n * n), 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (j < i) l[i * n + j] = entry(rng);
      if (j > i) u[i * n + j] = entry(rng);
    }
    l[i * n + i] = u[i * n + i] = 1;
  }
  std::vector<int64_t> a(static_cast<size_t>(n * n), 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k <= i; ++k) {
      for (int64_t j = k; j < n; ++j) a[i * n + j] += l[i * n + k] * u[k * n + j];
    }
  }
  return a;
}

class CudaExactDeterminantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here";
    // Every order on the device (the server answers n <= 64 on the host: host_determinant.h).
    absl::StatusOr<std::unique_ptr<Backend>> gpu =
        MakeBackend("cuda", {.host_max_orders = {.determinant = 0}});
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    gpu_ = *std::move(gpu);
    absl::StatusOr<std::unique_ptr<Backend>> cpu = MakeBackend("cpu", {});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = *std::move(cpu);
  }

  static DeterminantResult Run(Backend& backend, const Matrix& a) {
    absl::StatusOr<DeterminantResult> r = backend.Determinant(a.view(), {}, nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : DeterminantResult{};
  }

  // The GPU's exact value equals the CPU's; returns the GPU's result.
  DeterminantResult ExpectSameExact(int64_t n, const std::vector<int64_t>& values) {
    const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
    const DeterminantResult cpu = Run(*cpu_, a);
    DeterminantResult gpu = Run(*gpu_, a);
    EXPECT_FALSE(cpu.exact.empty()) << "the CPU backend gave no exact value at n=" << n;
    EXPECT_EQ(gpu.exact, cpu.exact) << "n=" << n;
    EXPECT_TRUE(gpu.certificate.has_value());
    if (!gpu.certificate.has_value()) gpu.certificate.emplace();  // the callers read it
    const ExactCertificate& c = *gpu.certificate;
    EXPECT_EQ(c.primes.size(), c.residues.size());
    if (c.early_stop) {
      EXPECT_LT(c.covered_bits, c.bound_bits);
      EXPECT_GT(c.error_probability, 0.0);
      EXPECT_LE(c.error_probability, 1e-15);
    } else if (!c.primes.empty()) {
      EXPECT_GT(c.covered_bits, c.bound_bits);
      EXPECT_EQ(c.error_probability, 0.0);
    }
    return gpu;
  }

  std::unique_ptr<Backend> gpu_;
  std::unique_ptr<Backend> cpu_;
};

TEST_F(CudaExactDeterminantTest, RandomTwentyBitEntriesMatchTheCpu) {
  std::mt19937_64 rng(131);
  for (const int64_t n : {1, 2, 10, 50, 200}) {
    SCOPED_TRACE(n);
    const DeterminantResult r =
        ExpectSameExact(n, RandomEntries(n, (int64_t{1} << 20) - 1, /*wide=*/false, rng));
    // A random determinant is near Hadamard's bound: no early stop.
    EXPECT_FALSE(r.certificate->early_stop);
    for (const uint64_t p : r.certificate->primes) {
      EXPECT_GE(p, kExactPrimeLow);
      EXPECT_LT(p, kExactPrimeHigh);
    }
  }
}

TEST_F(CudaExactDeterminantTest, EntriesUpToTwoToTheFortyMatchTheCpu) {
  std::mt19937_64 rng(132);
  for (const int64_t n : {1, 2, 10, 50, 200}) {
    SCOPED_TRACE(n);
    ExpectSameExact(n, RandomEntries(n, (int64_t{1} << 20) - 1, /*wide=*/true, rng));
  }
}

TEST_F(CudaExactDeterminantTest, NegativeEntriesMatchTheCpu) {
  std::mt19937_64 rng(133);
  for (const int64_t n : {3, 65, 129}) {  // around the leaf (64) and panel (128) widths
    std::vector<int64_t> a = RandomEntries(n, 1000, /*wide=*/false, rng);
    for (int64_t& x : a) x = -std::abs(x) - 1;
    SCOPED_TRACE(n);
    ExpectSameExact(n, a);
  }
}

TEST_F(CudaExactDeterminantTest, SingularMatricesAreZeroByEarlyStop) {
  std::mt19937_64 rng(134);
  for (const int64_t n : {10, 50, 200}) {
    SCOPED_TRACE(n);
    std::vector<int64_t> a = RandomEntries(n, (int64_t{1} << 20) - 1, /*wide=*/false, rng);
    // Row n-1 := row 0 + row 1: rank n - 1.
    for (int64_t j = 0; j < n; ++j) a[(n - 1) * n + j] = a[j] + a[n + j];
    const DeterminantResult r = ExpectSameExact(n, a);
    EXPECT_EQ(r.exact, "0");
    EXPECT_TRUE(r.value.is_zero());
    // n = 10 needs fewer primes than the first batch holds: covered, no early stop.
    EXPECT_EQ(r.certificate->early_stop, n >= 50);
  }
}

TEST_F(CudaExactDeterminantTest, UnimodularMatricesStopEarlyAtPlusOrMinusOne) {
  std::mt19937_64 rng(135);
  for (const int64_t n : {50, 200}) {
    SCOPED_TRACE(n);
    std::vector<int64_t> a = Unimodular(n, rng);
    DeterminantResult r = ExpectSameExact(n, a);
    EXPECT_EQ(r.exact, "1");
    // Stopped early, or (small n, small entries: the H100 run of 2026-11-26 at n = 50) the first
    // batch already covered Hadamard's bound.
    EXPECT_TRUE(r.certificate->early_stop ||
                r.certificate->covered_bits >= r.certificate->bound_bits);
    if (n >= 200) {
      EXPECT_TRUE(r.certificate->early_stop);
    }
    // At most the first batch (16 primes) was needed.
    EXPECT_LE(r.certificate->primes.size(), 16u);
    for (int64_t j = 0; j < n; ++j) a[j] = -a[j];  // det = -1
    r = ExpectSameExact(n, a);
    EXPECT_EQ(r.exact, "-1");
    EXPECT_TRUE(r.certificate->early_stop ||
                r.certificate->covered_bits >= r.certificate->bound_bits);
  }
}

TEST_F(CudaExactDeterminantTest, ZeroRowNeedsNoPrime) {
  std::mt19937_64 rng(136);
  const int64_t n = 20;
  std::vector<int64_t> a = RandomEntries(n, 1000, /*wide=*/false, rng);
  for (int64_t j = 0; j < n; ++j) a[7 * n + j] = 0;
  const DeterminantResult r = ExpectSameExact(n, a);
  EXPECT_EQ(r.exact, "0");
  EXPECT_TRUE(r.certificate->primes.empty());
}

// The batched LU against one ModularLuDeterminant per prime, on a matrix singular modulo some of
// the primes (but not over Z): those give 0 and the others are not disturbed.
TEST_F(CudaExactDeterminantTest, BatchedResiduesMatchOnePrimeAtATime) {
  absl::StatusOr<std::unique_ptr<DeviceContext>> made = DeviceContext::Create(0);
  ASSERT_TRUE(made.ok()) << made.status();
  DeviceContext& context = **made;
  const std::vector<uint64_t> primes = {8388617, 16777213, 65521, 3, 2, 8388593, 16777199};
  std::mt19937_64 rng(137);
  for (const int64_t n : {1, 63, 64, 130, 300}) {
    SCOPED_TRACE(n);
    std::vector<int64_t> values = RandomEntries(n, int64_t{1} << 30, /*wide=*/false, rng);
    if (n > 2) {
      // Row 2 := row 1 + 16777213 v: singular mod 16777213 only (and possibly mod others by
      // chance, which the comparison covers as well).
      for (int64_t j = 0; j < n; ++j) values[2 * n + j] = values[n + j] + 16777213 * (j % 3);
    }
    const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
    const size_t bytes = static_cast<size_t>(n * n) * sizeof(int64_t);
    absl::StatusOr<DeviceBuffer> entries = context.Allocate(bytes);
    ASSERT_TRUE(entries.ok()) << entries.status();
    ASSERT_TRUE(context.Upload(values.data(), *entries, bytes).ok());
    ComputeStats stats;
    absl::StatusOr<std::vector<uint64_t>> batched =
        BatchedModularLuDeterminants(entries->as<int64_t>(), n, primes, context, nullptr, &stats);
    ASSERT_TRUE(batched.ok()) << batched.status();
    ASSERT_EQ(batched->size(), primes.size());
    EXPECT_GT(stats.flops, 0.0);
    for (size_t k = 0; k < primes.size(); ++k) {
      absl::StatusOr<DeterminantResult> one =
          ModularLuDeterminant(a.view(), primes[k], context, nullptr);
      ASSERT_TRUE(one.ok()) << one.status();
      EXPECT_EQ((*batched)[k], one->residue) << "p=" << primes[k];
    }
  }
}

// The one-piece products by the fused kernel (the default) and through cublasDgemmStridedBatched
// (then reduced) give the same residues: both sum exactly. The
// second set's primes (above 2^24) take two pieces for the trailing updates (depth 128) but one
// for the panels' products of depth 64, which then go through the fused kernel.
TEST_F(CudaExactDeterminantTest, BatchedResiduesAreTheSameFusedAndThroughCublas) {
  absl::StatusOr<std::unique_ptr<DeviceContext>> made = DeviceContext::Create(0);
  ASSERT_TRUE(made.ok()) << made.status();
  DeviceContext& context = **made;
  const std::vector<std::vector<uint64_t>> prime_sets = {
      {16777213, 16777199, 8388617, 12582917, 65521}, {20000003, 20000023}};
  std::mt19937_64 rng(211);
  const ModularLuTuning before = GetModularLuTuning();
  for (const auto& [n, primes] : {std::pair{int64_t{129}, prime_sets[0]},
                                  {int64_t{300}, prime_sets[0]},
                                  {int64_t{520}, prime_sets[0]},
                                  {int64_t{300}, prime_sets[1]}}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n << " largest prime " << primes[0]);
    const std::vector<int64_t> values = RandomEntries(n, (int64_t{1} << 20) - 1, false, rng);
    const size_t bytes = static_cast<size_t>(n * n) * sizeof(int64_t);
    absl::StatusOr<DeviceBuffer> entries = context.Allocate(bytes);
    ASSERT_TRUE(entries.ok()) << entries.status();
    ASSERT_TRUE(context.Upload(values.data(), *entries, bytes).ok());
    std::vector<std::vector<uint64_t>> residues;
    for (const bool fused : {true, false}) {
      ModularLuTuning tuning = before;
      tuning.fused_products = fused;
      SetModularLuTuning(tuning);
      ComputeStats stats;
      absl::StatusOr<std::vector<uint64_t>> batched =
          BatchedModularLuDeterminants(entries->as<int64_t>(), n, primes, context, nullptr, &stats);
      SetModularLuTuning(before);
      ASSERT_TRUE(batched.ok()) << batched.status();
      residues.push_back(*std::move(batched));
    }
    EXPECT_EQ(residues[0], residues[1]);
  }
}

}  // namespace
}  // namespace matrixd::cuda
