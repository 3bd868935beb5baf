// The CUDA backend's own kernels where the backend-parameterized suites do not reach: permanents
// at orders whose walks span many slices (against the CPU backend and closed forms), cancelling
// and watching a long walk, block-sparse products at n = 1024 (against the dense product and the
// CPU's), and UINT32 wrap-around across many tiles (exactly against the CPU). Every test skips
// where there is no CUDA device.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "core/backend.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/permanent.h"
#include "core/job_control.h"
#include "core/make_backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using Complex = std::complex<double>;

class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: CUDA kernel tests skipped";
    absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    cuda_ = *std::move(cuda);
    absl::StatusOr<std::unique_ptr<Backend>> cpu = MakeBackend("cpu", {});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = *std::move(cpu);
  }

  Backend& cuda() { return *cuda_; }
  Backend& cpu() { return *cpu_; }

 private:
  std::unique_ptr<Backend> cuda_;
  std::unique_ptr<Backend> cpu_;
};

template <typename T>
std::vector<T> RandomValues(int64_t count, uint64_t seed, double low = -1.0, double high = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  std::vector<T> v(static_cast<size_t>(count));
  for (T& x : v) {
    if constexpr (std::is_same_v<T, Complex>) {
      const double re = dist(rng);
      x = Complex(re, dist(rng));
    } else {
      x = static_cast<T>(dist(rng));
    }
  }
  return v;
}

PermanentResult RunPermanent(Backend& backend, const Matrix& m, PermanentMethod method,
                             JobControl* control = nullptr) {
  PermanentOptions options;
  options.method = method;
  absl::StatusOr<PermanentResult> result = backend.Permanent(m.view(), options, control);
  EXPECT_TRUE(result.ok()) << backend.name() << ": " << result.status();
  return result.ok() ? *std::move(result) : PermanentResult{};
}

double RelativeDifference(Complex got, Complex want) {
  return std::abs(got - want) / std::abs(want);
}

// ---- Permanent ----

TEST_F(CudaKernelsTest, GlynnMatchesCpuFromTwentyFiveToThirty) {
  for (int n = 25; n <= 30; ++n) {
    const Matrix m = Matrix::FromValues<double>(n, n, RandomValues<double>(n * n, 100 + n));
    const PermanentResult gpu = RunPermanent(cuda(), m, PermanentMethod::kGlynn);
    const PermanentResult reference = RunPermanent(cpu(), m, PermanentMethod::kGlynn);
    ASSERT_NE(reference.value, Complex(0.0));
    EXPECT_LT(RelativeDifference(gpu.value, reference.value), 1e-12)
        << "n=" << n << " gpu " << gpu.value << " cpu " << reference.value;
    EXPECT_EQ(gpu.value.imag(), 0.0);
  }
}

TEST_F(CudaKernelsTest, RyserMatchesCpuAtTwentySixDespiteCancellation) {
  // Positive entries: Ryser's terms cancel by many orders of magnitude (the CPU notes ~7 at
  // n = 16), which the double-double row sums and products must survive.
  const int n = 26;
  const Matrix m = Matrix::FromValues<double>(n, n, RandomValues<double>(n * n, 200, 0.0, 1.0));
  const PermanentResult gpu = RunPermanent(cuda(), m, PermanentMethod::kRyser);
  const PermanentResult reference = RunPermanent(cpu(), m, PermanentMethod::kRyser);
  EXPECT_LT(RelativeDifference(gpu.value, reference.value), 1e-12)
      << "gpu " << gpu.value << " cpu " << reference.value;
}

TEST_F(CudaKernelsTest, ComplexGlynnMatchesCpuAtTwentySix) {
  const int n = 26;
  const Matrix m = Matrix::FromValues<Complex>(n, n, RandomValues<Complex>(n * n, 300));
  const PermanentResult gpu = RunPermanent(cuda(), m, PermanentMethod::kGlynn);
  const PermanentResult reference = RunPermanent(cpu(), m, PermanentMethod::kGlynn);
  // Both walk plain double row sums; the GPU's complex products use FMAs where the CPU's do not.
  EXPECT_LT(RelativeDifference(gpu.value, reference.value), 1e-10)
      << "gpu " << gpu.value << " cpu " << reference.value;
}

