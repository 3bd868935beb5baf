// Factorize over several GPUs by cusolverMg (core/multi_gpu/multi_gpu_factorize.h and the
// backend's devices > 1), in every dtype the single-GPU Factorize takes (float32, float64,
// complex64, complex128): LU factors and permutation reproduce A and equal one GPU's, solves have
// small residuals, Cholesky's L L^H = A; orders not a multiple of the block, smaller than the
// block times the GPUs, n = 1; singular and non-positive-definite inputs answer as on one GPU; a
// resident operand is read on its GPU; the admission estimate scales with the element size; a
// factorization kept on the GPUs (keep_on_devices) reads back as the gathered factors and solves
// as they do, through the backend as one GPU's kept factorization. The GPU cases skip with fewer
// than 2 GPUs.
#include "core/multi_gpu/multi_gpu_factorize.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "core/device_factorization.h"
#include "core/factorization.h"
#include "core/make_backend.h"
#include "core/resident_matrix.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"
#include "tests/core/kept_factorization_support.h"
#include "tests/multi_gpu/gpu_devices.h"

namespace matrixd::multi_gpu {
namespace {

using testing::DeviceCount;

using ::matrixd::testing::ConjugateTranspose;
using ::matrixd::testing::DistanceNorm;
using ::matrixd::testing::Eps;
using ::matrixd::testing::ExpectSolves;
using ::matrixd::testing::ForEachFloatingType;
using ::matrixd::testing::HermitianPositiveDefinite;
using ::matrixd::testing::Norm;
using ::matrixd::testing::Product;
using ::matrixd::testing::RandomMatrix;
using ::matrixd::testing::Real;
using ::matrixd::testing::Wide;
using ::matrixd::testing::WideMatrix;
using ::matrixd::testing::Widen;
using ::testing::HasSubstr;

const std::vector<int> kTwo = {0, 1};

#define MATRIXD_REQUIRE_TWO_GPUS()                           \
  if (DeviceCount() < 2) {                                   \
    GTEST_SKIP() << "needs 2 GPUs, found " << DeviceCount(); \
  }                                                          \
  static_assert(true)

FactorizeOptions Lu() { return {.kind = FactorizationKind::kLu, .devices = 2}; }
FactorizeOptions Cholesky() { return {.kind = FactorizationKind::kCholesky, .devices = 2}; }

// ||P A - L U||_F <= slack n eps ||L||_F ||U||_F, with L unit lower and U upper from `lu`
// (T's eps; complex T's of its real part).
template <typename T>
void ExpectLuOf(const Matrix& a, const FactorizeResult& f, long double slack = 8) {
  const int64_t n = a.rows();
  ASSERT_EQ(f.lu.dtype(), a.dtype());
  ASSERT_EQ(f.lu.rows(), n);
  ASSERT_EQ(static_cast<int64_t>(f.permutation.size()), n);
  using W = Wide<T>;
  const auto wa = Widen<T>(a);
  const auto lu = Widen<T>(f.lu);
  WideMatrix<W> l(n, n), u(n, n), pa(n, n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      (j < i ? l : u)(i, j) = lu(i, j);
      pa(i, j) = wa(f.permutation[i], j);
    }
    l(i, i) = W(1);
  }
  EXPECT_LE(DistanceNorm(Product(l, u), pa), slack * n * Eps<T>() * Norm(l) * Norm(u));
}

// L lower (exact zeros above the diagonal) with ||L L^H - A||_F <= slack n eps ||L||_F^2.
template <typename T>
void ExpectCholeskyOf(const Matrix& a, const Matrix& l, long double slack = 8) {
  const int64_t n = a.rows();
  ASSERT_EQ(l.dtype(), a.dtype());
  ASSERT_EQ(l.rows(), n);
  const auto values = l.As<T>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) EXPECT_EQ(values[i * n + j], T(0)) << i << "," << j;
  }
  const auto wl = Widen<T>(l);
  const long double norm = Norm(wl);
  EXPECT_LE(DistanceNorm(Product(wl, ConjugateTranspose(wl)), Widen<T>(a)),
            slack * n * Eps<T>() * norm * norm);
}

// ||x - y||_F <= slack n eps ||x||_F: results of two well-conditioned computations.
template <typename T>
void ExpectClose(const Matrix& x, const Matrix& y, long double slack) {
  ASSERT_EQ(x.dtype(), y.dtype());
  ASSERT_EQ(x.rows(), y.rows());
  ASSERT_EQ(x.cols(), y.cols());
  const auto wx = Widen<T>(x);
  EXPECT_LE(DistanceNorm(wx, Widen<T>(y)), slack * x.rows() * Eps<T>() * Norm(wx));
}

