// MultiGpuLu (our LU with look-ahead over the GPUs of one process) against the CPU backend's
// LAPACK determinant and against exact values, from host operands and from resident matrices on
// each GPU, in float64 and (MultiGpuLuDtype) in float32, complex64 and complex128 too; NaN and Inf
// are refused naming the entry, an overflowing pivot is OUT_OF_RANGE. The argument checks run
// anywhere; the rest skips without a CUDA device and runs on every GPU count from 1 to min(devices,
// 3).
#include "core/multi_gpu/multi_gpu_lu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu/cpu_backend.h"
#include "core/make_backend.h"
#include "core/resident_matrix.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"
#include "tests/multi_gpu/gpu_devices.h"

namespace matrixd::multi_gpu {
namespace {

using testing::DeviceCount;
using testing::FirstDevices;

int MaxGpus() { return std::min(DeviceCount(), 3); }

// The tridiagonal (-1, 2, -1) matrix with its rows reversed: det = (-1)^floor(n/2) (n + 1), and
// every elimination step must swap rows.
Matrix ReversedLaplacian(int64_t n) {
  Matrix a(n, n, DType::kFloat64);
  auto values = a.As<double>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = n - 1 - i;
    for (int64_t j = std::max<int64_t>(0, row - 1); j <= std::min(n - 1, row + 1); ++j) {
      values[i * n + j] = row == j ? 2.0 : -1.0;
    }
  }
  return a;
}

// `m` as a resident matrix of the CUDA backend on its device `device_index` (stream-ordered pool
// memory of that GPU: readable by that GPU only).
std::unique_ptr<ResidentMatrix> OnDevice(Backend& cuda, const Matrix& m, int device_index) {
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> resident =
      cuda.AllocateResident(m.rows(), m.cols(), m.dtype(), device_index);
  EXPECT_TRUE(resident.ok()) << resident.status();
  if (!resident.ok()) return nullptr;
  EXPECT_TRUE((*resident)->Write(0, {m.bytes(), m.byte_size()}).ok());
  EXPECT_TRUE((*resident)->Flush().ok());
  EXPECT_TRUE((*resident)->view().on_device());
  return *std::move(resident);
}

// Wilkinson's matrix (1 on the diagonal, -1 below it, 1 in the last column) times `scale`, stored
// transposed: MultiGpuLu factors the transpose of what it is given, so it meets the matrix itself,
// whose last pivot under partial pivoting is scale * 2^(n-1).
Matrix WilkinsonTransposed(int64_t n, double scale) {
  Matrix a(n, n, DType::kFloat64);
  auto values = a.As<double>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double w = (j == i || j == n - 1) ? 1.0 : (i > j ? -1.0 : 0.0);
      values[j * n + i] = scale * w;
    }
  }
  return a;
}

// A determinant's phase: sign * exp(i angle) (1 for a real positive one).
std::complex<double> PhaseOf(const DistributedDeterminant& det) {
  return static_cast<double>(det.sign) * std::polar(1.0, det.angle);
}

// `m` with row `row` zeroed: exactly singular.
Matrix WithZeroRow(Matrix m, int64_t row) {
  const size_t width = ElementSize(m.dtype()) * static_cast<size_t>(m.cols());
  std::fill_n(m.mutable_bytes() + static_cast<size_t>(row) * width, width, std::byte{0});
  return m;
}

template <typename T>
class MultiGpuLuDtype : public ::testing::Test {};
using FloatingTypes = ::testing::Types<float, double, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(MultiGpuLuDtype, FloatingTypes);

