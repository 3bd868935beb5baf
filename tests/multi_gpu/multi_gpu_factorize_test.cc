// Factorize over several GPUs by cusolverMg (core/multi_gpu/multi_gpu_factorize.h and the
// backend's devices > 1): LU factors and permutation reproduce A and equal one GPU's, solves have
// small residuals, Cholesky's L L^T = A; orders not a multiple of the block, smaller than the
// block times the GPUs, n = 1; singular and non-positive-definite inputs answer as on one GPU; a
// resident operand is read on its GPU. Skips with fewer than 2 GPUs.
#include "core/multi_gpu/multi_gpu_factorize.h"

#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/make_backend.h"
#include "core/resident_matrix.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"

namespace matrixd::multi_gpu {
namespace {

using ::matrixd::testing::ExpectSolves;
using ::matrixd::testing::HermitianPositiveDefinite;
using ::matrixd::testing::RandomMatrix;
using ::testing::HasSubstr;

constexpr long double kEps = 0x1p-52L;

int DeviceCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

const std::vector<int> kTwo = {0, 1};

#define MATRIXD_REQUIRE_TWO_GPUS()                           \
  if (DeviceCount() < 2) {                                   \
    GTEST_SKIP() << "needs 2 GPUs, found " << DeviceCount(); \
  }                                                          \
  static_assert(true)

FactorizeOptions Lu() { return {.kind = FactorizationKind::kLu, .devices = 2}; }
FactorizeOptions Cholesky() { return {.kind = FactorizationKind::kCholesky, .devices = 2}; }

// ||P A - L U||_max / (n ||A||_max) <= 8 n eps, with L unit lower and U upper from `lu`.
void ExpectLuOf(const Matrix& a, const FactorizeResult& f) {
  const int64_t n = a.rows();
  ASSERT_EQ(f.lu.rows(), n);
  ASSERT_EQ(static_cast<int64_t>(f.permutation.size()), n);
  const auto av = a.As<double>();
  const auto lu = f.lu.As<double>();
  long double worst = 0;
  long double largest = 0;
  for (double x : av) largest = std::max<long double>(largest, std::fabs(x));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      long double sum = 0;
      for (int64_t k = 0; k <= std::min(i, j); ++k) {
        const long double l = k == i ? 1.0L : lu[i * n + k];
        sum += l * lu[k * n + j];
      }
      worst = std::max(worst, std::fabs(sum - av[f.permutation[i] * n + j]));
    }
  }
  EXPECT_LE(worst, 8 * n * kEps * n * largest);
}

// L lower (zeros above the diagonal) with L L^T = A.
void ExpectCholeskyOf(const Matrix& a, const Matrix& l) {
  const int64_t n = a.rows();
  const auto av = a.As<double>();
  const auto lv = l.As<double>();
  long double worst = 0;
  long double largest = 0;
  for (double x : av) largest = std::max<long double>(largest, std::fabs(x));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (j > i) {
        EXPECT_EQ(lv[i * n + j], 0.0) << i << "," << j;
      }
      long double sum = 0;
      for (int64_t k = 0; k <= std::min(i, j); ++k) {
        sum += static_cast<long double>(lv[i * n + k]) * lv[j * n + k];
      }
      worst = std::max(worst, std::fabs(sum - av[i * n + j]));
    }
  }
  EXPECT_LE(worst, 8 * n * kEps * largest);
}

TEST(MultiGpuFactorize, LuReproducesAAndSolvesForOrdersAroundTheBlock) {
  MATRIXD_REQUIRE_TWO_GPUS();
  // 333 over blocks of 64: six blocks, the last short; 100: under block x GPUs; 37: one block
  // (the second GPU holds nothing); 1.
  for (int64_t n : {333, 100, 37, 1}) {
    SCOPED_TRACE(n);
    const Matrix a = RandomMatrix<double>(n, n, 7 + n);
    const Matrix b = RandomMatrix<double>(n, 3, 11 + n);
    const MatrixView rhs = b.view();
    absl::StatusOr<FactorizeResult> f = MultiGpuFactorize(kTwo, a.view(), Lu(), &rhs, 64);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_FALSE(f->singular_column.has_value());
    ExpectLuOf(a, *f);
    ASSERT_TRUE(f->solution.has_value());
    ExpectSolves<double>(a, b, *f->solution, 16);
  }
}

TEST(MultiGpuFactorize, LuEqualsOneGpusFactors) {
  MATRIXD_REQUIRE_TWO_GPUS();
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const int64_t n = 515;
  const Matrix a = RandomMatrix<double>(n, n, 5);
  absl::StatusOr<FactorizeResult> one =
      (*cuda)->Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, nullptr);
  ASSERT_TRUE(one.ok()) << one.status();
  absl::StatusOr<FactorizeResult> two = MultiGpuFactorize(kTwo, a.view(), Lu(), nullptr, 128);
  ASSERT_TRUE(two.ok()) << two.status();
  // Partial pivoting on a random matrix has no near ties: the same pivots, the same factors up
  // to rounding.
  EXPECT_EQ(two->permutation, one->permutation);
  const auto x = one->lu.As<double>();
  const auto y = two->lu.As<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  EXPECT_LE(worst, 1e-9);
}