TEST_F(CudaKernelsTest, RankOneMatrixGivesFactorialTimesProductsAtThirty) {
  // per(u v^T) = n! prod u_i prod v_j: a closed form at an order no definition can reach.
  const int n = 30;
  const std::vector<double> u = RandomValues<double>(n, 400, 0.5, 1.5);
  const std::vector<double> v = RandomValues<double>(n, 401, 0.5, 1.5);
  std::vector<double> a(static_cast<size_t>(n * n));
  long double want = 1.0L;
  for (int i = 0; i < n; ++i) {
    want *= static_cast<long double>(i + 1) * u[i] * v[i];
    for (int j = 0; j < n; ++j) a[i * n + j] = u[i] * v[j];
  }
  // u_i v_j is rounded; the permanent of the rounded matrix differs from the closed form by at
  // most ~n * 2^-53 relative.
  const Matrix m = Matrix::FromValues<double>(n, n, a);
  for (const PermanentMethod method : {PermanentMethod::kGlynn, PermanentMethod::kRyser}) {
    const double got = RunPermanent(cuda(), m, method).value.real();
    EXPECT_LT(std::fabs((got - want) / want), 1e-13)
        << (method == PermanentMethod::kRyser ? "ryser " : "glynn ") << got << " want "
        << static_cast<double>(want);
  }
}

TEST_F(CudaKernelsTest, ExactInt64PermanentMatchesCpuAtTwentyTwo) {
  const int n = 22;
  std::mt19937_64 rng(500);
  std::uniform_int_distribution<int64_t> dist(-(int64_t{1} << 40), int64_t{1} << 40);
  std::vector<int64_t> a(static_cast<size_t>(n * n));
  for (int64_t& x : a) x = dist(rng);
  const Matrix m = Matrix::FromValues<int64_t>(n, n, a);
  for (const PermanentMethod method : {PermanentMethod::kGlynn, PermanentMethod::kRyser}) {
    const PermanentResult gpu = RunPermanent(cuda(), m, method);
    const PermanentResult reference = RunPermanent(cpu(), m, method);
    ASSERT_FALSE(reference.exact.empty());
    EXPECT_EQ(gpu.exact, reference.exact);
    EXPECT_EQ(gpu.value, reference.value);
  }
}