// Every floating dtype over 1..3 GPUs equals the CPU backend's determinant (which widens float32
// and complex64 as this LU does): n = 1, n below the block (the other GPUs hold nothing), n below
// two blocks (one GPU of three holds nothing), n not a multiple of the block, several blocks per
// GPU; and an exactly singular matrix is 0.
TYPED_TEST(MultiGpuLuDtype, EveryShapeMatchesTheCpuDeterminant) {
  const int max_gpus = MaxGpus();
  if (max_gpus == 0) GTEST_SKIP() << "no CUDA device";
  auto cpu = MakeCpuBackend({.threads = 0});
  for (const auto& [n, block] : std::vector<std::array<int64_t, 2>>{
           {1, 4}, {5, 8}, {20, 16}, {100, 32}, {257, 64}, {600, 48}}) {
    const Matrix a = testing::RandomMatrix<TypeParam>(n, n, 7 + n);
    JobControl control;
    auto reference = cpu->Determinant(a.view(), {}, &control);
    ASSERT_TRUE(reference.ok()) << reference.status();
    for (int gpus = 1; gpus <= max_gpus; ++gpus) {
      auto det = MultiGpuDeterminant(FirstDevices(gpus), a.view(), block);
      ASSERT_TRUE(det.ok()) << det.status();
      const std::string where =
          absl::StrCat(DTypeName(a.dtype()), " n=", n, " block=", block, " gpus=", gpus);
      EXPECT_NEAR(std::abs(PhaseOf(*det) - reference->value.phase()), 0.0, 1e-9) << where;
      EXPECT_NEAR(det->log_abs, reference->value.log_abs(),
                  1e-9 * std::max(1.0, std::abs(reference->value.log_abs())))
          << where;
    }
    if (n < 2) continue;
    const Matrix singular = WithZeroRow(a, n / 2);
    for (int gpus = 1; gpus <= max_gpus; ++gpus) {
      auto det = MultiGpuDeterminant(FirstDevices(gpus), singular.view(), block);
      ASSERT_TRUE(det.ok()) << det.status();
      EXPECT_EQ(det->sign, 0) << DTypeName(a.dtype()) << " n=" << n << " gpus=" << gpus;
      EXPECT_EQ(det->log_abs, -std::numeric_limits<double>::infinity());
    }
  }
}

// A resident operand on each GPU gives the host operand's determinant (float32 and complex64 are
// widened on the receiving GPUs after a push from the holder). Where the matrix lies changes no
// arithmetic: the same factors, whichever GPU pushes them (the diagonal's logarithms are summed
// with atomics, in no fixed order: equal to rounding).
TYPED_TEST(MultiGpuLuDtype, ADeviceOperandGivesTheHostOperandsDeterminant) {
  const int max_gpus = MaxGpus();
  if (max_gpus == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const Matrix a = testing::RandomMatrix<TypeParam>(300, 300, 11);
  for (int gpus = 1; gpus <= max_gpus; ++gpus) {
    auto from_host = MultiGpuDeterminant(FirstDevices(gpus), a.view(), 32);
    ASSERT_TRUE(from_host.ok()) << from_host.status();
    for (int holder = 0; holder < DeviceCount(); ++holder) {
      const std::unique_ptr<ResidentMatrix> resident = OnDevice(**cuda, a, holder);
      ASSERT_NE(resident, nullptr);
      auto from_device = MultiGpuDeterminant(FirstDevices(gpus), resident->view(), 32);
      ASSERT_TRUE(from_device.ok()) << from_device.status();
      EXPECT_NEAR(std::abs(PhaseOf(*from_device) - PhaseOf(*from_host)), 0.0, 1e-12)
          << "gpus=" << gpus << " holder=" << holder;
      EXPECT_NEAR(from_device->log_abs, from_host->log_abs,
                  1e-13 * std::max(1.0, std::abs(from_host->log_abs)))
          << "gpus=" << gpus << " holder=" << holder;
    }
  }
}

TEST(MultiGpuLu, RefusesAnOperandOfAnotherElementType) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  auto lu = MultiGpuLu::Create({0}, 4, 4, DType::kFloat64);
  ASSERT_TRUE(lu.ok()) << lu.status();
  const absl::Status complex =
      (*lu)->Upload(testing::RandomMatrix<std::complex<double>>(4, 4, 1).view());
  EXPECT_TRUE(absl::IsInvalidArgument(complex)) << complex;
  const absl::Status integer = (*lu)->Upload(Matrix(4, 4, DType::kInt64).view());
  EXPECT_TRUE(absl::IsInvalidArgument(integer)) << integer;
}