TEST(MultiGpuFactorize, CholeskyGivesLowerLWithLLtEqualToAAndSolves) {
  MATRIXD_REQUIRE_TWO_GPUS();
  for (int64_t n : {333, 100, 37, 1}) {
    SCOPED_TRACE(n);
    const Matrix a = HermitianPositiveDefinite<double>(n, 3 + n);
    const Matrix b = RandomMatrix<double>(n, 2, 13 + n);
    const MatrixView rhs = b.view();
    absl::StatusOr<FactorizeResult> f = MultiGpuFactorize(kTwo, a.view(), Cholesky(), &rhs, 64);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->kind, FactorizationKind::kCholesky);
    ExpectCholeskyOf(a, f->l);
    ASSERT_TRUE(f->solution.has_value());
    ExpectSolves<double>(a, b, *f->solution, 16);
  }
}

TEST(MultiGpuFactorize, SingularLuNamesTheColumnAndRefusesASolve) {
  MATRIXD_REQUIRE_TWO_GPUS();
  const int64_t n = 150;
  Matrix a = RandomMatrix<double>(n, n, 9);
  auto values = a.As<double>();
  for (int64_t i = 0; i < n; ++i) values[i * n + 70] = 0.0;  // column 70 is zero
  absl::StatusOr<FactorizeResult> f = MultiGpuFactorize(kTwo, a.view(), Lu(), nullptr, 64);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->singular_column.has_value());
  EXPECT_EQ(*f->singular_column, 70);
  const Matrix b = RandomMatrix<double>(n, 1, 2);
  const MatrixView rhs = b.view();
  absl::StatusOr<FactorizeResult> solved = MultiGpuFactorize(kTwo, a.view(), Lu(), &rhs, 64);
  EXPECT_EQ(solved.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(solved.status().message(), HasSubstr("matrix is singular: U[70,70] = 0"));
}

TEST(MultiGpuFactorize, NotPositiveDefiniteIsFailedPreconditionAsOnOneGpu) {
  MATRIXD_REQUIRE_TWO_GPUS();
  const int64_t n = 130;
  Matrix a = HermitianPositiveDefinite<double>(n, 4);
  a.As<double>()[100 * n + 100] = -1e6;  // the leading minor of order 101 is negative
  absl::StatusOr<FactorizeResult> f = MultiGpuFactorize(kTwo, a.view(), Cholesky(), nullptr, 64);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition) << f.status();
  // With the order where cusolverMg reports it in info, else said to be unknown.
  EXPECT_THAT(f.status().message(),
              ::testing::AnyOf(HasSubstr("not positive definite: the leading minor of order 101"),
                               HasSubstr("does not report the order of the failing leading")));
}

TEST(MultiGpuFactorize, TheBackendReadsAResidentOperandOnItsGpu) {
  MATRIXD_REQUIRE_TWO_GPUS();
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const int64_t n = 700;
  const Matrix a = HermitianPositiveDefinite<double>(n, 21);
  const Matrix b = RandomMatrix<double>(n, 4, 22);
  const MatrixView rhs = b.view();
  // On the second GPU: the first pushes nothing, the copies come from where the matrix lies.
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> resident =
      (*cuda)->AllocateResident(n, n, DType::kFloat64, 1);
  ASSERT_TRUE(resident.ok()) << resident.status();
  ASSERT_TRUE((*resident)->Write(0, {a.bytes(), a.byte_size()}).ok());
  ASSERT_TRUE((*resident)->Flush().ok());
  const MatrixView on_device = (*resident)->view();
  ASSERT_TRUE(on_device.on_device());
  for (FactorizeOptions options : {Lu(), Cholesky()}) {
    ASSERT_TRUE((*cuda)->Supports(FactorizeQuery(on_device, options, &rhs)).ok());
    EXPECT_TRUE((*cuda)->FactorizeReadsOnDevice(on_device, options, &rhs));
    // cusolverMg does not look for NaN/Inf: the server scans a host operand itself.
    EXPECT_FALSE((*cuda)->FactorizeChecksFinite(a.view(), options, &rhs));
    EXPECT_GT((*cuda)->FactorizeDeviceBytes(on_device, options, &rhs), a.byte_size() / 2);
    absl::StatusOr<FactorizeResult> f = (*cuda)->Factorize(on_device, options, &rhs, nullptr);
    ASSERT_TRUE(f.ok()) << f.status();
    if (options.kind == FactorizationKind::kLu) {
      ExpectLuOf(a, *f);
    } else {
      ExpectCholeskyOf(a, f->l);
    }
    ExpectSolves<double>(a, b, *f->solution, 16);
  }
}

TEST(MultiGpuFactorize, TheBackendRefusesMoreDevicesThanItHasNamingDevices) {
  MATRIXD_REQUIRE_TWO_GPUS();
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const Matrix a = RandomMatrix<double>(8, 8, 1);
  FactorizeOptions options = Lu();
  options.devices = DeviceCount() + 1;
  const absl::Status status = (*cuda)->Supports(FactorizeQuery(a.view(), options, nullptr));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("devices is"));
}

}  // namespace
}  // namespace matrixd::multi_gpu