// A random n x n matrix plus 2n on the diagonal: every column diagonally dominant, so partial
// pivoting swaps no rows on any device (no near ties to break differently) and A is well
// conditioned.
template <typename T>
Matrix DiagonallyDominant(int64_t n, uint64_t seed) {
  Matrix a = RandomMatrix<T>(n, n, seed);
  auto values = a.As<T>();
  for (int64_t i = 0; i < n; ++i) values[i * n + i] += static_cast<Real<T>>(2 * n);
  return a;
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
    ExpectLuOf<double>(a, *f);
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
    ExpectCholeskyOf<double>(a, f->l);
    ASSERT_TRUE(f->solution.has_value());
    ExpectSolves<double>(a, b, *f->solution, 16);
  }
}

// Every dtype the single-GPU Factorize takes: P A = L U and A X = B within the dtype's bounds, for
// an order of several blocks with a short last one and for one block (the second GPU idle).
TEST(MultiGpuFactorize, EveryDTypeLuReproducesAAndSolves) {
  MATRIXD_REQUIRE_TWO_GPUS();
  ForEachFloatingType([](auto type) {
    using T = typename decltype(type)::type;
    for (int64_t n : {333, 37}) {
      SCOPED_TRACE(n);
      const Matrix a = RandomMatrix<T>(n, n, 17 + n);
      const Matrix b = RandomMatrix<T>(n, 3, 19 + n);
      const MatrixView rhs = b.view();
      absl::StatusOr<FactorizeResult> f = MultiGpuFactorize(kTwo, a.view(), Lu(), &rhs, 64);
      ASSERT_TRUE(f.ok()) << f.status();
      EXPECT_FALSE(f->singular_column.has_value());
      ExpectLuOf<T>(a, *f);
      ASSERT_TRUE(f->solution.has_value());
      ExpectSolves<T>(a, b, *f->solution, 16);
    }
  });
}

// Every dtype: L lower with L L^H = A (A Hermitian: complex Cholesky reads A's lower triangle)
// and A X = B.
TEST(MultiGpuFactorize, EveryDTypeCholeskyGivesLWithLLhEqualToAAndSolves) {
  MATRIXD_REQUIRE_TWO_GPUS();
  ForEachFloatingType([](auto type) {
    using T = typename decltype(type)::type;
    for (int64_t n : {333, 37}) {
      SCOPED_TRACE(n);
      const Matrix a = HermitianPositiveDefinite<T>(n, 23 + n);
      const Matrix b = RandomMatrix<T>(n, 2, 29 + n);
      const MatrixView rhs = b.view();
      absl::StatusOr<FactorizeResult> f = MultiGpuFactorize(kTwo, a.view(), Cholesky(), &rhs, 64);
      ASSERT_TRUE(f.ok()) << f.status();
      ExpectCholeskyOf<T>(a, f->l);
      ASSERT_TRUE(f->solution.has_value());
      ExpectSolves<T>(a, b, *f->solution, 16);
    }
  });
}

// Every dtype through the backend (Supports, the admission estimate, Factorize with devices = 2)
// against the same backend on one GPU: the same permutation, factors and solutions within the
// dtype's bounds. Well-conditioned inputs, so the factors themselves are close, not only their
// products.
TEST(MultiGpuFactorize, EveryDTypeEqualsOneGpusResults) {
  MATRIXD_REQUIRE_TWO_GPUS();
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  Backend& backend = **cuda;
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const int64_t n = 300;
    const Matrix b = RandomMatrix<T>(n, 3, 31);
    const MatrixView rhs = b.view();
    for (FactorizeOptions two : {Lu(), Cholesky()}) {
      SCOPED_TRACE(FactorizationName(two.kind));
      const bool lu = two.kind == FactorizationKind::kLu;
      const Matrix a = lu ? DiagonallyDominant<T>(n, 37) : HermitianPositiveDefinite<T>(n, 41);
      ASSERT_TRUE(backend.Supports(FactorizeQuery(a.view(), two, &rhs)).ok());
      // The parts and their staging alone: at least A's bytes over the two GPUs.
      EXPECT_GT(backend.FactorizeDeviceBytes(a.view(), two, &rhs), a.byte_size() / 2);
      absl::StatusOr<FactorizeResult> many = backend.Factorize(a.view(), two, &rhs, nullptr);
      ASSERT_TRUE(many.ok()) << many.status();
      FactorizeOptions one_gpu = two;
      one_gpu.devices = 1;
      absl::StatusOr<FactorizeResult> one = backend.Factorize(a.view(), one_gpu, &rhs, nullptr);
      ASSERT_TRUE(one.ok()) << one.status();
      if (lu) {
        EXPECT_EQ(many->permutation, one->permutation);
        ExpectLuOf<T>(a, *many);
        ExpectClose<T>(one->lu, many->lu, 64);
      } else {
        ExpectCholeskyOf<T>(a, many->l);
        ExpectClose<T>(one->l, many->l, 64);
      }
      ASSERT_TRUE(many->solution.has_value());
      ASSERT_TRUE(one->solution.has_value());
      ExpectSolves<T>(a, b, *many->solution, 16);
      ExpectClose<T>(*one->solution, *many->solution, 64);
    }
  });
}

