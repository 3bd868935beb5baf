// Cannon's product over the GPUs of this process against the CPU backend's product. Skips
// without a CUDA device; runs on every prefix of the visible devices (1, 2, ... GPUs).
#include "core/multi_gpu/cannon_gemm.h"

#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"

namespace matrixd::multi_gpu {
namespace {

int DeviceCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

TEST(CannonGridSide, SquareGridWhoseSizeTheGpusDivide) {
  EXPECT_EQ(CannonGridSide(1), 1);
  EXPECT_EQ(CannonGridSide(2), 2);
  EXPECT_EQ(CannonGridSide(4), 2);
  EXPECT_EQ(CannonGridSide(8), 4);
  EXPECT_EQ(CannonGridSide(9), 3);
}

TEST(CannonGemm, EqualsTheCpuProductOnEveryDeviceCount) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  auto cpu = MakeCpuBackend({.threads = 0});
  for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{
           {1, 1, 1}, {3, 5, 2}, {257, 129, 300}, {1000, 1000, 1000}}) {
    const Matrix a = testing::RandomMatrix<double>(m, k, 1);
    const Matrix b = testing::RandomMatrix<double>(k, n, 2);
    JobControl control;
    auto reference = cpu->Multiply(a.view(), b.view(), {}, &control);
    ASSERT_TRUE(reference.ok()) << reference.status();
    for (int gpus = 1; gpus <= devices; ++gpus) {
      std::vector<int> ordinals;
      for (int d = 0; d < gpus; ++d) ordinals.push_back(d);
      auto c = CannonGemm(ordinals, a.view(), b.view());
      ASSERT_TRUE(c.ok()) << c.status();
      double worst = 0.0;
      for (size_t i = 0; i < c->As<double>().size(); ++i) {
        worst = std::max(worst, std::abs(c->As<double>()[i] - reference->c.As<double>()[i]));
      }
      EXPECT_LE(worst, 1e-12 * static_cast<double>(k))
          << m << "x" << k << "x" << n << " on " << gpus << " GPUs";
    }
  }
}

}  // namespace
}  // namespace matrixd::multi_gpu
