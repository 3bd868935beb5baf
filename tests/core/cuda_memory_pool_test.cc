// The CUDA backend's device memory: the capped stream-ordered pool, its counters, the per-op
// memory estimates used for admission (checked against the pool's high-water mark), clean
// failure at the cap, and per-kernel timing records. Skips where there is no CUDA device.
#include <cuda_runtime.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cuda/copy_bandwidth.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/memory_estimate.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using cuda::DeviceContext;

constexpr uint64_t kMiB = uint64_t{1} << 20;
// A cap of its own, so that these tests get a pool of their own: pools are shared per
// (device, limit), and the backend below and the probe context share this one.
constexpr uint64_t kLimit = 768 * kMiB;

template <typename T>
Matrix RandomMatrix(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> entry(-1.0, 1.0);
  std::vector<T> values(static_cast<size_t>(rows * cols));
  for (T& v : values) {
    if constexpr (std::is_same_v<T, std::complex<double>> ||
                  std::is_same_v<T, std::complex<float>>) {
      v = T(static_cast<typename T::value_type>(entry(random)),
            static_cast<typename T::value_type>(entry(random)));
    } else if constexpr (std::is_same_v<T, int64_t>) {
      v = static_cast<int64_t>(entry(random) * 9.0);
    } else {
      v = static_cast<T>(entry(random));
    }
  }
  return Matrix::FromValues<T>(rows, cols, values);
}

// A + A^T + n I: symmetric and diagonally dominant, so positive definite.
Matrix SpdMatrix(int64_t n, unsigned seed) {
  Matrix a = RandomMatrix<double>(n, n, seed);
  std::vector<double> s(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      s[i * n + j] = a.As<double>()[i * n + j] + a.As<double>()[j * n + i] + (i == j ? n : 0.0);
    }
  }
  return Matrix::FromValues<double>(n, n, s);
}

class CudaMemoryPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
    absl::StatusOr<std::unique_ptr<Backend>> backend =
        MakeCudaBackend({0}, DeviceMemoryLimit{.bytes = kLimit});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
    absl::StatusOr<std::unique_ptr<DeviceContext>> probe =
        DeviceContext::Create(0, DeviceMemoryLimit{.bytes = kLimit});
    ASSERT_TRUE(probe.ok()) << probe.status();
    probe_ = *std::move(probe);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    baseline_ = Used();
  }

  uint64_t Used() {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    absl::StatusOr<cuda::MemoryPoolUsage> usage = probe_->MemoryUsage();
    EXPECT_TRUE(usage.ok()) << usage.status();
    return usage.ok() ? usage->used : 0;
  }
  void ResetHighWater() {
    uint64_t zero = 0;
    ASSERT_EQ(cudaMemPoolSetAttribute(probe_->memory_pool(), cudaMemPoolAttrUsedMemHigh, &zero),
              cudaSuccess);
  }
  uint64_t HighWater() {
    uint64_t high = 0;
    EXPECT_EQ(cudaMemPoolGetAttribute(probe_->memory_pool(), cudaMemPoolAttrUsedMemHigh, &high),
              cudaSuccess);
    return high;
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<DeviceContext> probe_;
  uint64_t baseline_ = 0;
};

TEST_F(CudaMemoryPoolTest, BackendReportsTheCapAndThePoolCounters) {
  const std::vector<DeviceMemoryUsage> devices = backend_->DeviceMemory();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].limit, kLimit);
  EXPECT_GT(devices[0].total, kLimit);
  EXPECT_EQ(devices[0].used, baseline_);
  EXPECT_GE(devices[0].reserved, devices[0].used);
  EXPECT_EQ(probe_->memory_limit(), kLimit);
}