TEST_F(CudaKernelsTest, CancelStopsALongWalkWithinOneHundredMilliseconds) {
  // n = 36 takes seconds on an H100; cancel once the walk has visibly started.
  const int n = 36;
  const Matrix m = Matrix::FromValues<double>(n, n, RandomValues<double>(n * n, 600));
  JobControl control;
  absl::StatusOr<PermanentResult> result;
  std::atomic<bool> finished{false};
  std::chrono::steady_clock::time_point returned;
  std::thread job([&] {
    PermanentOptions options;
    options.method = PermanentMethod::kGlynn;
    result = cuda().Permanent(m.view(), options, &control);
    returned = std::chrono::steady_clock::now();
    finished.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (control.progress() == 0.0 && !finished.load() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double progress_at_cancel = control.progress();
  const auto cancelled = std::chrono::steady_clock::now();
  control.Cancel();
  job.join();
  EXPECT_GT(progress_at_cancel, 0.0);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
  EXPECT_EQ(result.status().message(), "permanent cancelled");
  const double latency_ms = std::chrono::duration<double, std::milli>(returned - cancelled).count();
  EXPECT_LT(latency_ms, 100.0);
  EXPECT_LT(control.progress(), 1.0);
}

TEST_F(CudaKernelsTest, ProgressRisesInStepsAndReachesOne) {
  // A walk of ~0.2 s on an H100: several slices.
  const int n = 33;
  const Matrix m = Matrix::FromValues<double>(n, n, RandomValues<double>(n * n, 700));
  JobControl control;
  std::atomic<bool> finished{false};
  std::vector<double> seen;
  std::thread watcher([&] {
    while (!finished.load()) {
      const double p = control.progress();
      if (seen.empty() || p != seen.back()) seen.push_back(p);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  RunPermanent(cuda(), m, PermanentMethod::kGlynn, &control);
  finished.store(true);
  watcher.join();
  EXPECT_EQ(control.progress(), 1.0);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  // Several slices, each reported: more than the 0 and 1 of a single launch.
  EXPECT_GE(seen.size(), 3u);
}

TEST_F(CudaKernelsTest, RefusesOrderBeyondTheKernels) {
  constexpr int64_t kAbove = cuda::kMaxPermanentOrder + 1;
  const Matrix m(kAbove, kAbove, DType::kFloat64);
  const absl::StatusOr<PermanentResult> result = cuda().Permanent(m.view(), {}, nullptr);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("matrix"), std::string::npos) << result.status();
}

// ---- Products ----

// Each block x block block of a rows x cols matrix random with probability `density`, else zero.
template <typename T>
std::vector<T> BlockSparseValues(int64_t rows, int64_t cols, int64_t block, double density,
                                 uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(density);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<T> v(static_cast<size_t>(rows * cols), T(0));
  for (int64_t bi = 0; bi * block < rows; ++bi) {
    for (int64_t bj = 0; bj * block < cols; ++bj) {
      if (!keep(rng)) continue;
      for (int64_t i = bi * block; i < std::min(rows, (bi + 1) * block); ++i) {
        for (int64_t j = bj * block; j < std::min(cols, (bj + 1) * block); ++j) {
          if constexpr (std::is_same_v<T, uint32_t>) {
            v[i * cols + j] = static_cast<uint32_t>(0xFFFFFFFFu - rng() % 5000);
          } else if constexpr (std::is_arithmetic_v<T>) {
            v[i * cols + j] = static_cast<T>(uniform(rng));
          } else {
            const double re = uniform(rng);
            v[i * cols + j] = T(static_cast<typename T::value_type>(re),
                                static_cast<typename T::value_type>(uniform(rng)));
          }
        }
      }
    }
  }
  return v;
}

MultiplyResult RunMultiply(Backend& backend, const Matrix& a, const Matrix& b,
                           const MultiplyOptions& options) {
  absl::StatusOr<MultiplyResult> result = backend.Multiply(a.view(), b.view(), options, nullptr);
  EXPECT_TRUE(result.ok()) << backend.name() << ": " << result.status();
  return result.ok() ? *std::move(result) : MultiplyResult{};
}

template <typename T>
struct RealOf {
  using Type = T;
};
template <typename R>
struct RealOf<std::complex<R>> {
  using Type = R;
};

// The largest |x - y| over the entries.
template <typename T>
double LargestDifference(const Matrix& x, const Matrix& y) {
  double largest = 0.0;
  const auto xs = x.As<T>();
  const auto ys = y.As<T>();
  for (size_t i = 0; i < xs.size(); ++i) {
    largest = std::max(largest, static_cast<double>(std::abs(xs[i] - ys[i])));
  }
  return largest;
}

template <typename T>
void ExpectBlockSparseMatchesDenseAndCpu(Backend& cuda, Backend& cpu, int64_t n, int64_t block) {
  const Matrix a = Matrix::FromValues<T>(n, n, BlockSparseValues<T>(n, n, block, 0.1, 800));
  const Matrix b = Matrix::FromValues<T>(n, n, BlockSparseValues<T>(n, n, block, 0.1, 801));
  MultiplyOptions sparse;
  sparse.block_size = block;
  const MultiplyResult gpu = RunMultiply(cuda, a, b, sparse);
  const MultiplyResult dense = RunMultiply(cuda, a, b, {});
  const MultiplyResult reference = RunMultiply(cpu, a, b, sparse);
  ASSERT_EQ(gpu.c.rows(), n);
  ASSERT_EQ(gpu.c.cols(), n);
  EXPECT_EQ(gpu.block_products, reference.block_products);
  EXPECT_EQ(gpu.block_products_total, reference.block_products_total);
  EXPECT_DOUBLE_EQ(gpu.stats.flops, reference.stats.flops);
  // ~1% of the block products (10% of A's blocks times 10% of B's): a real test of skipping.
  EXPECT_GT(gpu.block_products, 0);
  EXPECT_LT(gpu.block_products, gpu.block_products_total / 20);
  if constexpr (std::is_same_v<T, uint32_t>) {
    EXPECT_TRUE(std::equal(gpu.c.As<T>().begin(), gpu.c.As<T>().end(), dense.c.As<T>().begin()));
    EXPECT_TRUE(
        std::equal(gpu.c.As<T>().begin(), gpu.c.As<T>().end(), reference.c.As<T>().begin()));
  } else {
    // Entries in [-1, 1], at most n terms: rounding stays below n * eps * a few; a missed or
    // doubled block product would be off by ~1.
    using Real = typename RealOf<T>::Type;
    const double tolerance = 8.0 * static_cast<double>(n) * std::numeric_limits<Real>::epsilon();
    EXPECT_LT(LargestDifference<T>(gpu.c, dense.c), tolerance);
    EXPECT_LT(LargestDifference<T>(gpu.c, reference.c), tolerance);
  }
}

TEST_F(CudaKernelsTest, BlockSparseAtTenPercentMatchesDenseAndCpu) {
  const int64_t n = 1024;
  const int64_t block = 32;
  {
    SCOPED_TRACE("float64");
    ExpectBlockSparseMatchesDenseAndCpu<double>(cuda(), cpu(), n, block);
  }
  {
    SCOPED_TRACE("float32");
    ExpectBlockSparseMatchesDenseAndCpu<float>(cuda(), cpu(), n, block);
  }
  {
    SCOPED_TRACE("complex128");
    ExpectBlockSparseMatchesDenseAndCpu<Complex>(cuda(), cpu(), n, block);
  }
  {
    SCOPED_TRACE("uint32");
    ExpectBlockSparseMatchesDenseAndCpu<uint32_t>(cuda(), cpu(), n, block);
  }
}

TEST_F(CudaKernelsTest, BlockSparseWithEdgeBlocksAndTransposesMatchesCpu) {
  // 1000 = 20 * 48 + 40: the last block row and column are cut short; blocks larger than a
  // 128-wide tile and smaller than one are both exercised.
  const int64_t n = 1000;
  for (const int64_t block : {48, 200}) {
    SCOPED_TRACE("block " + std::to_string(block));
    const Matrix a =
        Matrix::FromValues<double>(n, n - 7, BlockSparseValues<double>(n, n - 7, block, 0.2, 900));
    const Matrix b = Matrix::FromValues<double>(
        n - 7, n + 5, BlockSparseValues<double>(n - 7, n + 5, block, 0.2, 901));
    const Matrix au = Matrix::FromValues<uint32_t>(
        n, n - 7, BlockSparseValues<uint32_t>(n, n - 7, block, 0.2, 902));
    const Matrix bu = Matrix::FromValues<uint32_t>(
        n - 7, n + 5, BlockSparseValues<uint32_t>(n - 7, n + 5, block, 0.2, 903));
    MultiplyOptions plain;
    plain.block_size = block;
    MultiplyOptions transposed = plain;
    transposed.transpose_a = true;
    transposed.transpose_b = true;
    const MultiplyResult want = RunMultiply(cpu(), a, b, plain);
    const MultiplyResult want_u = RunMultiply(cpu(), au, bu, plain);
    const MultiplyResult got = RunMultiply(cuda(), a, b, plain);
    const MultiplyResult got_u = RunMultiply(cuda(), au, bu, plain);
    EXPECT_EQ(got.block_products, want.block_products);
    EXPECT_LT(LargestDifference<double>(got.c, want.c), 1e-11);
    EXPECT_TRUE(std::equal(got_u.c.As<uint32_t>().begin(), got_u.c.As<uint32_t>().end(),
                           want_u.c.As<uint32_t>().begin()));
    // The same product with A^T and B^T stored and read transposed.
    const Matrix bt = Matrix::FromValues<double>(n + 5, n - 7, [&] {
      std::vector<double> t(static_cast<size_t>(b.size()));
      const auto v = b.As<double>();
      for (int64_t i = 0; i < b.rows(); ++i) {
        for (int64_t j = 0; j < b.cols(); ++j) t[j * b.rows() + i] = v[i * b.cols() + j];
      }
      return t;
    }());
    const Matrix at = Matrix::FromValues<double>(n - 7, n, [&] {
      std::vector<double> t(static_cast<size_t>(a.size()));
      const auto v = a.As<double>();
      for (int64_t i = 0; i < a.rows(); ++i) {
        for (int64_t j = 0; j < a.cols(); ++j) t[j * a.rows() + i] = v[i * a.cols() + j];
      }
      return t;
    }());
    const MultiplyResult got_t = RunMultiply(cuda(), at, bt, transposed);
    ASSERT_EQ(got_t.c.rows(), n);
    ASSERT_EQ(got_t.c.cols(), n + 5);
    EXPECT_LT(LargestDifference<double>(got_t.c, want.c), 1e-11);
  }
}

TEST_F(CudaKernelsTest, BlockSparseOfTwoMillionTinyBlocksMatchesDense) {
  // 2 x 2 blocks of dense 256 x 256 operands: 128^3 = 2^21 block products, more than one chunk
  // of pointer arrays, each C block accumulating 128 products over many rounds.
  const int64_t n = 256;
  const Matrix a = Matrix::FromValues<double>(n, n, RandomValues<double>(n * n, 950));
  const Matrix b = Matrix::FromValues<double>(n, n, RandomValues<double>(n * n, 951));
  MultiplyOptions sparse;
  sparse.block_size = 2;
  const MultiplyResult got = RunMultiply(cuda(), a, b, sparse);
  const MultiplyResult dense = RunMultiply(cuda(), a, b, {});
  EXPECT_EQ(got.block_products, int64_t{1} << 21);
  EXPECT_EQ(got.block_products_total, int64_t{1} << 21);
  EXPECT_LT(LargestDifference<double>(got.c, dense.c),
            8.0 * n * std::numeric_limits<double>::epsilon());
}

TEST_F(CudaKernelsTest, Uint32BlockSparseWithAVeryLongInnerDimensionMatchesCpu) {
  // k = 600000: 37500 slabs of 16, more than one window of the kernel's slab mask; every other
  // block of 16 is zero in A, every third in B.
  const int64_t k = 600000;
  std::mt19937_64 rng(960);
  std::vector<uint32_t> a_values(static_cast<size_t>(2 * k));
  std::vector<uint32_t> b_values(static_cast<size_t>(k * 3));
  for (int64_t p = 0; p < k; ++p) {
    const bool a_zero = (p / 16) % 2 == 1;
    const bool b_zero = (p / 16) % 3 == 2;
    for (int64_t i = 0; i < 2; ++i) a_values[i * k + p] = a_zero ? 0 : static_cast<uint32_t>(rng());
    for (int64_t j = 0; j < 3; ++j) b_values[p * 3 + j] = b_zero ? 0 : static_cast<uint32_t>(rng());
  }
  const Matrix a = Matrix::FromValues<uint32_t>(2, k, a_values);
  const Matrix b = Matrix::FromValues<uint32_t>(k, 3, b_values);
  MultiplyOptions options;
  options.block_size = 16;
  const MultiplyResult got = RunMultiply(cuda(), a, b, options);
  const MultiplyResult want = RunMultiply(cpu(), a, b, options);
  EXPECT_EQ(got.block_products, want.block_products);
  int64_t pairs = 0;  // A and B are 1 x 1 blocks high and wide: one pair per k-block at most
  for (int64_t q = 0; q < k / 16; ++q) pairs += (q % 2 == 0 && q % 3 != 2) ? 1 : 0;
  EXPECT_EQ(got.block_products, pairs);
  EXPECT_TRUE(std::equal(got.c.As<uint32_t>().begin(), got.c.As<uint32_t>().end(),
                         want.c.As<uint32_t>().begin()));
}

TEST_F(CudaKernelsTest, Uint32ProductWrapsExactlyAsOnTheCpu) {
  // Entries within 5000 of 2^32 make every product and sum wrap; 517 and 259 cut the 128-wide
  // tiles and 16-deep slabs short.
  const int64_t m = 300;
  const int64_t k = 517;
  const int64_t n = 259;
  std::mt19937_64 rng(1000);
  const auto near_wrap = [&rng](int64_t count) {
    std::vector<uint32_t> v(static_cast<size_t>(count));
    for (uint32_t& x : v) x = static_cast<uint32_t>(0xFFFFFFFFu - rng() % 5000);
    return v;
  };
  const std::vector<uint32_t> a_values = near_wrap(m * k);
  const std::vector<uint32_t> b_values = near_wrap(k * n);
  for (const bool transpose_a : {false, true}) {
    for (const bool transpose_b : {false, true}) {
      SCOPED_TRACE(std::string(transpose_a ? "A^T " : "A ") + (transpose_b ? "B^T" : "B"));
      const Matrix a = transpose_a ? Matrix::FromValues<uint32_t>(k, m, a_values)
                                   : Matrix::FromValues<uint32_t>(m, k, a_values);
      const Matrix b = transpose_b ? Matrix::FromValues<uint32_t>(n, k, b_values)
                                   : Matrix::FromValues<uint32_t>(k, n, b_values);
      MultiplyOptions options;
      options.transpose_a = transpose_a;
      options.transpose_b = transpose_b;
      const MultiplyResult got = RunMultiply(cuda(), a, b, options);
      const MultiplyResult want = RunMultiply(cpu(), a, b, options);
      ASSERT_EQ(got.c.rows(), m);
      ASSERT_EQ(got.c.cols(), n);
      EXPECT_TRUE(std::equal(got.c.As<uint32_t>().begin(), got.c.As<uint32_t>().end(),
                             want.c.As<uint32_t>().begin()));
      EXPECT_EQ(got.stats.flops, 2.0 * m * n * k);
    }
  }
}

TEST_F(CudaKernelsTest, LargeUint32ProductMatchesCpu) {
  // Many tiles in both directions and n % 4 == 0, so the 16-byte stores are taken.
  const int64_t n = 1536;
  std::mt19937_64 rng(1100);
  std::vector<uint32_t> a_values(static_cast<size_t>(n * n));
  std::vector<uint32_t> b_values(static_cast<size_t>(n * n));
  for (uint32_t& x : a_values) x = static_cast<uint32_t>(rng());
  for (uint32_t& x : b_values) x = static_cast<uint32_t>(rng());
  const Matrix a = Matrix::FromValues<uint32_t>(n, n, a_values);
  const Matrix b = Matrix::FromValues<uint32_t>(n, n, b_values);
  const MultiplyResult got = RunMultiply(cuda(), a, b, {});
  const MultiplyResult want = RunMultiply(cpu(), a, b, {});
  EXPECT_TRUE(std::equal(got.c.As<uint32_t>().begin(), got.c.As<uint32_t>().end(),
                         want.c.As<uint32_t>().begin()));
}

}  // namespace
}  // namespace matrixd
