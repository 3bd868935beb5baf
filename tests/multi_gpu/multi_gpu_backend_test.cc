// The CUDA backend with products and determinants over several GPUs
// (core/multi_gpu/multi_gpu_backend.h): the product by Cannon over 1..all GPUs and the
// determinant by MultiGpuLu over 2..all GPUs equal the CPU backend's, and what they cannot take
// is refused with a status naming the field. Skips without a CUDA device.
#include "core/multi_gpu/multi_gpu_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/make_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"

namespace matrixd::multi_gpu {
namespace {

using ::testing::HasSubstr;

int DeviceCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

TEST(CannonDeviceBytesPerGpu, FiveBlocksPerGridPosition) {
  // 1 GPU: one 1000 x 1000 block position; 4 GPUs: a 2 x 2 grid of 500 x 500 blocks, one each.
  EXPECT_EQ(CannonDeviceBytesPerGpu(1000, 1000, 1000, 1), 5u * 1000 * 1000 * 8);
  EXPECT_EQ(CannonDeviceBytesPerGpu(1000, 1000, 1000, 4), 5u * 500 * 500 * 8);
  // 2 GPUs: a 2 x 2 grid, two positions each.
  EXPECT_EQ(CannonDeviceBytesPerGpu(1000, 1000, 1000, 2), 2u * 5 * 500 * 500 * 8);
}

TEST(MultiGpuBackend, ProductOverEveryDeviceCountEqualsTheCpuProduct) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  auto cpu = MakeCpuBackend({.threads = 0});
  const Matrix a = testing::RandomMatrix<double>(700, 300, 3);
  const Matrix b = testing::RandomMatrix<double>(300, 500, 4);
  JobControl control;
  auto reference = cpu->Multiply(a.view(), b.view(), {}, &control);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (int gpus = 1; gpus <= devices; ++gpus) {
    const MultiplyOptions options{.devices = gpus, .method = MultiplyMethod::kCannon};
    const absl::Status supported = (*cuda)->Supports(MultiplyQuery(a.view(), b.view(), options));
    ASSERT_TRUE(supported.ok()) << gpus << " GPUs: " << supported;
    auto c = (*cuda)->Multiply(a.view(), b.view(), options, &control);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->c.rows(), 700);
    ASSERT_EQ(c->c.cols(), 500);
    double worst = 0.0;
    for (size_t i = 0; i < c->c.As<double>().size(); ++i) {
      worst = std::max(worst, std::abs(c->c.As<double>()[i] - reference->c.As<double>()[i]));
    }
    EXPECT_LE(worst, 1e-12 * 300) << gpus << " GPUs";
    EXPECT_EQ(c->stats.kernels.size(), 3u);
  }
}

TEST(MultiGpuBackend, RefusesWhatCannonDoesNotTakeNamingTheField) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const Matrix a = testing::RandomMatrix<double>(8, 8, 1);
  const Matrix f = testing::RandomMatrix<float>(8, 8, 1);
  auto supports = [&](const Matrix& m, const MultiplyOptions& options) {
    return (*cuda)->Supports(MultiplyQuery(m.view(), m.view(), options));
  };
  absl::Status too_many = supports(a, {.devices = devices + 1});
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.message()),
              HasSubstr("devices is " + std::to_string(devices + 1) + "; this server has " +
                        std::to_string(devices) + " GPU"));
  absl::Status float32 = supports(f, {.devices = 1, .method = MultiplyMethod::kCannon});
  EXPECT_EQ(float32.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(float32.message()), HasSubstr("a.dtype is float32"));
  absl::Status transposed =
      supports(a, {.transpose_a = true, .devices = 1, .method = MultiplyMethod::kCannon});
  EXPECT_EQ(transposed.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(transposed.message()), HasSubstr("transpose_a"));
  absl::Status cublasmp = supports(a, {.method = MultiplyMethod::kCublasMp});
  EXPECT_EQ(cublasmp.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(cublasmp.message()), HasSubstr("CUBLASMP"));
  // The ordinary single-device product still goes through.
  EXPECT_TRUE(supports(f, {}).ok());
}

TEST(MultiGpuLuDeviceBytesPerGpu, LargestPartAndTwoPanelBuffers) {
  // 10 panels of 100 columns: 1 GPU holds all 10 and no buffers; of 3 GPUs the first holds 4.
  EXPECT_EQ(MultiGpuLuDeviceBytesPerGpu(1000, 1, 100), 10u * 100 * 1000 * 8);
  EXPECT_EQ(MultiGpuLuDeviceBytesPerGpu(1000, 3, 100), (4u + 2) * 100 * 1000 * 8);
  EXPECT_EQ(MultiGpuLuDeviceBytesPerGpu(50, 2, 512), (1u + 2) * 50 * 50 * 8);
}

TEST(MultiGpuBackend, DeterminantOverEveryDeviceCountEqualsTheCpuDeterminant) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  auto cpu = MakeCpuBackend({.threads = 0});
  const Matrix a = testing::RandomMatrix<double>(1100, 1100, 9);
  JobControl control;
  auto reference = cpu->Determinant(a.view(), {}, &control);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (int gpus = 2; gpus <= devices; ++gpus) {
    const DeterminantOptions options{.devices = gpus};
    const absl::Status supported = (*cuda)->Supports(DeterminantQuery(a.view(), options));
    ASSERT_TRUE(supported.ok()) << gpus << " GPUs: " << supported;
    auto det = (*cuda)->Determinant(a.view(), options, &control);
    ASSERT_TRUE(det.ok()) << det.status();
    EXPECT_EQ(det->value.phase(), reference->value.phase()) << gpus << " GPUs";
    EXPECT_NEAR(det->value.log_abs(), reference->value.log_abs(),
                1e-9 * std::abs(reference->value.log_abs()))
        << gpus << " GPUs";
    ASSERT_EQ(det->stats.kernels.size(), 1u);
    EXPECT_EQ(det->stats.kernels[0].kernel, "multi_gpu_lu");
  }
}

TEST(MultiGpuBackend, RefusesWhatTheMultiGpuDeterminantDoesNotTakeNamingTheField) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const Matrix a = testing::RandomMatrix<double>(8, 8, 1);
  const Matrix f = testing::RandomMatrix<float>(8, 8, 1);
  const int many = std::max(devices, 2);
  auto supports = [&](const Matrix& m, const DeterminantOptions& options) {
    return (*cuda)->Supports(DeterminantQuery(m.view(), options));
  };
  absl::Status too_many = supports(a, {.devices = devices + 1});
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.message()),
              HasSubstr("devices is " + std::to_string(devices + 1) + "; this server has"));
  if (devices >= 2) {
    absl::Status float32 = supports(f, {.devices = many});
    EXPECT_EQ(float32.code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(float32.message()), HasSubstr("matrix.dtype is float32"));
    absl::Status condensation =
        supports(a, {.method = DeterminantMethod::kCondensation, .devices = many});
    EXPECT_EQ(condensation.code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(condensation.message()), HasSubstr("CONDENSATION"));
  }
  // The ordinary single-device determinant still goes through.
  EXPECT_TRUE(supports(f, {}).ok());
}

}  // namespace
}  // namespace matrixd::multi_gpu
