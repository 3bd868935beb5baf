// The block condition estimator on the device (core/cuda/condition.h): its kernels and host
// decisions against the host block (core/cpu/condition.h) on the same triangular matrices, solved
// by cuBLAS trsm with 2 right-hand sides; repeated estimates bit-identical; the kernel record.
// Skips where there is no CUDA device.
#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "core/condition_estimate.h"
#include "core/cpu/condition.h"
#include "core/cuda/condition.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_context.h"
#include "core/cuda/factor_solves.h"
#include "core/cuda/library_types.h"
#include "gtest/gtest.h"
#include "tests/core/cuda_context_test.h"

namespace matrixd::cuda {
namespace {

template <typename T>
class CudaCondition : public CudaContextTest {};
using ElementTypes = ::testing::Types<float, double, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(CudaCondition, ElementTypes);

// Column-major upper triangular n x n R, entries uniform in [-1, 1] with `diagonal` added on the
// diagonal; the strict lower part holds garbage that must not be read.
template <typename T>
std::vector<T> UpperTriangular(int64_t n, double diagonal, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<T> r(static_cast<size_t>(n * n));
  for (T& x : r) {
    if constexpr (std::is_same_v<T, std::complex<float>> ||
                  std::is_same_v<T, std::complex<double>>) {
      x = T(uniform(rng), uniform(rng));
    } else {
      x = static_cast<T>(uniform(rng));
    }
  }
  for (int64_t i = 0; i < n; ++i) r[i + i * n] += static_cast<T>(diagonal);
  return r;
}

TYPED_TEST(CudaCondition, DeviceBlockMatchesHostBlockAndRepeatsBitIdentically) {
  using T = TypeParam;
  using Traits = LibraryTraits<T>;
  DeviceContext& context = *this->context_;
  const bool single = sizeof(T) == sizeof(float) || sizeof(T) == sizeof(std::complex<float>);
  for (const int64_t n : {1, 2, 7, 300, 1000}) {
    {
      // Conditioned well enough for float's solves to agree (kappa_1 ~ 1e4 at n = 300).
      const double diagonal = n <= 300 ? 4.0 : 8.0;
      SCOPED_TRACE(::testing::Message() << "n=" << n);
      const std::vector<T> r = UpperTriangular<T>(n, diagonal, 31 + n);
      const double norm = cpu::UpperTriangleOneNorm<T>(n, r.data(), n, cpu::Storage::kColumnMajor);
      absl::StatusOr<double> host = cpu::ReciprocalCondition<T>(cpu::Factors::kUpper, n, r.data(),
                                                                n, cpu::Storage::kColumnMajor, norm,
                                                                nullptr, kDeviceEstimateColumns);
      ASSERT_TRUE(host.ok()) << host.status();

      absl::StatusOr<DeviceBuffer> device_r = context.Allocate(r.size() * sizeof(T));
      ASSERT_TRUE(device_r.ok());
      ASSERT_TRUE(context.Upload(r.data(), *device_r, r.size() * sizeof(T)).ok());
      const typename Traits::Device one = Traits::One();
      const auto solve = [&](bool adjoint, void* x, int columns) -> absl::Status {
        MATRIXD_CUDA_RETURN_IF_ERROR(
            Traits::trsm(context.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER,
                         adjoint ? Traits::kAdjoint : CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                         static_cast<int>(n), columns, &one, LibraryPointer<T>(device_r->data()),
                         static_cast<int>(n), LibraryPointer<T>(x), static_cast<int>(n)));
        return absl::OkStatus();
      };
      ComputeStats stats;
      const absl::StatusOr<double> first =
          DeviceReciprocalCondition<T>(context, n, norm, DeviceInverseApply(solve), &stats);
      const absl::StatusOr<double> second =
          DeviceReciprocalCondition<T>(context, n, norm, DeviceInverseApply(solve), &stats);
      ASSERT_TRUE(first.ok()) << first.status();
      ASSERT_TRUE(second.ok()) << second.status();
      // Same decisions, solves that differ only in rounding.
      EXPECT_NEAR(*first, *host, (single ? 1e-4 : 1e-10) * *host);
      EXPECT_EQ(*first, *second);
      ASSERT_EQ(stats.kernels.size(), 2u);
      EXPECT_EQ(stats.kernels[0].kernel, "condition_estimate");
      EXPECT_GT(stats.flops, 0.0);
    }
  }
}

// The backend's own solves (core/cuda/factor_solves.h) instead of trsm, with the device block's
// columns and with the host's 2 (through the 2-column triangular solves): the same estimate as the
// host block of as many columns up to the solves' rounding.
TYPED_TEST(CudaCondition, FactorSolvesGiveTheHostBlocksEstimate) {
  using T = TypeParam;
  DeviceContext& context = *this->context_;
  const bool single = sizeof(T) == sizeof(float) || sizeof(T) == sizeof(std::complex<float>);
  for (const int64_t n : {1, 2, 7, 65, 300, 1000}) {
    const std::vector<T> r = UpperTriangular<T>(n, n <= 300 ? 4.0 : 8.0, 31 + n);
    const double norm = cpu::UpperTriangleOneNorm<T>(n, r.data(), n, cpu::Storage::kColumnMajor);
    absl::StatusOr<DeviceBuffer> device_r = context.Allocate(r.size() * sizeof(T));
    ASSERT_TRUE(device_r.ok());
    ASSERT_TRUE(context.Upload(r.data(), *device_r, r.size() * sizeof(T)).ok());
    absl::StatusOr<DeviceFactorSolves<T>> solves =
        DeviceFactorSolves<T>::UpperTriangle(context, device_r->template as<const T>(), n, n);
    ASSERT_TRUE(solves.ok()) << solves.status();
    const auto solve = [&](bool adjoint, void* x, int columns) {
      return solves->Apply(adjoint, x, columns);
    };
    for (const int columns : {kDeviceEstimateColumns, kEstimateColumns}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " columns=" << columns);
      int host_solves = 0;
      absl::StatusOr<double> host =
          cpu::ReciprocalCondition<T>(cpu::Factors::kUpper, n, r.data(), n,
                                      cpu::Storage::kColumnMajor, norm, &host_solves, columns);
      ASSERT_TRUE(host.ok()) << host.status();
      ComputeStats stats;
      int device_solves = 0;
      const absl::StatusOr<double> rcond = DeviceReciprocalCondition<T>(
          context, n, norm, DeviceInverseApply(solve), &stats, columns, &device_solves);
      ASSERT_TRUE(rcond.ok()) << rcond.status();
      EXPECT_NEAR(*rcond, *host, (single ? 1e-4 : 1e-10) * *host);
      EXPECT_EQ(device_solves, host_solves);
    }
  }
}

TYPED_TEST(CudaCondition, ZeroPivotGivesZeroAndFailingSolveIsReturned) {
  using T = TypeParam;
  DeviceContext& context = *this->context_;
  ComputeStats stats;
  const auto failing = [](bool, void*, int) -> absl::Status {
    return absl::InternalError("trsm failed on purpose");
  };
  const absl::StatusOr<double> failed =
      DeviceReciprocalCondition<T>(context, 50, 1.0, DeviceInverseApply(failing), &stats);
  EXPECT_EQ(failed.status().message(), "trsm failed on purpose");
  // Solving with a zero diagonal: every entry becomes Inf or NaN.
  const std::vector<T> zero(100 * 100, T(0));
  absl::StatusOr<DeviceBuffer> device_r = context.Allocate(zero.size() * sizeof(T));
  ASSERT_TRUE(device_r.ok());
  ASSERT_TRUE(context.Upload(zero.data(), *device_r, zero.size() * sizeof(T)).ok());
  using Traits = LibraryTraits<T>;
  const typename Traits::Device one = Traits::One();
  const auto singular = [&](bool adjoint, void* x, int columns) -> absl::Status {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        Traits::trsm(context.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER,
                     adjoint ? Traits::kAdjoint : CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, 100, columns,
                     &one, LibraryPointer<T>(device_r->data()), 100, LibraryPointer<T>(x), 100));
    return absl::OkStatus();
  };
  const absl::StatusOr<double> rcond =
      DeviceReciprocalCondition<T>(context, 100, 1.0, DeviceInverseApply(singular), &stats);
  ASSERT_TRUE(rcond.ok()) << rcond.status();
  EXPECT_EQ(*rcond, 0.0);
}

}  // namespace
}  // namespace matrixd::cuda