TEST(MultiGpuFactorize, SingularLuNamesTheColumnAndRefusesASolveInEveryDType) {
  MATRIXD_REQUIRE_TWO_GPUS();
  ForEachFloatingType([](auto type) {
    using T = typename decltype(type)::type;
    const int64_t n = 150;
    Matrix a = RandomMatrix<T>(n, n, 9);
    auto values = a.As<T>();
    for (int64_t i = 0; i < n; ++i) values[i * n + 70] = T(0);  // column 70 is zero
    absl::StatusOr<FactorizeResult> f = MultiGpuFactorize(kTwo, a.view(), Lu(), nullptr, 64);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE(f->singular_column.has_value());
    EXPECT_EQ(*f->singular_column, 70);
    const Matrix b = RandomMatrix<T>(n, 1, 2);
    const MatrixView rhs = b.view();
    absl::StatusOr<FactorizeResult> solved = MultiGpuFactorize(kTwo, a.view(), Lu(), &rhs, 64);
    EXPECT_EQ(solved.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(solved.status().message(), HasSubstr("matrix is singular: U[70,70] = 0"));
  });
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
      ExpectLuOf<double>(a, *f);
    } else {
      ExpectCholeskyOf<double>(a, f->l);
    }
    ExpectSolves<double>(a, b, *f->solution, 16);
  }
}

