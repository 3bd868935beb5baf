// The CUDA condensation determinants (fused and one-kernel-per-step) and the modular LU, against
// the CPU backend and exact references; and the host/device modular reduction they use, tested on
// the host against 128-bit integer arithmetic (those tests need no GPU).
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "core/cuda/modular_reduction.h"
#include "core/modular_arithmetic.h"
#include "gtest/gtest.h"
#include "tests/core/cuda_context_test.h"

#ifdef MATRIXD_HAVE_CUDA
#include "core/backend.h"
#include "core/cuda/condensation.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/modular_lu.h"
#include "core/make_backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "core/scaled_number.h"
#endif

namespace matrixd::cuda {
namespace {

__extension__ typedef unsigned __int128 Uint128;

constexpr uint64_t kPrime16 = 65521;          // largest prime below 2^16
constexpr uint64_t kMersenne31 = 2147483647;  // 2^31 - 1
constexpr uint64_t kMersenne61 = (uint64_t{1} << 61) - 1;
constexpr uint64_t kPrimeNear2To62 = 4611686018427387847;  // largest prime below 2^62

// ---- Barrett reduction on the host (no GPU needed) ----

std::vector<uint64_t> TestModuli(std::mt19937_64& rng) {
  std::vector<uint64_t> moduli = {2,
                                  3,
                                  5,
                                  7,
                                  kPrime16,
                                  kMersenne31,
                                  kMersenne61,
                                  kPrimeNear2To62,
                                  (uint64_t{1} << 62) - 1,
                                  (uint64_t{1} << 26) - 5};
  // Every bit length, at both ends of its range and in between (Barrett needs no primality).
  for (int bits = 2; bits <= 62; ++bits) {
    const uint64_t low = uint64_t{1} << (bits - 1);
    moduli.push_back(low);
    moduli.push_back(low | (rng() & (low - 1)));
    moduli.push_back(low | (low - 1));
  }
  return moduli;
}

std::vector<uint64_t> SampleResidues(uint64_t p, std::mt19937_64& rng) {
  std::vector<uint64_t> values = {0, 1, p - 1, p / 2, (p + 1) / 2};
  for (int i = 0; i < 60; ++i) values.push_back(rng() % p);
  return values;
}

TEST(BarrettModulus, MulMatchesInt128Remainder) {
  std::mt19937_64 rng(1);
  for (uint64_t p : TestModuli(rng)) {
    const BarrettModulus modulus = BarrettModulus::Of(p);
    for (uint64_t a : SampleResidues(p, rng)) {
      for (uint64_t b : SampleResidues(p, rng)) {
        const uint64_t expected = static_cast<uint64_t>(static_cast<Uint128>(a) * b % p);
        ASSERT_EQ(modulus.Mul(a, b), expected) << a << " * " << b << " mod " << p;
      }
    }
  }
}

TEST(BarrettModulus, WideSumsReduceLikeInt128) {
  std::mt19937_64 rng(2);
  for (uint64_t p : TestModuli(rng)) {
    const BarrettModulus modulus = BarrettModulus::Of(p);
    // Up to 300 products of the largest residues: the 192-bit sum carries into its top word.
    for (int terms : {0, 1, 2, 17, 300}) {
      Wide192 sum;
      uint64_t expected = 0;
      for (int t = 0; t < terms; ++t) {
        const uint64_t a = t % 2 == 0 ? p - 1 : rng() % p;
        const uint64_t b = t % 3 == 0 ? p - 1 : rng() % p;
        MultiplyAccumulate(a, b, sum);
        expected = (expected + static_cast<uint64_t>(static_cast<Uint128>(a) * b % p)) % p;
      }
      ASSERT_EQ(modulus.Reduce(sum), expected) << terms << " terms mod " << p;
    }
  }
}

TEST(BarrettModulus, MultiplyAccumulateCarriesIntoTheTopWord) {
  // 2^64-1 squared, twice: (2^128 - 2^65 + 1) * 2 = 2^129 - 2^66 + 2.
  Wide192 sum;
  constexpr uint64_t kAllOnes = ~uint64_t{0};
  MultiplyAccumulate(kAllOnes, kAllOnes, sum);
  MultiplyAccumulate(kAllOnes, kAllOnes, sum);
  EXPECT_EQ(sum.lo, 2u);
  EXPECT_EQ(sum.mid, kAllOnes - 3);  // 2^64 - 4: the borrow of -2^66 from 2^129
  EXPECT_EQ(sum.hi, 1u);
}

TEST(BarrettModulus, InverseTimesValueIsOne) {
  std::mt19937_64 rng(3);
  for (uint64_t p :
       {uint64_t{2}, uint64_t{3}, kPrime16, kMersenne31, kMersenne61, kPrimeNear2To62}) {
    const BarrettModulus modulus = BarrettModulus::Of(p);
    for (uint64_t a : SampleResidues(p, rng)) {
      if (a == 0) continue;
      EXPECT_EQ(modulus.Mul(modulus.Inverse(a), a), 1u) << a << " mod " << p;
    }
  }
}

TEST(BarrettModulus, FromSignedMatchesReduceSigned) {
  std::mt19937_64 rng(4);
  for (uint64_t p : {uint64_t{2}, kPrime16, kMersenne31, kPrimeNear2To62}) {
    const BarrettModulus modulus = BarrettModulus::Of(p);
    for (int64_t v : {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                      int64_t{-1}, int64_t{0}, -static_cast<int64_t>(p),
                      static_cast<int64_t>(rng()), static_cast<int64_t>(rng())}) {
      EXPECT_EQ(modulus.FromSigned(v), ReduceSigned(v, p)) << v << " mod " << p;
    }
  }
}

#ifdef MATRIXD_HAVE_CUDA

// ---- On the GPU ----

std::vector<double> RandomReal(int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (double& x : a) x = uniform(rng);
  return a;
}

std::vector<int64_t> RandomInt64(int n, std::mt19937_64& rng) {
  std::vector<int64_t> a(static_cast<size_t>(n) * n);
  for (int64_t& x : a) x = static_cast<int64_t>(rng());
  if (!a.empty()) a[a.size() / 2] = std::numeric_limits<int64_t>::min();
  return a;
}

// det mod p by plain Gaussian elimination on the host: the exact reference for small n.
uint64_t HostResidue(const std::vector<int64_t>& entries, int n, uint64_t p) {
  std::vector<uint64_t> a(entries.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = ReduceSigned(entries[i], p);
  uint64_t det = 1;
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    while (pivot < n && a[pivot * n + col] == 0) ++pivot;
    if (pivot == n) return 0;
    if (pivot != col) {
      for (int j = 0; j < n; ++j) std::swap(a[pivot * n + j], a[col * n + j]);
      det = det == 0 ? 0 : p - det;
    }
    det = MulMod(det, a[col * n + col], p);
    const uint64_t inverse = InvMod(a[col * n + col], p);
    for (int i = col + 1; i < n; ++i) {
      const uint64_t f = MulMod(a[i * n + col], inverse, p);
      for (int j = col; j < n; ++j)
        a[i * n + j] = SubMod(a[i * n + j], MulMod(f, a[col * n + j], p), p);
    }
  }
  return det;
}

class CudaCondensationTest : public CudaContextTest {
 protected:
  void SetUp() override {
    CudaContextTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::StatusOr<std::unique_ptr<Backend>> cpu = MakeBackend("cpu", {});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = *std::move(cpu);
  }

