// Factorize with keep_result on one GPU of a CUDA server: the factorization stays where cuSOLVER
// computed it (core/cuda/kept_factorization.h), no factor in the response, one single-device
// handle; Solve by that handle (plain and transposed) equals Solve by the handle of the same
// factorization kept through the host (also_inline: today's download and upload), Download gives
// the same factor bytes, a singular LU is refused naming the pivot, and Release gives the bytes
// back. Every floating dtype, LU and Cholesky, n = 1 and 300. Skips without a CUDA device (the
// plumbing without a GPU: tests/server/kept_factorization_test.cc).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/remote_matrix.h"
#include "core/make_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/server/multi_gpu_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

class OneGpuKeptFactorizationTest : public CudaServerTest {
 protected:
  void SetUp() override {
    if (!CudaDeviceAvailable()) GTEST_SKIP() << "no CUDA device here: CUDA case skipped";
    absl::StatusOr<std::unique_ptr<Backend>> cuda =
        MakeBackend("cuda", {.host_max_orders = {.determinant = 0, .factorize = 0}});
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    StartServer(*std::move(cuda));
  }

  // The factorization of the resident `a`, kept; with also_inline, through the host as before.
  v1::FactorizeResponse Keep(const std::string& a, v1::FactorizationKind kind, bool also_inline) {
    v1::FactorizeRequest request;
    request.mutable_matrix_ref()->set_handle(a);
    request.set_kind(kind);
    request.mutable_result_options()->set_keep_result(true);
    request.mutable_result_options()->set_also_inline(also_inline);
    absl::StatusOr<v1::FactorizeResponse> response = client_->Factorize(request);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return {};
    const v1::ResidentMatrix& kept = response->kept().at("factorization");
    EXPECT_EQ(kept.layout(), v1::RESIDENT_LAYOUT_SINGLE_DEVICE);
    EXPECT_EQ(kept.factorization_kind(), kind);
    return *std::move(response);
  }

  absl::StatusOr<v1::SolveResponse> Solve(const std::string& factorization, const v1::Matrix& rhs,
                                          v1::SolveTranspose transpose) {
    v1::SolveRequest request;
    request.mutable_factorization()->set_handle(factorization);
    *request.mutable_rhs() = rhs;
    request.set_transpose(transpose);
    return client_->Solve(request);
  }

  std::string Upload(v1::Matrix m) {
    absl::StatusOr<RemoteMatrix> uploaded = client_->Upload(m);
    EXPECT_TRUE(uploaded.ok()) << uploaded.status();
    return uploaded.ok() ? uploaded->Detach() : "";
  }
};

bool IsSingle(v1::DType dtype) {
  return dtype == v1::DTYPE_FLOAT32 || dtype == v1::DTYPE_COMPLEX64;
}
bool IsComplex(v1::DType dtype) {
  return dtype == v1::DTYPE_COMPLEX64 || dtype == v1::DTYPE_COMPLEX128;
}

// An n x n matrix of `dtype` from `value(index)` per real scalar, row-major.
template <typename Value>
v1::Matrix MakeOf(int64_t rows, int64_t cols, v1::DType dtype, Value value) {
  const size_t scalars = static_cast<size_t>(rows * cols) * (IsComplex(dtype) ? 2 : 1);
  const size_t scalar = IsSingle(dtype) ? sizeof(float) : sizeof(double);
  std::string bytes(scalars * scalar, '\0');
  for (size_t i = 0; i < scalars; ++i) {
    const double v = value(i);
    if (IsSingle(dtype)) {
      const auto f = static_cast<float>(v);
      std::memcpy(bytes.data() + i * scalar, &f, scalar);
    } else {
      std::memcpy(bytes.data() + i * scalar, &v, scalar);
    }
  }
  v1::Matrix m;
  m.set_rows(rows);
  m.set_cols(cols);
  m.set_dtype(dtype);
  m.set_data(std::move(bytes));
  return m;
}

// (R + R^H) / 2 + n I with R in [-1, 1]: Hermitian, strictly diagonally dominant with a positive
// diagonal, so positive definite (Cholesky) and well conditioned (LU).
v1::Matrix Hermitian(int64_t n, v1::DType dtype) {
  const int parts = IsComplex(dtype) ? 2 : 1;
  return MakeOf(n, n, dtype, [&](size_t s) {
    const int64_t e = static_cast<int64_t>(s) / parts;
    const int part = static_cast<int>(s % parts);
    const int64_t i = e / n;
    const int64_t j = e % n;
    if (i == j) return part == 0 ? static_cast<double>(n) : 0.0;
    const int64_t lo = std::min(i, j);
    const int64_t hi = std::max(i, j);
    if (part == 0) return std::sin(0.1 * static_cast<double>(hi * n + lo));
    const double im = std::cos(0.3 * static_cast<double>(hi + 3 * lo));
    return i > j ? im : -im;
  });
}

