// Factorize over every GPU with keep_result on a CUDA server (the factorization kept distributed
// on the GPUs, core/multi_gpu/kept_factorization.h), then Solve by its handle: X equals the
// single-GPU kept factorization's within the dtype's bounds, for LU and Cholesky, every floating
// dtype, orders not a multiple of the block and smaller than the GPUs' blocks, several
// right-hand sides; a distributed resident operand (Generate with layout DISTRIBUTED) too;
// Release gives every GPU its memory back. Skips without a CUDA server of 2 GPUs or more (the
// plumbing without a GPU: tests/server/kept_factorization_test.cc).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/remote_matrix.h"
#include "gtest/gtest.h"
#include "tests/server/multi_gpu_server.h"

namespace matrixd::server::testing {
namespace {

class DistributedFactorizationRpcTest : public MultiGpuServerTest {
 protected:
  // A generated n x n RANDOM matrix of `layout`.
  std::string Generate(int64_t n, v1::DType dtype, v1::ResidentLayout layout) {
    v1::GenerateRequest request;
    request.set_rows(n);
    request.set_cols(n);
    request.set_dtype(dtype);
    request.set_generator(v1::GENERATOR_RANDOM);
    request.set_seed(static_cast<uint64_t>(n) + 7);
    request.set_layout(layout);
    absl::StatusOr<v1::ResidentMatrix> made = client_->Generate(request);
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? made->handle() : "";
  }

  // (R + R^H) / 2 + n I uploaded, R with entries in [-1, 1]: Hermitian and strictly diagonally
  // dominant with a positive diagonal, so positive definite (Cholesky) and well conditioned (LU).
  std::string UploadHermitian(int64_t n, v1::DType dtype) {
    const bool complex = dtype == v1::DTYPE_COMPLEX64 || dtype == v1::DTYPE_COMPLEX128;
    const bool single = dtype == v1::DTYPE_FLOAT32 || dtype == v1::DTYPE_COMPLEX64;
    const int parts = complex ? 2 : 1;
    const size_t scalar = single ? sizeof(float) : sizeof(double);
    std::string bytes(static_cast<size_t>(n * n * parts) * scalar, '\0');
    const auto put = [&](int64_t i, int64_t j, int part, double value) {
      const size_t at = (static_cast<size_t>(i * n + j) * parts + part) * scalar;
      if (single) {
        const auto f = static_cast<float>(value);
        std::memcpy(bytes.data() + at, &f, sizeof(f));
      } else {
        std::memcpy(bytes.data() + at, &value, sizeof(value));
      }
    };
    for (int64_t i = 0; i < n; ++i) {
      put(i, i, 0, static_cast<double>(n));
      for (int64_t j = 0; j < i; ++j) {
        const double re = std::sin(0.1 * static_cast<double>(i * n + j));
        put(i, j, 0, re);
        put(j, i, 0, re);
        if (complex) {
          const double im = std::cos(0.3 * static_cast<double>(i + 3 * j));
          put(i, j, 1, im);
          put(j, i, 1, -im);
        }
      }
    }
    v1::Matrix m;
    m.set_rows(n);
    m.set_cols(n);
    m.set_dtype(dtype);
    m.set_data(std::move(bytes));
    absl::StatusOr<RemoteMatrix> uploaded = client_->Upload(m);
    EXPECT_TRUE(uploaded.ok()) << uploaded.status();
    return uploaded.ok() ? uploaded->Detach() : "";
  }

  // The kept factorization's handle of `a` over `devices` GPUs.
  std::string KeepFactorization(const std::string& a, v1::FactorizationKind kind, int devices,
                                v1::ResidentLayout want) {
    v1::FactorizeRequest request;
    request.mutable_matrix_ref()->set_handle(a);
    request.set_kind(kind);
    request.set_devices(devices);
    request.mutable_result_options()->set_keep_result(true);
    absl::StatusOr<v1::FactorizeResponse> response = client_->Factorize(request);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return "";
    EXPECT_FALSE(response->has_lu());
    EXPECT_FALSE(response->has_l());
    const v1::ResidentMatrix& kept = response->kept().at("factorization");
    EXPECT_EQ(kept.layout(), want);
    EXPECT_EQ(kept.factorization_kind(), kind);
    return kept.handle();
  }