// The admission estimate counts each GPU's part and staging in elements of the dtype: blocks of
// 100 of n = 1000 over 2 GPUs are 5 a GPU, plus one of staging.
TEST(MultiGpuFactorizeDeviceBytesPerGpu, PartsScaleWithTheElementSize) {
  for (const size_t size : {size_t{4}, size_t{8}, size_t{16}}) {
    SCOPED_TRACE(size);
    const uint64_t part = uint64_t{6} * 100 * 1000 * size;
    // 2 right-hand sides: one block of 2 columns and as much staging.
    const uint64_t rhs = uint64_t{2} * 2 * 1000 * size;
    EXPECT_EQ(MultiGpuFactorizeDeviceBytesPerGpu(1000, 0, 2, 100, size),
              part + 1000 * sizeof(int) + part / 10 + (uint64_t{64} << 20));
    EXPECT_EQ(MultiGpuFactorizeDeviceBytesPerGpu(1000, 2, 2, 100, size) -
                  MultiGpuFactorizeDeviceBytesPerGpu(1000, 0, 2, 100, size),
              rhs);
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

// ---- Factorizations kept on the GPUs (FactorizeOptions::keep_on_devices, kept_factorization.h)

using ::matrixd::testing::ExpectRangeReadsAsTheWhole;
using ::matrixd::testing::Kept;
using ::matrixd::testing::ReadWhole;

// Every dtype, LU and Cholesky, orders around the block (333 over blocks of 64: the last block
// short; 100: fewer blocks than 2 GPUs' worth; 37: the second GPU holds nothing; 1): a kept
// factorization returns no factor, the same permutation and singular column as the gathered one,
// reads back as the gathered factor bit for bit, and solves 3 right-hand sides to the gathered
// factorization's solution (the same getrs / potrs on the same parts).
TEST(KeptMultiGpuFactorization, EveryDTypeReadsAsTheGatheredFactorsAndSolvesAsThey) {
  MATRIXD_REQUIRE_TWO_GPUS();
  ForEachFloatingType([](auto type) {
    using T = typename decltype(type)::type;
    for (int64_t n : {333, 100, 37, 1}) {
      for (FactorizeOptions options : {Lu(), Cholesky()}) {
        SCOPED_TRACE(::testing::Message() << n << " " << FactorizationName(options.kind));
        const bool lu = options.kind == FactorizationKind::kLu;
        const Matrix a = lu ? RandomMatrix<T>(n, n, 43 + n) : HermitianPositiveDefinite<T>(n, 47);
        const Matrix b = RandomMatrix<T>(n, 3, 53 + n);
        const MatrixView rhs = b.view();
        absl::StatusOr<FactorizeResult> gathered =
            MultiGpuFactorize(kTwo, a.view(), options, &rhs, 64);
        ASSERT_TRUE(gathered.ok()) << gathered.status();
        absl::StatusOr<FactorizeResult> kept =
            MultiGpuFactorize(kTwo, a.view(), Kept(options), nullptr, 64);
        ASSERT_TRUE(kept.ok()) << kept.status();
        ASSERT_NE(kept->kept, nullptr);
        EXPECT_TRUE(kept->lu.empty());
        EXPECT_TRUE(kept->l.empty());
        EXPECT_EQ(kept->kept->kind(), options.kind);
        EXPECT_EQ(kept->permutation, gathered->permutation);
        EXPECT_EQ(kept->singular_column, gathered->singular_column);
        const Matrix& factor = lu ? gathered->lu : gathered->l;
        const Matrix read = ReadWhole(*kept->kept);
        ASSERT_EQ(read.byte_size(), factor.byte_size());
        EXPECT_EQ(std::memcmp(read.bytes(), factor.bytes(), read.byte_size()), 0);
        absl::StatusOr<Matrix> x = kept->kept->Solve(rhs);
        ASSERT_TRUE(x.ok()) << x.status();
        ASSERT_TRUE(gathered->solution.has_value());
        ExpectClose<T>(*gathered->solution, *x, 4);
        ExpectSolves<T>(a, b, *x, lu ? 64 : 16);
        // Solving again gives the same X: the kept parts are not overwritten.
        absl::StatusOr<Matrix> again = kept->kept->Solve(rhs);
        ASSERT_TRUE(again.ok()) << again.status();
        EXPECT_EQ(std::memcmp(again->bytes(), x->bytes(), x->byte_size()), 0);
      }
    }
  });
}

// Read of a range that starts and ends inside rows (a download chunk) gives those bytes of the
// factor; Cholesky's come with zeros above the diagonal.
TEST(KeptMultiGpuFactorization, ReadOfARangeInsideRowsGivesThoseBytes) {
  MATRIXD_REQUIRE_TWO_GPUS();
  const int64_t n = 300;
  for (FactorizeOptions options : {Lu(), Cholesky()}) {
    const Matrix a = HermitianPositiveDefinite<double>(n, 59);
    absl::StatusOr<FactorizeResult> kept =
        MultiGpuFactorize(kTwo, a.view(), Kept(options), nullptr, 64);
    ASSERT_TRUE(kept.ok()) << kept.status();
    ExpectRangeReadsAsTheWhole(*kept->kept, options.kind);
  }
}

// A kept LU of a matrix with a zero column names the column as the gathered one does, from the
// diagonal read off the GPUs.
TEST(KeptMultiGpuFactorization, SingularLuNamesTheColumn) {
  MATRIXD_REQUIRE_TWO_GPUS();
  const int64_t n = 150;
  Matrix a = RandomMatrix<double>(n, n, 9);
  for (int64_t i = 0; i < n; ++i) a.As<double>()[i * n + 70] = 0.0;
  absl::StatusOr<FactorizeResult> kept = MultiGpuFactorize(kTwo, a.view(), Kept(Lu()), nullptr, 64);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE(kept->singular_column.has_value());
  EXPECT_EQ(*kept->singular_column, 70);
}

// Its parts: one per GPU (backend devices 0 and 1), each at least its columns of A, and their
// memory given back when it goes.
TEST(KeptMultiGpuFactorization, PartsCountEachGpusColumnsAndAreFreedWithIt) {
  MATRIXD_REQUIRE_TWO_GPUS();
  const int64_t n = 2048;
  const Matrix a = DiagonallyDominant<double>(n, 61);
  size_t free_before = 0;
  size_t total = 0;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  absl::StatusOr<FactorizeResult> kept =
      MultiGpuFactorize(kTwo, a.view(), Kept(Lu()), nullptr, 512);
  ASSERT_TRUE(kept.ok()) << kept.status();
  const std::vector<DevicePart> parts = kept->kept->Parts();
  ASSERT_EQ(parts.size(), 2u);
  uint64_t sum = 0;
  for (int g = 0; g < 2; ++g) {
    EXPECT_EQ(parts[g].device_index, g);
    EXPECT_GE(parts[g].bytes, a.byte_size() / 2);
    sum += parts[g].bytes;
  }
  EXPECT_EQ(kept->kept->device_bytes(), sum);
  EXPECT_EQ(kept->kept->device_index(), 0);
  kept->kept.reset();
  size_t free_after = 0;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  // cusolverMg's handle may keep a little; the part (16 MiB) is back.
  EXPECT_GE(free_after + (uint64_t{4} << 20), free_before);
}

// Factorize with keep_on_devices through `backend`, then Solve with the kept view
// (FactorizationView::kept), against one GPU's kept factorization of a well-conditioned T
// matrix; a transposed solve is refused naming transpose, a wrong right-hand side naming rhs.
template <typename T>
void ExpectKeptSolvesAsOneGpus(Backend& backend, const FactorizeOptions& options) {
  const int64_t n = 700;
  const Matrix b = RandomMatrix<T>(n, 5, 67);
  const bool lu = options.kind == FactorizationKind::kLu;
  const Matrix a = lu ? DiagonallyDominant<T>(n, 71) : HermitianPositiveDefinite<T>(n, 73);
  absl::StatusOr<FactorizeResult> many =
      backend.Factorize(a.view(), Kept(options), nullptr, nullptr);
  ASSERT_TRUE(many.ok()) << many.status();
  ASSERT_NE(many->kept, nullptr);
  FactorizationView kept;
  kept.kind = options.kind;
  kept.factor = many->kept->view();
  kept.kept = many->kept.get();
  EXPECT_GT(backend.SolveDeviceBytes(kept, b.view(), {}), b.byte_size() / 2);
  absl::StatusOr<SolveResult> x = backend.Solve(kept, b.view(), {}, nullptr);
  ASSERT_TRUE(x.ok()) << x.status();
  FactorizeOptions one_gpu = options;
  one_gpu.devices = 1;
  absl::StatusOr<FactorizeResult> one = backend.Factorize(a.view(), one_gpu, nullptr, nullptr);
  ASSERT_TRUE(one.ok()) << one.status();
  absl::StatusOr<SolveResult> y = backend.Solve(FactorizationOf(*one), b.view(), {}, nullptr);
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectClose<T>(y->x, x->x, 64);
  ExpectSolves<T>(a, b, x->x, 16);
  absl::StatusOr<SolveResult> transposed =
      backend.Solve(kept, b.view(), {.transpose = SolveTranspose::kTranspose}, nullptr);
  EXPECT_EQ(transposed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(transposed.status().message(), HasSubstr("transpose"));
  const Matrix short_b = RandomMatrix<T>(n - 1, 1, 79);
  absl::StatusOr<SolveResult> wrong = backend.Solve(kept, short_b.view(), {}, nullptr);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("rhs"));
}

// Through the backend, every dtype, LU and Cholesky: ExpectKeptSolvesAsOneGpus.
TEST(KeptMultiGpuFactorization, TheBackendSolvesAsOneGpusKeptFactorization) {
  MATRIXD_REQUIRE_TWO_GPUS();
  absl::StatusOr<std::unique_ptr<Backend>> made = MakeBackend("cuda", {});
  ASSERT_TRUE(made.ok()) << made.status();
  const std::unique_ptr<Backend> backend = *std::move(made);
  for (const FactorizeOptions& options : {Lu(), Cholesky()}) {
    SCOPED_TRACE(FactorizationName(options.kind));
    ForEachFloatingType([&](auto type) {
      ExpectKeptSolvesAsOneGpus<typename decltype(type)::type>(*backend, options);
    });
  }
}

// A solve's admission estimate over the kept factorization's GPUs: B's part with its staging
// and the workspace allowance, growing by B's columns only.
TEST(MultiGpuSolveDeviceBytesPerGpu, GrowsWithTheRightHandSidesOnly) {
  const uint64_t one = MultiGpuSolveDeviceBytesPerGpu(1000, 1, 2, 100, 8);
  const uint64_t three = MultiGpuSolveDeviceBytesPerGpu(1000, 3, 2, 100, 8);
  // 1 and 3 columns: one block each, plus as much staging.
  EXPECT_EQ(three - one, uint64_t{2} * 2 * 1000 * 8);
  EXPECT_GE(one, uint64_t{64} << 20);
}

}  // namespace
}  // namespace matrixd::multi_gpu