TEST(MultiGpuLu, RefusesBadArgumentsBeforeTouchingAGpu) {
  EXPECT_TRUE(absl::IsInvalidArgument(MultiGpuLu::Create({}, 10, 4).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MultiGpuLu::Create({0, 0}, 10, 4).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MultiGpuLu::Create({0}, 0, 4).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MultiGpuLu::Create({0}, 10, 0).status()));
  // The LU runs in float64 or complex128 (float32 and complex64 are widened into them).
  EXPECT_TRUE(absl::IsInvalidArgument(MultiGpuLu::Create({0}, 10, 4, DType::kFloat32).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      MultiGpuDeterminant({0}, Matrix(2, 3, DType::kFloat64).view(), 4).status()));
}

TEST(MultiGpuLu, RandomMatchesTheCpuDeterminant) {
  const int max_gpus = MaxGpus();
  if (max_gpus == 0) GTEST_SKIP() << "no CUDA device";
  auto cpu = MakeCpuBackend({.threads = 0});
  // n a multiple of the block, not one, smaller than it, and a single element.
  for (const auto& [n, block] : std::vector<std::array<int64_t, 2>>{
           {1, 4}, {5, 8}, {64, 16}, {100, 32}, {257, 64}, {1000, 128}}) {
    const Matrix a = testing::RandomMatrix<double>(n, n, 7);
    JobControl control;
    auto reference = cpu->Determinant(a.view(), {}, &control);
    ASSERT_TRUE(reference.ok()) << reference.status();
    const double expected_log = reference->value.log_abs();
    const int expected_sign = static_cast<int>(reference->value.phase().real());
    for (int gpus = 1; gpus <= max_gpus; ++gpus) {
      auto det = MultiGpuDeterminant(FirstDevices(gpus), a.view(), block);
      ASSERT_TRUE(det.ok()) << det.status();
      EXPECT_EQ(det->sign, expected_sign) << "n=" << n << " block=" << block << " gpus=" << gpus;
      EXPECT_NEAR(det->log_abs, expected_log, 1e-9 * std::max(1.0, std::abs(expected_log)))
          << "n=" << n << " block=" << block << " gpus=" << gpus;
    }
  }
}

TEST(MultiGpuLu, ReversedLaplacianPivotsEveryStepAndIsExact) {
  const int max_gpus = MaxGpus();
  if (max_gpus == 0) GTEST_SKIP() << "no CUDA device";
  for (const auto& [n, block] :
       std::vector<std::array<int64_t, 2>>{{2, 4}, {7, 2}, {64, 8}, {301, 32}}) {
    const Matrix a = ReversedLaplacian(n);
    for (int gpus = 1; gpus <= max_gpus; ++gpus) {
      auto det = MultiGpuDeterminant(FirstDevices(gpus), a.view(), block);
      ASSERT_TRUE(det.ok()) << det.status();
      EXPECT_EQ(det->sign, (n / 2) % 2 == 0 ? 1 : -1) << "n=" << n << " gpus=" << gpus;
      EXPECT_NEAR(det->log_abs, std::log(static_cast<double>(n + 1)), 1e-10)
          << "n=" << n << " gpus=" << gpus;
    }
  }
}

TEST(MultiGpuLu, SingularMatrixIsZeroNotNan) {
  const int max_gpus = MaxGpus();
  if (max_gpus == 0) GTEST_SKIP() << "no CUDA device";
  const int64_t n = 150;
  // A zero row: exactly singular in floating point too (two equal rows are not: the first
  // elimination step leaves rounding residues of ~1e-16 where exact arithmetic leaves zeros, and
  // getrf, cusolverMg and this LU all report a tiny non-zero determinant then).
  Matrix zero_row = testing::RandomMatrix<double>(n, n, 3);
  auto values = zero_row.As<double>();
  for (int64_t j = 0; j < n; ++j) values[40 * n + j] = 0.0;
  const Matrix zero(n, n, DType::kFloat64);
  for (const Matrix* a : std::vector<const Matrix*>{&zero_row, &zero}) {
    for (int gpus = 1; gpus <= max_gpus; ++gpus) {
      auto det = MultiGpuDeterminant(FirstDevices(gpus), a->view(), 32);
      ASSERT_TRUE(det.ok()) << det.status();
      EXPECT_EQ(det->sign, 0) << "gpus=" << gpus;
      EXPECT_EQ(det->log_abs, -std::numeric_limits<double>::infinity()) << "gpus=" << gpus;
    }
  }
}

