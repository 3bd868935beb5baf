// A factorization kept on the one GPU that computed it (Factorize with keep_on_devices on the CUDA
// backend: core/cuda/kept_factorization.h): no factor comes back, the permutation and singular
// column do; Read gives the factor the plain Factorize downloads, bit for bit (LU's packed factors,
// Cholesky's L with zeros above the diagonal); Solve through the backend (its parts read in place,
// transposes too) and by its own Solve equals the plain factorization's solve; its device memory
// is one part on device 0, given back when it goes. QR, batches and refinement ignore
// keep_on_devices. Every case skips without a CUDA device.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/device_factorization.h"
#include "core/factorization.h"
#include "core/make_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"
#include "tests/core/kept_factorization_support.h"

#ifdef MATRIXD_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace matrixd {
namespace {

using ::matrixd::testing::DistanceNorm;
using ::matrixd::testing::Eps;
using ::matrixd::testing::ExpectRangeReadsAsTheWhole;
using ::matrixd::testing::ExpectSolves;
using ::matrixd::testing::ForEachFloatingType;
using ::matrixd::testing::HermitianPositiveDefinite;
using ::matrixd::testing::Kept;
using ::matrixd::testing::Norm;
using ::matrixd::testing::RandomMatrix;
using ::matrixd::testing::ReadWhole;
using ::matrixd::testing::Widen;
using ::testing::HasSubstr;

class CudaKeptFactorization : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaDeviceAvailable()) GTEST_SKIP() << "no CUDA device here: CUDA case skipped";
    // Every factorization on the device, so that the plain one is cuSOLVER's too.
    absl::StatusOr<std::unique_ptr<Backend>> made =
        MakeBackend("cuda", {.host_max_orders = {.determinant = 0, .factorize = 0}});
    ASSERT_TRUE(made.ok()) << made.status();
    backend_ = *std::move(made);
  }

  Backend& backend() { return *backend_; }

  std::unique_ptr<Backend> backend_;
};

FactorizeOptions Lu() { return {.kind = FactorizationKind::kLu}; }
FactorizeOptions Cholesky() { return {.kind = FactorizationKind::kCholesky}; }

// The kept factorization as a Solve takes it (FactorizationView::kept).
FactorizationView ViewOf(const FactorizeResult& kept) {
  FactorizationView f;
  f.kind = kept.kind;
  f.factor = kept.kept->view();
  f.singular_column = kept.singular_column.value_or(-1);
  f.kept = kept.kept.get();
  return f;
}

// ||x - y||_F <= slack n eps ||y||_F: two solves with the same factors.
template <typename T>
void ExpectClose(const Matrix& x, const Matrix& y, long double slack) {
  ASSERT_EQ(x.dtype(), y.dtype());
  ASSERT_EQ(x.rows(), y.rows());
  ASSERT_EQ(x.cols(), y.cols());
  const auto wy = Widen<T>(y);
  EXPECT_LE(DistanceNorm(Widen<T>(x), wy), slack * x.rows() * Eps<T>() * Norm(wy));
}