  ScaledNumber Fused(const Matrix& a) {
    absl::StatusOr<DeterminantResult> r = CondensationDeterminant(a.view(), *context_, nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return ScaledNumber::Zero();
    EXPECT_EQ(r->method_used, DeterminantMethod::kCondensation);
    return r->value;
  }
  ScaledNumber Unfused(const Matrix& a) {
    absl::StatusOr<DeterminantResult> r =
        CondensationDeterminantUnfused(a.view(), *context_, nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->value : ScaledNumber::Zero();
  }
  // The CPU backend's determinant (LAPACK LU unless `method` says otherwise).
  DeterminantResult Cpu(const Matrix& a, uint64_t modulus = 0,
                        DeterminantMethod method = DeterminantMethod::kLu) {
    DeterminantOptions options;
    options.method = method;
    options.modulus = modulus;
    absl::StatusOr<DeterminantResult> r = cpu_->Determinant(a.view(), options, nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : DeterminantResult{};
  }

  // The three GPU residues of det(a) mod p.
  struct Residues {
    uint64_t lu;
    uint64_t fused;
    uint64_t unfused;
  };
  Residues Modular(const Matrix& a, uint64_t p) {
    absl::StatusOr<DeterminantResult> lu = ModularLuDeterminant(a.view(), p, *context_, nullptr);
    absl::StatusOr<DeterminantResult> fused =
        ModularCondensationDeterminant(a.view(), p, *context_, nullptr);
    absl::StatusOr<DeterminantResult> unfused =
        ModularCondensationDeterminantUnfused(a.view(), p, *context_, nullptr);
    EXPECT_TRUE(lu.ok()) << lu.status();
    EXPECT_TRUE(fused.ok()) << fused.status();
    EXPECT_TRUE(unfused.ok()) << unfused.status();
    if (!lu.ok() || !fused.ok() || !unfused.ok()) return {p, p, p};
    EXPECT_EQ(lu->method_used, DeterminantMethod::kLu);
    EXPECT_EQ(fused->method_used, DeterminantMethod::kCondensation);
    if (a.rows() > 1) {
      EXPECT_GT(lu->stats.flops, 0.0);
    }
    EXPECT_GT(lu->stats.bytes_moved, 0u);
    return {lu->residue, fused->residue, unfused->residue};
  }

  std::unique_ptr<Backend> cpu_;
};

// |log a - log b| and |phase a - phase b| both within tolerance.
void ExpectSameDeterminant(const ScaledNumber& a, const ScaledNumber& b, double tolerance) {
  ASSERT_FALSE(b.is_zero());
  EXPECT_NEAR(a.log_abs(), b.log_abs(), tolerance);
  EXPECT_LT(std::abs(a.phase() - b.phase()), tolerance);
}

// Condensation's pivot (closest to 1, not largest) is less stable than partial pivoting: on some
// random matrices of these orders its result is 1e-7 away from LU's in either schedule (the fused
// and the stepwise one round differently). A wrong update, sign or pivot is off by O(1).
constexpr double kRandomTolerance = 1e-6;

TEST_F(CudaCondensationTest, FusedAndUnfusedMatchCpuOnRandomRealMatrices) {
  std::mt19937_64 rng(10);
  for (int n = 1; n <= 300; ++n) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const Matrix a = Matrix::FromValues<double>(n, n, RandomReal(n, rng));
    const ScaledNumber reference = Cpu(a).value;
    ExpectSameDeterminant(Fused(a), reference, kRandomTolerance);
    ExpectSameDeterminant(Unfused(a), reference, kRandomTolerance);
  }
}

TEST_F(CudaCondensationTest, FusedAndUnfusedMatchCpuAtOrderOneThousand) {
  std::mt19937_64 rng(11);
  const int n = 1000;
  const Matrix a = Matrix::FromValues<double>(n, n, RandomReal(n, rng));
  const ScaledNumber reference = Cpu(a).value;
  ExpectSameDeterminant(Fused(a), reference, kRandomTolerance);
  ExpectSameDeterminant(Unfused(a), reference, kRandomTolerance);
}

TEST_F(CudaCondensationTest, DiagonallyDominantMatricesMatchCpuClosely) {
  // Rows scaled to a largest entry in [1, 2) make the diagonal the entry closest to 1, and
  // elimination on the diagonal of a diagonally dominant matrix has no growth: here condensation
  // is as accurate as LU, so a tight bound checks every fused pass.
  std::mt19937_64 rng(19);
  for (int n : {2, 31, 32, 33, 65, 300, 1000}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    std::vector<double> values = RandomReal(n, rng);
    for (int i = 0; i < n; ++i) values[i * n + i] += n;
    const Matrix a = Matrix::FromValues<double>(n, n, values);
    const ScaledNumber reference = Cpu(a).value;
    ExpectSameDeterminant(Fused(a), reference, 1e-11);
    ExpectSameDeterminant(Unfused(a), reference, 1e-11);
  }
}

TEST_F(CudaCondensationTest, ComplexAndNarrowInputsMatchCpu) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int n : {1, 2, 3, 31, 32, 33, 100, 257}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    std::vector<std::complex<double>> z(static_cast<size_t>(n) * n);
    for (auto& x : z) x = {uniform(rng), uniform(rng)};
    const Matrix complex = Matrix::FromValues<std::complex<double>>(n, n, z);
    ExpectSameDeterminant(Fused(complex), Cpu(complex).value, kRandomTolerance);
    ExpectSameDeterminant(Unfused(complex), Cpu(complex).value, kRandomTolerance);
    std::vector<float> f(static_cast<size_t>(n) * n);
    for (float& x : f) x = static_cast<float>(uniform(rng));
    const Matrix narrow = Matrix::FromValues<float>(n, n, f);
    ExpectSameDeterminant(Fused(narrow), Cpu(narrow).value, kRandomTolerance);
    std::vector<int64_t> k(static_cast<size_t>(n) * n);
    for (int64_t& x : k) x = static_cast<int64_t>(rng() % 201) - 100;
    const Matrix integer = Matrix::FromValues<int64_t>(n, n, k);
    ExpectSameDeterminant(Fused(integer), Cpu(integer).value, kRandomTolerance);
  }
}

TEST_F(CudaCondensationTest, ZeroRowGivesExactZero) {
  std::mt19937_64 rng(13);
  // Row 0 is zero at the first step; row 40 becomes the first row inside the second fused pass.
  for (int zero_row : {0, 40}) {
    SCOPED_TRACE(::testing::Message() << "zero row " << zero_row);
    const int n = 100;
    std::vector<double> values = RandomReal(n, rng);
    for (int j = 0; j < n; ++j) values[zero_row * n + j] = 0.0;
    const Matrix a = Matrix::FromValues<double>(n, n, values);
    EXPECT_TRUE(Fused(a).is_zero());
    EXPECT_TRUE(Unfused(a).is_zero());
  }
}

TEST_F(CudaCondensationTest, ClosestToOnePivotKeepsTinyFirstEntryHarmless) {
  // First row (1e-300, 1, ...): the paper's original first-non-zero pivot 1e-300 would scale
  // its column by 1e300 and swamp every other entry; the entry closest to 1 is the safe pivot.
  std::mt19937_64 rng(14);
  for (int n : {8, 200}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    std::vector<double> values = RandomReal(n, rng);
    values[0] = 1e-300;
    values[n - 1] = 1.0;  // in the last panel block of the fused kernel
    const Matrix a = Matrix::FromValues<double>(n, n, values);
    const ScaledNumber reference = Cpu(a).value;
    ExpectSameDeterminant(Fused(a), reference, 1e-8);
    ExpectSameDeterminant(Unfused(a), reference, 1e-8);
  }
}

TEST_F(CudaCondensationTest, HilbertEightHundredHasFiniteLogAbs) {
  const int n = 800;
  std::vector<double> h(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) h[i * n + j] = 1.0 / (i + j + 1);
  }
  const Matrix a = Matrix::FromValues<double>(n, n, h);
  for (const ScaledNumber& det : {Fused(a), Unfused(a)}) {
    EXPECT_FALSE(det.is_zero());
    EXPECT_TRUE(std::isfinite(det.log_abs()));
    EXPECT_LT(det.log_abs(), -1000.0);  // det H_800 = 10^-384681: numerically singular, but tiny
  }
}

TEST_F(CudaCondensationTest, ModularMatchesHostEliminationOnSmallMatrices) {
  std::mt19937_64 rng(15);
  for (uint64_t p : {kPrime16, kMersenne31, kPrimeNear2To62}) {
    for (int n : {1, 2, 17}) {
      SCOPED_TRACE(::testing::Message() << "p=" << p << " n=" << n);
      const std::vector<int64_t> values = RandomInt64(n, rng);
      const uint64_t expected = HostResidue(values, n, p);
      const Residues got = Modular(Matrix::FromValues<int64_t>(n, n, values), p);
      EXPECT_EQ(got.lu, expected);
      EXPECT_EQ(got.fused, expected);
      EXPECT_EQ(got.unfused, expected);
    }
  }
}

TEST_F(CudaCondensationTest, ModularMatchesCpuOnLargeMatrices) {
  std::mt19937_64 rng(16);
  for (uint64_t p : {kPrime16, kMersenne31, kPrimeNear2To62}) {
    for (int n : {300, 1024}) {
      SCOPED_TRACE(::testing::Message() << "p=" << p << " n=" << n);
      const Matrix a = Matrix::FromValues<int64_t>(n, n, RandomInt64(n, rng));
      const uint64_t expected = Cpu(a, p).residue;
      const Residues got = Modular(a, p);
      EXPECT_EQ(got.lu, expected);
      EXPECT_EQ(got.fused, expected);
      EXPECT_EQ(got.unfused, expected);
    }
  }
}

TEST_F(CudaCondensationTest, ModularSingularGivesZero) {
  // Row 70 = row 3 + row 9 + p * (small integers): singular mod p, not over the integers.
  std::mt19937_64 rng(17);
  for (uint64_t p : {kPrime16, kMersenne31}) {
    SCOPED_TRACE(::testing::Message() << "p=" << p);
    const int n = 100;
    std::vector<int64_t> values(static_cast<size_t>(n) * n);
    for (int64_t& x : values) x = static_cast<int64_t>(rng() % 2001) - 1000;
    for (int j = 0; j < n; ++j) {
      values[70 * n + j] = values[3 * n + j] + values[9 * n + j] +
                           static_cast<int64_t>(p) * (static_cast<int64_t>(rng() % 7) - 3);
    }
    const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
    ASSERT_NE(Cpu(a).value.log_abs(), -std::numeric_limits<double>::infinity());
    const Residues got = Modular(a, p);
    EXPECT_EQ(got.lu, 0u);
    EXPECT_EQ(got.fused, 0u);
    EXPECT_EQ(got.unfused, 0u);
  }
}

TEST_F(CudaCondensationTest, ModularPivotSkipsEntriesThatVanishModP) {
  // The first row is a multiple of p except its last entry: the first non-zero pivot lies in the
  // fused panel's last block, and every other column is first negated.
  std::mt19937_64 rng(18);
  const uint64_t p = kPrime16;
  const int n = 150;
  std::vector<int64_t> values(static_cast<size_t>(n) * n);
  for (int64_t& x : values) x = static_cast<int64_t>(rng() % 2000001) - 1000000;
  for (int j = 0; j + 1 < n; ++j) values[j] = static_cast<int64_t>(p) * (j % 5 - 2);
  const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
  const uint64_t expected = HostResidue(values, n, p);
  ASSERT_NE(expected, 0u);
  const Residues got = Modular(a, p);
  EXPECT_EQ(got.lu, expected);
  EXPECT_EQ(got.fused, expected);
  EXPECT_EQ(got.unfused, expected);
}

#endif  // MATRIXD_HAVE_CUDA

}  // namespace
}  // namespace matrixd::cuda
