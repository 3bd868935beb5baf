// Cannon's product over the GPUs of this process against the CPU backend's product, for each
// floating dtype. Skips without a CUDA device; runs on every prefix of the visible devices (1, 2,
// ... GPUs).
#include "core/multi_gpu/cannon_gemm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"
#include "tests/multi_gpu/gpu_devices.h"

namespace matrixd::multi_gpu {
namespace {

using testing::DeviceCount;

using ::testing::HasSubstr;

TEST(CannonGridSide, SquareGridWhoseSizeTheGpusDivide) {
  EXPECT_EQ(CannonGridSide(1), 1);
  EXPECT_EQ(CannonGridSide(2), 2);
  EXPECT_EQ(CannonGridSide(4), 2);
  EXPECT_EQ(CannonGridSide(8), 4);
  EXPECT_EQ(CannonGridSide(9), 3);
}

// The largest |x - y| over the elements of two matrices of element type T.
template <typename T>
double WorstDifference(const Matrix& x, const Matrix& y) {
  double worst = 0.0;
  for (size_t i = 0; i < x.As<T>().size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(x.As<T>()[i] - y.As<T>()[i])));
  }
  return worst;
}

// The bound on |C - C_cpu| for entries in [-1, 1] (each real and imaginary part) and inner
// dimension k: both products round, in orders of their own, about k terms of size <= 2.
template <typename T>
double ProductBound(int64_t k) {
  return (std::is_same_v<testing::Real<T>, float> ? 1e-5 : 1e-12) * static_cast<double>(k);
}

TEST(CannonGemm, EqualsTheCpuProductOfEveryDtypeOnEveryDeviceCount) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  auto cpu = MakeCpuBackend({.threads = 0});
  testing::ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{
             {1, 1, 1}, {3, 5, 2}, {257, 129, 300}, {1000, 1000, 1000}}) {
      const Matrix a = testing::RandomMatrix<T>(m, k, 1);
      const Matrix b = testing::RandomMatrix<T>(k, n, 2);
      JobControl control;
      auto reference = cpu->Multiply(a.view(), b.view(), {}, &control);
      ASSERT_TRUE(reference.ok()) << reference.status();
      for (int gpus = 1; gpus <= devices; ++gpus) {
        std::vector<int> ordinals;
        for (int d = 0; d < gpus; ++d) ordinals.push_back(d);
        auto c = CannonGemm(ordinals, a.view(), b.view());
        ASSERT_TRUE(c.ok()) << c.status();
        ASSERT_EQ(c->dtype(), a.dtype());
        ASSERT_EQ(c->rows(), m);
        ASSERT_EQ(c->cols(), n);
        EXPECT_LE(WorstDifference<T>(*c, reference->c), ProductBound<T>(k))
            << m << "x" << k << "x" << n << " on " << gpus << " GPUs";
      }
    }
  });
}

TEST(CannonGemm, RefusesMixedAndNonFloatingDtypes) {
  const Matrix f = testing::RandomMatrix<float>(4, 4, 1);
  const Matrix d = testing::RandomMatrix<double>(4, 4, 2);
  const Matrix u(4, 4, DType::kUInt32);
  // Refused before any GPU is touched: runs without one too.
  auto mixed = CannonGemm({0}, f.view(), d.view());
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mixed.status().message()), HasSubstr("A is float32, B is float64"));
  auto integers = CannonGemm({0}, u.view(), u.view());
  EXPECT_EQ(integers.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(integers.status().message()), HasSubstr("A is uint32"));
}

}  // namespace
}  // namespace matrixd::multi_gpu