// Every dtype, LU and Cholesky, n = 1, 37 and 300: the kept factorization against the plain one.
TEST_F(CudaKeptFactorization, ReadsAsTheDownloadedFactorAndSolvesAsIt) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const int64_t n : {1, 37, 300}) {
      for (const FactorizeOptions& options : {Lu(), Cholesky()}) {
        SCOPED_TRACE(::testing::Message() << n << " " << FactorizationName(options.kind));
        const bool lu = options.kind == FactorizationKind::kLu;
        const Matrix a = lu ? RandomMatrix<T>(n, n, 43 + n) : HermitianPositiveDefinite<T>(n, 47);
        const Matrix b = RandomMatrix<T>(n, 3, 53 + n);
        absl::StatusOr<FactorizeResult> plain =
            backend().Factorize(a.view(), options, nullptr, nullptr);
        ASSERT_TRUE(plain.ok()) << plain.status();
        EXPECT_EQ(plain->kept, nullptr);
        absl::StatusOr<FactorizeResult> kept =
            backend().Factorize(a.view(), Kept(options), nullptr, nullptr);
        ASSERT_TRUE(kept.ok()) << kept.status();
        ASSERT_NE(kept->kept, nullptr);
        EXPECT_TRUE(kept->lu.empty());
        EXPECT_TRUE(kept->l.empty());
        EXPECT_EQ(kept->kept->kind(), options.kind);
        EXPECT_TRUE(kept->kept->whole_on_one_device());
        EXPECT_EQ(kept->permutation, plain->permutation);
        EXPECT_EQ(kept->singular_column, plain->singular_column);

        const Matrix& factor = lu ? plain->lu : plain->l;
        const Matrix read = ReadWhole(*kept->kept);
        ASSERT_EQ(read.byte_size(), factor.byte_size());
        EXPECT_EQ(std::memcmp(read.bytes(), factor.bytes(), read.byte_size()), 0);

        absl::StatusOr<SolveResult> want =
            backend().Solve(FactorizationOf(*plain), b.view(), {}, nullptr);
        ASSERT_TRUE(want.ok()) << want.status();
        absl::StatusOr<SolveResult> x = backend().Solve(ViewOf(*kept), b.view(), {}, nullptr);
        ASSERT_TRUE(x.ok()) << x.status();
        ExpectClose<T>(x->x, want->x, 4);
        ExpectSolves<T>(a, b, x->x, lu ? 64 : 16);
        absl::StatusOr<Matrix> own = kept->kept->Solve(b.view());
        ASSERT_TRUE(own.ok()) << own.status();
        ExpectClose<T>(*own, want->x, 4);
        if (lu) {
          // A transposed solve reads the same parts in place.
          const SolveOptions transposed = {.transpose = SolveTranspose::kConjugateTranspose};
          absl::StatusOr<SolveResult> want_t =
              backend().Solve(FactorizationOf(*plain), b.view(), transposed, nullptr);
          ASSERT_TRUE(want_t.ok()) << want_t.status();
          absl::StatusOr<SolveResult> x_t =
              backend().Solve(ViewOf(*kept), b.view(), transposed, nullptr);
          ASSERT_TRUE(x_t.ok()) << x_t.status();
          ExpectClose<T>(x_t->x, want_t->x, 4);
        }
      }
    }
  });
}