TEST_F(CudaMemoryPoolTest, FractionLimitIsThatShareOfTheCardInWholeGranules) {
  absl::StatusOr<std::unique_ptr<DeviceContext>> half =
      DeviceContext::Create(0, DeviceMemoryLimit{.fraction = 0.5});
  ASSERT_TRUE(half.ok()) << half.status();
  const uint64_t total = (*half)->properties().totalGlobalMem;
  const uint64_t want = static_cast<uint64_t>(0.5 * static_cast<double>(total));
  EXPECT_EQ((*half)->memory_limit(), want - want % (2 * kMiB));
  EXPECT_EQ(DeviceContext::Create(0, DeviceMemoryLimit{.fraction = 0.0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeviceContext::Create(0, DeviceMemoryLimit{.bytes = kMiB}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaMemoryPoolTest, AllocationOverTheCapFailsCleanlyAndTheNextOneWorks) {
  absl::StatusOr<cuda::DeviceBuffer> too_big = probe_->Allocate(kLimit + 64 * kMiB);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted) << too_big.status();
  absl::StatusOr<cuda::DeviceBuffer> fits = probe_->Allocate(64 * kMiB);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(cudaMemsetAsync(fits->data(), 0, 64 * kMiB, probe_->stream()), cudaSuccess);
  EXPECT_TRUE(probe_->Synchronize().ok());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // no stale error for the next launch check
}

TEST_F(CudaMemoryPoolTest, OperationTooLargeForTheCapFailsAndTheBackendKeepsServing) {
  // Three 288 MiB operands: more than the 768 MiB cap together.
  const Matrix a = RandomMatrix<double>(6144, 6144, 1);
  MultiplyOptions options;
  EXPECT_GT(backend_->MultiplyDeviceBytes(a.view(), a.view(), options), kLimit);
  absl::StatusOr<MultiplyResult> failed = backend_->Multiply(a.view(), a.view(), options, nullptr);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted) << failed.status();
  EXPECT_EQ(Used(), baseline_);
  const Matrix small = RandomMatrix<double>(64, 64, 2);
  EXPECT_TRUE(backend_->Multiply(small.view(), small.view(), options, nullptr).ok());
}

TEST_F(CudaMemoryPoolTest, EstimatesCoverThePeakOfEveryOperation) {
  const Matrix f64 = RandomMatrix<double>(384, 384, 3);
  const Matrix f32 = RandomMatrix<float>(384, 384, 4);
  const Matrix c128 = RandomMatrix<std::complex<double>>(256, 256, 5);
  const Matrix i64 = RandomMatrix<int64_t>(48, 48, 6);
  const Matrix tall = RandomMatrix<double>(500, 300, 7);
  const Matrix rhs = RandomMatrix<double>(384, 5, 8);
  const Matrix spd = SpdMatrix(384, 9);
  struct Case {
    std::string name;
    std::function<uint64_t()> estimate;
    std::function<absl::Status()> run;
  };
  const auto det = [&](const Matrix& m, DeterminantOptions o) {
    return Case{std::string("determinant ") + DTypeName(m.dtype()),
                [&, o] { return backend_->DeterminantDeviceBytes(m.view(), o); },
                [&, o] { return backend_->Determinant(m.view(), o, nullptr).status(); }};
  };
  const Matrix batch = RandomMatrix<double>(64 * 16, 16, 13);  // 64 matrices of 16 x 16
  const Matrix batch_rhs = RandomMatrix<double>(64 * 16, 2, 14);
  const auto fact = [&](const Matrix& m, FactorizationKind kind, const Matrix* b,
                        int64_t batch_count = 0) {
    FactorizeOptions o;
    o.kind = kind;
    o.batch_count = batch_count;
    return Case{
        "factorize",
        [&, o, b] {
          const MatrixView bv = b != nullptr ? b->view() : MatrixView{};
          return backend_->FactorizeDeviceBytes(m.view(), o, b != nullptr ? &bv : nullptr);
        },
        [&, o, b] {
          const MatrixView bv = b != nullptr ? b->view() : MatrixView{};
          return backend_->Factorize(m.view(), o, b != nullptr ? &bv : nullptr, nullptr).status();
        }};
  };
  std::vector<Case> cases = {
      det(f64, {}),
      det(f32, {}),
      det(c128, {}),
      det(f64, {.method = DeterminantMethod::kCondensation}),
      det(i64, {}),
      det(i64, {.modulus = 2305843009213693951ull}),
      fact(f64, FactorizationKind::kLu, &rhs),
      fact(spd, FactorizationKind::kCholesky, &rhs),
      fact(tall, FactorizationKind::kQr, nullptr),
      fact(batch, FactorizationKind::kLu, &batch_rhs, 64),
      fact(batch, FactorizationKind::kQr, nullptr, 64),
      {"multiply",
       [&] {
         return backend_->MultiplyDeviceBytes(tall.view(), tall.view(), {.transpose_a = true});
       },
       [&] {
         return backend_->Multiply(tall.view(), tall.view(), {.transpose_a = true}, nullptr)
             .status();
       }},
  };
  for (const Case& c : cases) {
    ResetHighWater();
    const absl::Status status = c.run();
    if (status.code() == absl::StatusCode::kUnimplemented) continue;
    EXPECT_TRUE(status.ok()) << c.name << ": " << status;
    const uint64_t peak = HighWater() > baseline_ ? HighWater() - baseline_ : 0;
    EXPECT_GE(c.estimate(), peak) << c.name;
    EXPECT_EQ(Used(), baseline_) << c.name;
  }
}

TEST_F(CudaMemoryPoolTest, UsageReturnsToBaselineAfterErrorsAndCancellations) {
  const Matrix indefinite = Matrix::FromValues<double>(2, 2, {1.0, 2.0, 2.0, 1.0});
  FactorizeOptions cholesky;
  cholesky.kind = FactorizationKind::kCholesky;
  EXPECT_EQ(backend_->Factorize(indefinite.view(), cholesky, nullptr, nullptr).status().code(),
            absl::StatusCode::kFailedPrecondition);
  JobControl cancelled;
  cancelled.Cancel();
  const Matrix a = RandomMatrix<double>(256, 256, 10);
  EXPECT_EQ(backend_->Determinant(a.view(), {}, &cancelled).status().code(),
            absl::StatusCode::kCancelled);
  const Matrix huge = RandomMatrix<float>(8448, 8448, 11);  // 3 x 272 MiB: over the cap
  EXPECT_EQ(backend_->Multiply(huge.view(), huge.view(), {}, nullptr).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(backend_->Determinant(a.view(), {}, nullptr).ok());
  EXPECT_EQ(Used(), baseline_);
}

TEST_F(CudaMemoryPoolTest, OperationsRecordTheirMainKernels) {
  const Matrix a = RandomMatrix<double>(512, 512, 12);
  absl::StatusOr<MultiplyResult> product = backend_->Multiply(a.view(), a.view(), {}, nullptr);
  ASSERT_TRUE(product.ok()) << product.status();
  ASSERT_EQ(product->stats.kernels.size(), 1u);
  EXPECT_EQ(product->stats.kernels[0].kernel, "cublas_gemm");
  EXPECT_GT(product->stats.kernels[0].seconds, 0.0);
  EXPECT_LE(product->stats.kernels[0].seconds, product->stats.seconds);
  EXPECT_EQ(product->stats.kernels[0].flops, 2.0 * 512 * 512 * 512);

  absl::StatusOr<DeterminantResult> det = backend_->Determinant(a.view(), {}, nullptr);
  ASSERT_TRUE(det.ok()) << det.status();
  std::vector<std::string> names;
  for (const KernelRecord& record : det->stats.kernels) {
    names.push_back(record.kernel);
    EXPECT_GT(record.seconds, 0.0) << record.kernel;
    EXPECT_GT(record.bytes, 0u) << record.kernel;
  }
  // The condition estimate's record comes with every LU determinant (docs/accuracy.md); its
  // ||A||_1 is taken by the row scaling's pass, which has no record of its own.
  EXPECT_EQ(names,
            (std::vector<std::string>{"scale_rows", "cusolver_getrf", "condition_estimate"}));
}

TEST_F(CudaMemoryPoolTest, CopyBandwidthIsMeasuredAndPlausible) {
  absl::StatusOr<double> bandwidth = cuda::MeasureCopyBandwidth(*probe_, 64 * kMiB, 3);
  ASSERT_TRUE(bandwidth.ok()) << bandwidth.status();
  // Any current GPU copies between 100 GB/s and 20 TB/s (H100: about 2.8 TB/s).
  EXPECT_GT(*bandwidth, 1e11);
  EXPECT_LT(*bandwidth, 2e13);
  absl::StatusOr<std::vector<DeviceCopyBandwidth>> all = backend_->MeasureCopyBandwidth();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_GT((*all)[0].bytes_per_second, 1e11);
  EXPECT_EQ(Used(), baseline_);
}

}  // namespace
}  // namespace matrixd