// max |x - y| / max |y| over the real scalars of two matrices of one dtype.
double RelativeDifference(const v1::Matrix& x, const v1::Matrix& y) {
  EXPECT_EQ(x.data().size(), y.data().size());
  const bool single = IsSingle(x.dtype());
  const size_t scalar = single ? sizeof(float) : sizeof(double);
  const size_t count = std::min(x.data().size(), y.data().size()) / scalar;
  double worst = 0.0;
  double largest = 0.0;
  for (size_t i = 0; i < count; ++i) {
    double a = 0.0;
    double b = 0.0;
    if (single) {
      float fa = 0.0f;
      float fb = 0.0f;
      std::memcpy(&fa, x.data().data() + i * scalar, scalar);
      std::memcpy(&fb, y.data().data() + i * scalar, scalar);
      a = fa;
      b = fb;
    } else {
      std::memcpy(&a, x.data().data() + i * scalar, scalar);
      std::memcpy(&b, y.data().data() + i * scalar, scalar);
    }
    worst = std::max(worst, std::abs(a - b));
    largest = std::max(largest, std::abs(b));
  }
  return largest > 0.0 ? worst / largest : worst;
}

TEST_F(OneGpuKeptFactorizationTest, SolvesAndDownloadsAsTheFactorizationKeptThroughTheHost) {
  for (const v1::DType dtype :
       {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64, v1::DTYPE_COMPLEX64, v1::DTYPE_COMPLEX128}) {
    for (const v1::FactorizationKind kind :
         {v1::FACTORIZATION_KIND_LU, v1::FACTORIZATION_KIND_CHOLESKY}) {
      for (const int64_t n : {300, 1}) {
        SCOPED_TRACE(::testing::Message() << v1::DType_Name(dtype) << " "
                                          << v1::FactorizationKind_Name(kind) << " n=" << n);
        const bool lu = kind == v1::FACTORIZATION_KIND_LU;
        const std::string a = Upload(Hermitian(n, dtype));
        ASSERT_FALSE(a.empty());
        const uint64_t before = ResidentBytes();
        const v1::FactorizeResponse kept = Keep(a, kind, /*also_inline=*/false);
        const v1::FactorizeResponse through_host = Keep(a, kind, /*also_inline=*/true);
        ASSERT_TRUE(kept.kept().contains("factorization"));
        ASSERT_TRUE(through_host.kept().contains("factorization"));
        EXPECT_FALSE(kept.has_lu());
        EXPECT_FALSE(kept.has_l());
        const v1::ResidentMatrix& handle = kept.kept().at("factorization");
        EXPECT_EQ(kept.kept().at(lu ? "lu" : "l").handle(), handle.handle());
        const uint64_t element = (IsSingle(dtype) ? 4 : 8) * (IsComplex(dtype) ? 2 : 1);
        EXPECT_EQ(handle.bytes(), static_cast<uint64_t>(n * n) * element + (lu ? 8 * n : 0));
        if (lu) {
          EXPECT_EQ(std::vector<int64_t>(kept.permutation().begin(), kept.permutation().end()),
                    std::vector<int64_t>(through_host.permutation().begin(),
                                         through_host.permutation().end()));
        }

        absl::StatusOr<v1::Matrix> factor = client_->Download(handle.handle());
        ASSERT_TRUE(factor.ok()) << factor.status();
        EXPECT_EQ(factor->data(), (lu ? through_host.lu() : through_host.l()).data());

        const v1::Matrix b = MakeOf(
            n, 3, dtype, [](size_t i) { return std::sin(0.37 * static_cast<double>(i) + 1.0); });
        const double tight = IsSingle(dtype) ? 1e-5 : 1e-13;
        for (const v1::SolveTranspose transpose :
             {v1::SOLVE_TRANSPOSE_NONE, v1::SOLVE_TRANSPOSE_CONJUGATE}) {
          if (!lu && transpose != v1::SOLVE_TRANSPOSE_NONE) continue;
          absl::StatusOr<v1::SolveResponse> x = Solve(handle.handle(), b, transpose);
          ASSERT_TRUE(x.ok()) << x.status();
          absl::StatusOr<v1::SolveResponse> y =
              Solve(through_host.kept().at("factorization").handle(), b, transpose);
          ASSERT_TRUE(y.ok()) << y.status();
          EXPECT_LE(RelativeDifference(x->solution(), y->solution()), tight);
        }
        ASSERT_TRUE(client_->Release(handle.handle()).ok());
        ASSERT_TRUE(client_->Release(through_host.kept().at("factorization").handle()).ok());
        EXPECT_EQ(ResidentBytes(), before);
        ASSERT_TRUE(client_->Release(a).ok());
      }
    }
  }
}

TEST_F(OneGpuKeptFactorizationTest, ASingularLuIsKeptAndItsSolveRefusedNamingThePivot) {
  const int64_t n = 100;
  // Column 40 is zero.
  v1::Matrix a = MakeOf(n, n, v1::DTYPE_FLOAT64, [&](size_t i) {
    return static_cast<int64_t>(i) % n == 40 ? 0.0 : std::sin(0.7 * static_cast<double>(i));
  });
  const std::string handle = Upload(std::move(a));
  ASSERT_FALSE(handle.empty());
  const v1::FactorizeResponse kept = Keep(handle, v1::FACTORIZATION_KIND_LU, false);
  ASSERT_TRUE(kept.kept().contains("factorization"));
  const v1::Matrix b = MakeOf(n, 1, v1::DTYPE_FLOAT64, [](size_t) { return 1.0; });
  absl::StatusOr<v1::SolveResponse> x =
      Solve(kept.kept().at("factorization").handle(), b, v1::SOLVE_TRANSPOSE_NONE);
  EXPECT_EQ(x.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(x.status().message(), HasSubstr("singular"));
}

}  // namespace
}  // namespace matrixd::server::testing