// A range that starts and ends inside rows (a download chunk) gives those bytes of the factor;
// Cholesky's come with zeros above the diagonal.
TEST_F(CudaKeptFactorization, ReadOfARangeInsideRowsGivesThoseBytes) {
  const int64_t n = 300;
  const Matrix a = HermitianPositiveDefinite<double>(n, 59);
  for (const FactorizeOptions& options : {Lu(), Cholesky()}) {
    absl::StatusOr<FactorizeResult> kept =
        backend().Factorize(a.view(), Kept(options), nullptr, nullptr);
    ASSERT_TRUE(kept.ok()) << kept.status();
    const Matrix whole = ExpectRangeReadsAsTheWhole(*kept->kept, options.kind);
    std::vector<std::byte> past(16);
    EXPECT_EQ(kept->kept->Read(whole.byte_size() - 8, past).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(kept->kept->Write(0, past).code(), absl::StatusCode::kFailedPrecondition);
  }
}

// A kept LU of a matrix with a zero column: kept, the column named as the plain one names it, the
// factor as the plain one's; a solve is refused naming the pivot.
TEST_F(CudaKeptFactorization, SingularLuIsKeptAndNamesTheColumn) {
  const int64_t n = 150;
  Matrix a = RandomMatrix<double>(n, n, 9);
  for (int64_t i = 0; i < n; ++i) a.As<double>()[i * n + 70] = 0.0;
  absl::StatusOr<FactorizeResult> plain = backend().Factorize(a.view(), Lu(), nullptr, nullptr);
  ASSERT_TRUE(plain.ok()) << plain.status();
  absl::StatusOr<FactorizeResult> kept =
      backend().Factorize(a.view(), Kept(Lu()), nullptr, nullptr);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_NE(kept->kept, nullptr);
  ASSERT_TRUE(kept->singular_column.has_value());
  EXPECT_EQ(kept->singular_column, plain->singular_column);
  const Matrix read = ReadWhole(*kept->kept);
  EXPECT_EQ(std::memcmp(read.bytes(), plain->lu.bytes(), read.byte_size()), 0);
  const Matrix b = RandomMatrix<double>(n, 1, 3);
  absl::StatusOr<SolveResult> x = backend().Solve(ViewOf(*kept), b.view(), {}, nullptr);
  EXPECT_EQ(x.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(x.status().message(), HasSubstr("singular"));
}

// With a right-hand side the solution still comes back, as without keep_on_devices.
TEST_F(CudaKeptFactorization, ARightHandSideStillComesBack) {
  const int64_t n = 64;
  const Matrix a = HermitianPositiveDefinite<double>(n, 5);
  const Matrix b = RandomMatrix<double>(n, 2, 6);
  const MatrixView rhs = b.view();
  for (const FactorizeOptions& options : {Lu(), Cholesky()}) {
    absl::StatusOr<FactorizeResult> plain = backend().Factorize(a.view(), options, &rhs, nullptr);
    ASSERT_TRUE(plain.ok()) << plain.status();
    absl::StatusOr<FactorizeResult> kept =
        backend().Factorize(a.view(), Kept(options), &rhs, nullptr);
    ASSERT_TRUE(kept.ok()) << kept.status();
    ASSERT_NE(kept->kept, nullptr);
    ASSERT_TRUE(kept->solution.has_value());
    ExpectClose<double>(*kept->solution, *plain->solution, 4);
  }
}

// One part, on device 0: the factor and LU's permutation; the pool's bytes come back when it goes.
TEST_F(CudaKeptFactorization, OnePartOnItsDeviceFreedWithIt) {
  const int64_t n = 1024;
  const Matrix a = RandomMatrix<double>(n, n, 61);
  // A plain factorization first, so that whatever the first one sets up is there before.
  ASSERT_TRUE(backend().Factorize(a.view(), Lu(), nullptr, nullptr).ok());
  const uint64_t used_before = backend().DeviceMemory().front().used;
  for (const FactorizeOptions& options : {Lu(), Cholesky()}) {
    const Matrix m =
        options.kind == FactorizationKind::kLu ? a : HermitianPositiveDefinite<double>(n, 7);
    absl::StatusOr<FactorizeResult> kept =
        backend().Factorize(m.view(), Kept(options), nullptr, nullptr);
    ASSERT_TRUE(kept.ok()) << kept.status();
    const uint64_t want = a.byte_size() + (options.kind == FactorizationKind::kLu ? 8 * n : 0);
    const std::vector<DevicePart> parts = kept->kept->Parts();
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_EQ(parts[0].device_index, 0);
    EXPECT_EQ(parts[0].bytes, want);
    EXPECT_EQ(kept->kept->device_bytes(), want);
    EXPECT_EQ(kept->kept->device_index(), 0);
    EXPECT_GE(backend().DeviceMemory().front().used, used_before + want);
    kept->kept.reset();
#ifdef MATRIXD_HAVE_CUDA
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the stream-ordered frees have run
#endif
    EXPECT_EQ(backend().DeviceMemory().front().used, used_before);
  }
}

// QR, a batch and a refined solve come back to host memory as without keep_on_devices.
TEST_F(CudaKeptFactorization, QrBatchesAndRefinementComeBackToTheHost) {
  const Matrix a = HermitianPositiveDefinite<double>(32, 13);
  const Matrix stacked = RandomMatrix<double>(32, 16, 15);  // two 16 x 16 matrices
  const Matrix b = RandomMatrix<double>(32, 1, 14);
  const MatrixView rhs = b.view();
  FactorizeOptions qr = Kept({.kind = FactorizationKind::kQr});
  FactorizeOptions batch = Kept(Lu());
  batch.batch_count = 2;
  FactorizeOptions refined = Kept(Lu());
  refined.refine.enabled = true;
  for (const FactorizeOptions& options : {qr, batch, refined}) {
    const MatrixView input = options.batch_count > 0 ? stacked.view() : a.view();
    absl::StatusOr<FactorizeResult> result =
        backend().Factorize(input, options, options.refine.enabled ? &rhs : nullptr, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->kept, nullptr);
    if (options.kind == FactorizationKind::kQr) {
      EXPECT_FALSE(result->q.empty());
    } else {
      EXPECT_FALSE(result->lu.empty());
    }
  }
}

}  // namespace
}  // namespace matrixd