TEST(MultiGpuLu, TwoGpusWhereOneHoldsNothing) {
  if (DeviceCount() < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  // n below the block: one panel, the second GPU's part is empty.
  const Matrix a = testing::RandomMatrix<double>(20, 20, 5);
  auto cpu = MakeCpuBackend({.threads = 0});
  JobControl control;
  auto reference = cpu->Determinant(a.view(), {}, &control);
  ASSERT_TRUE(reference.ok()) << reference.status();
  auto det = MultiGpuDeterminant({0, 1}, a.view(), 64);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(det->sign, static_cast<int>(reference->value.phase().real()));
  EXPECT_NEAR(det->log_abs, reference->value.log_abs(), 1e-10);
}

TEST(MultiGpuLu, FactorsAgainAfterANewUpload) {
  if (DeviceCount() < 1) GTEST_SKIP() << "no CUDA device";
  const int gpus = std::min(DeviceCount(), 2);
  auto lu = MultiGpuLu::Create(FirstDevices(gpus), 96, 16);
  ASSERT_TRUE(lu.ok()) << lu.status();
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE((*lu)->Upload(ReversedLaplacian(96).view()).ok());
    ASSERT_TRUE((*lu)->Factor().ok());
    auto det = (*lu)->Determinant();
    ASSERT_TRUE(det.ok()) << det.status();
    EXPECT_EQ(det->sign, 1);
    EXPECT_NEAR(det->log_abs, std::log(97.0), 1e-10);
  }
}

TEST(MultiGpuLu, ANanOrInfIsInvalidArgumentNamingTheFirstEntry) {
  const int max_gpus = MaxGpus();
  if (max_gpus == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const int64_t n = 100;
  // Block 16: row 37 is in panel 2 (GPU 0 of 2), row 60 in panel 3 (GPU 1 of 2); the first in
  // row-major order is the one named, whichever GPU finds it.
  Matrix a = testing::RandomMatrix<double>(n, n, 5);
  a.As<double>()[60 * n + 2] = std::numeric_limits<double>::infinity();
  a.As<double>()[37 * n + 90] = std::numeric_limits<double>::quiet_NaN();
  const std::unique_ptr<ResidentMatrix> resident = OnDevice(**cuda, a, 0);
  ASSERT_NE(resident, nullptr);
  for (int gpus = 1; gpus <= max_gpus; ++gpus) {
    for (const MatrixView& view : {a.view(), resident->view()}) {
      auto det = MultiGpuDeterminant(FirstDevices(gpus), view, 16);
      EXPECT_EQ(det.status().code(), absl::StatusCode::kInvalidArgument) << "gpus=" << gpus;
      EXPECT_EQ(det.status().message(), "matrix[37, 90] is not finite (NaN or Inf)")
          << "gpus=" << gpus << " on_device=" << view.on_device();
    }
  }
}

TEST(MultiGpuLu, AnOverflowingPivotIsOutOfRangeNotZero) {
  const int max_gpus = MaxGpus();
  if (max_gpus == 0) GTEST_SKIP() << "no CUDA device";
  // Finite entries of 1e300; the last pivot, 1e300 * 2^63, is not a double.
  const Matrix a = WilkinsonTransposed(64, 1e300);
  for (int gpus = 1; gpus <= max_gpus; ++gpus) {
    auto det = MultiGpuDeterminant(FirstDevices(gpus), a.view(), 16);
    EXPECT_EQ(det.status().code(), absl::StatusCode::kOutOfRange)
        << "gpus=" << gpus << ": " << det.status();
  }
  // Scaled by 1 it is exact: det = 2^63.
  const Matrix small = WilkinsonTransposed(64, 1.0);
  for (int gpus = 1; gpus <= max_gpus; ++gpus) {
    auto det = MultiGpuDeterminant(FirstDevices(gpus), small.view(), 16);
    ASSERT_TRUE(det.ok()) << det.status();
    EXPECT_EQ(det->sign, 1);
    EXPECT_NEAR(det->log_abs, 63 * std::log(2.0), 1e-12);
  }
}

}  // namespace
}  // namespace matrixd::multi_gpu