  v1::Matrix Solve(const std::string& factorization, const v1::Matrix& rhs) {
    v1::SolveRequest request;
    request.mutable_factorization()->set_handle(factorization);
    *request.mutable_rhs() = rhs;
    absl::StatusOr<v1::SolveResponse> response = client_->Solve(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? response->solution() : v1::Matrix();
  }
};

// max |x - y| / max |y| over the entries of two solutions of one dtype.
double RelativeDifference(const v1::Matrix& x, const v1::Matrix& y) {
  EXPECT_EQ(x.data().size(), y.data().size());
  const bool single = x.dtype() == v1::DTYPE_FLOAT32 || x.dtype() == v1::DTYPE_COMPLEX64;
  const size_t count = x.data().size() / (single ? sizeof(float) : sizeof(double));
  double worst = 0.0;
  double largest = 0.0;
  for (size_t i = 0; i < count && x.data().size() == y.data().size(); ++i) {
    double a = 0.0;
    double b = 0.0;
    if (single) {
      float fa = 0.0f;
      float fb = 0.0f;
      std::memcpy(&fa, x.data().data() + i * sizeof(float), sizeof(float));
      std::memcpy(&fb, y.data().data() + i * sizeof(float), sizeof(float));
      a = fa;
      b = fb;
    } else {
      std::memcpy(&a, x.data().data() + i * sizeof(double), sizeof(double));
      std::memcpy(&b, y.data().data() + i * sizeof(double), sizeof(double));
    }
    worst = std::max(worst, std::abs(a - b));
    largest = std::max(largest, std::abs(b));
  }
  return largest > 0.0 ? worst / largest : worst;
}

v1::Matrix RandomRhs(int64_t n, int64_t cols, v1::DType dtype) {
  const bool complex = dtype == v1::DTYPE_COMPLEX64 || dtype == v1::DTYPE_COMPLEX128;
  const bool single = dtype == v1::DTYPE_FLOAT32 || dtype == v1::DTYPE_COMPLEX64;
  const size_t count = static_cast<size_t>(n * cols) * (complex ? 2 : 1);
  v1::Matrix m;
  m.set_rows(n);
  m.set_cols(cols);
  m.set_dtype(dtype);
  std::string bytes(count * (single ? sizeof(float) : sizeof(double)), '\0');
  for (size_t i = 0; i < count; ++i) {
    const double value = std::sin(0.37 * static_cast<double>(i) + 1.0);
    if (single) {
      const auto f = static_cast<float>(value);
      std::memcpy(bytes.data() + i * sizeof(float), &f, sizeof(float));
    } else {
      std::memcpy(bytes.data() + i * sizeof(double), &value, sizeof(double));
    }
  }
  m.set_data(bytes);
  return m;
}

// Every floating dtype, LU and Cholesky, n = 1100 (not a multiple of 512) and n = 300 (fewer
// blocks than GPUs' worth), 3 right-hand sides: the solve by the kept distributed factorization
// equals the one by a single-GPU kept factorization of the same matrix; releasing it gives its
// bytes back.
TEST_F(DistributedFactorizationRpcTest, EveryDTypeSolvesAsTheSingleGpuKeptFactorization) {
  for (const v1::DType dtype :
       {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64, v1::DTYPE_COMPLEX64, v1::DTYPE_COMPLEX128}) {
    for (const v1::FactorizationKind kind :
         {v1::FACTORIZATION_KIND_LU, v1::FACTORIZATION_KIND_CHOLESKY}) {
      for (const int64_t n : {1100, 300}) {
        SCOPED_TRACE(::testing::Message() << v1::DType_Name(dtype) << " "
                                          << v1::FactorizationKind_Name(kind) << " n=" << n);
        const std::string a = UploadHermitian(n, dtype);
        ASSERT_FALSE(a.empty());
        const uint64_t before = ResidentBytes();
        const std::string many = KeepFactorization(a, kind, gpus_, v1::RESIDENT_LAYOUT_DISTRIBUTED);
        const std::string one = KeepFactorization(a, kind, 1, v1::RESIDENT_LAYOUT_SINGLE_DEVICE);
        ASSERT_FALSE(many.empty() || one.empty());
        const v1::Matrix b = RandomRhs(n, 3, dtype);
        const v1::Matrix x = Solve(many, b);
        const v1::Matrix y = Solve(one, b);
        const bool single = dtype == v1::DTYPE_FLOAT32 || dtype == v1::DTYPE_COMPLEX64;
        EXPECT_LE(RelativeDifference(x, y), single ? 1e-3 : 1e-10);
        ASSERT_TRUE(client_->Release(one).ok());
        ASSERT_TRUE(client_->Release(many).ok());
        EXPECT_EQ(ResidentBytes(), before);
        ASSERT_TRUE(client_->Release(a).ok());
      }
    }
  }
}

// A distributed resident operand (layout DISTRIBUTED) factored over the GPUs and kept there:
// Download of the kept factor equals the inline factors of the same Factorize, and a solve by the
// handle equals the inline solve.
TEST_F(DistributedFactorizationRpcTest, ADistributedOperandIsKeptAndDownloadsAsTheInlineFactors) {
  const int64_t n = 1029;
  const std::string a = Generate(n, v1::DTYPE_FLOAT64, v1::RESIDENT_LAYOUT_DISTRIBUTED);
  ASSERT_FALSE(a.empty());
  const v1::Matrix b = RandomRhs(n, 2, v1::DTYPE_FLOAT64);
  v1::FactorizeRequest request;
  request.mutable_matrix_ref()->set_handle(a);
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_devices(gpus_);
  *request.mutable_rhs() = b;
  absl::StatusOr<v1::FactorizeResponse> inline_factors = client_->Factorize(request);
  ASSERT_TRUE(inline_factors.ok()) << inline_factors.status();
  const std::string kept =
      KeepFactorization(a, v1::FACTORIZATION_KIND_LU, gpus_, v1::RESIDENT_LAYOUT_DISTRIBUTED);
  ASSERT_FALSE(kept.empty());
  absl::StatusOr<v1::Matrix> factor = client_->Download(kept);
  ASSERT_TRUE(factor.ok()) << factor.status();
  EXPECT_EQ(factor->data(), inline_factors->lu().data());
  EXPECT_EQ(Solve(kept, b).data(), inline_factors->solution().data());
  ASSERT_TRUE(client_->Release(kept).ok());
  v1::SolveRequest solve;
  solve.mutable_factorization()->set_handle(kept);
  *solve.mutable_rhs() = b;
  EXPECT_EQ(client_->Solve(solve).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace matrixd::server::testing
