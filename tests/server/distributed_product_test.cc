// Multiply of distributed resident operands (layout DISTRIBUTED) through gRPC on a CUDA server:
// with devices = the GPU count, Cannon reads each operand from its parts in place, and C equals
// the CPU product of the downloaded operands, and the product of the same matrices kept on one
// GPU; a host operand beside a distributed one too; a kept product is kept distributed over the
// GPUs and downloads as the inline one. Skips without a CUDA server of 2 GPUs or more
// (the plumbing without a GPU: DistributedRegistryTest, tests/server/distributed_resident_test.cc).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "core/cpu/cpu_backend.h"
#include "core/job_control.h"
#include "core/make_backend.h"
#include "gtest/gtest.h"
#include "tests/server/multi_gpu_server.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

class DistributedProductRpcTest : public MultiGpuServerTest {
 protected:
  std::string Generate(int64_t rows, int64_t cols, uint64_t seed, v1::ResidentLayout layout) {
    v1::GenerateRequest request;
    request.set_rows(rows);
    request.set_cols(cols);
    request.set_dtype(v1::DTYPE_FLOAT64);
    request.set_generator(v1::GENERATOR_RANDOM);
    request.set_seed(seed);
    request.set_layout(layout);
    absl::StatusOr<v1::ResidentMatrix> made = client_->Generate(request);
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return "";
    EXPECT_EQ(made->layout(), layout);
    return made->handle();
  }

  Matrix Download(const std::string& handle) {
    absl::StatusOr<v1::Matrix> m = client_->Download(handle);
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return Matrix();
    Matrix host(m->rows(), m->cols(), DType::kFloat64);
    std::memcpy(host.mutable_bytes(), m->data().data(), host.byte_size());
    return host;
  }

  // C of `request` (devices = every GPU), checked against the CPU product of a and b.
  std::vector<double> ExpectProduct(v1::MultiplyRequest request, const Matrix& a, const Matrix& b) {
    request.set_devices(gpus_);
    absl::StatusOr<v1::MultiplyResponse> response = client_->Multiply(request);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return {};
    EXPECT_NE(response->stats().algorithm().find("cannon_scatter"), std::string::npos)
        << response->stats().algorithm();
    std::vector<double> c(static_cast<size_t>(a.rows() * b.cols()));
    EXPECT_EQ(response->c().data().size(), c.size() * sizeof(double));
    if (response->c().data().size() != c.size() * sizeof(double)) return {};
    std::memcpy(c.data(), response->c().data().data(), response->c().data().size());
    JobControl control;
    auto reference = cpu_->Multiply(a.view(), b.view(), {}, &control);
    EXPECT_TRUE(reference.ok()) << reference.status();
    if (!reference.ok()) return c;
    double worst = 0.0;
    for (size_t i = 0; i < c.size(); ++i) {
      worst = std::max(worst, std::abs(c[i] - reference->c.As<double>()[i]));
    }
    EXPECT_LE(worst, 1e-13 * static_cast<double>(a.cols()));
    return c;
  }

  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.threads = 0});
};

TEST_F(DistributedProductRpcTest, TwoDistributedOperandsGiveTheOneGpuProduct) {
  for (const int64_t n : {300, 1001}) {
    SCOPED_TRACE(n);
    const std::string a = Generate(n, n, 31, v1::RESIDENT_LAYOUT_DISTRIBUTED);
    const std::string b = Generate(n, n, 32, v1::RESIDENT_LAYOUT_DISTRIBUTED);
    ASSERT_FALSE(a.empty() || b.empty());
    const Matrix a_host = Download(a);
    const Matrix b_host = Download(b);
    v1::MultiplyRequest request;
    request.mutable_a_ref()->set_handle(a);
    request.mutable_b_ref()->set_handle(b);
    const std::vector<double> spread = ExpectProduct(request, a_host, b_host);

    // The same matrices on one GPU (the generator is a function of seed, row and column).
    v1::MultiplyRequest single;
    single.mutable_a_ref()->set_handle(Generate(n, n, 31, v1::RESIDENT_LAYOUT_SINGLE_DEVICE));
    single.mutable_b_ref()->set_handle(Generate(n, n, 32, v1::RESIDENT_LAYOUT_SINGLE_DEVICE));
    absl::StatusOr<v1::MultiplyResponse> one_gpu = client_->Multiply(single);
    ASSERT_TRUE(one_gpu.ok()) << one_gpu.status();
    ASSERT_EQ(one_gpu->c().data().size(), spread.size() * sizeof(double));
    std::vector<double> c(spread.size());
    std::memcpy(c.data(), one_gpu->c().data().data(), one_gpu->c().data().size());
    for (size_t i = 0; i < c.size(); ++i) {
      ASSERT_NEAR(c[i], spread[i], 1e-13 * static_cast<double>(n)) << i;
    }
  }
}

TEST_F(DistributedProductRpcTest, ADistributedAndAnInlineOperandGiveTheCpuProduct) {
  const std::string a = Generate(777, 513, 33, v1::RESIDENT_LAYOUT_DISTRIBUTED);
  ASSERT_FALSE(a.empty());
  const Matrix a_host = Download(a);
  std::vector<double> b_values(513 * 401);
  for (size_t i = 0; i < b_values.size(); ++i) b_values[i] = std::sin(static_cast<double>(i));
  Matrix b_host(513, 401, DType::kFloat64);
  std::memcpy(b_host.mutable_bytes(), b_values.data(), b_host.byte_size());
  v1::MultiplyRequest request;
  request.mutable_a_ref()->set_handle(a);
  *request.mutable_b() = MakeMatrix<double>(513, 401, b_values);
  ExpectProduct(request, a_host, b_host);
}

// A kept product over every GPU stays on them: kept as a distributed matrix (C's blocks written
// into its parts, not through the host) whose Download equals the inline product bit for bit.
// Rectangular, with rows over several 512-row blocks and a grid that does not divide them.
TEST_F(DistributedProductRpcTest, AKeptProductIsDistributedAndDownloadsAsTheInlineProduct) {
  const std::string a = Generate(1100, 700, 34, v1::RESIDENT_LAYOUT_SINGLE_DEVICE);
  const std::string b = Generate(700, 1029, 35, v1::RESIDENT_LAYOUT_DISTRIBUTED);
  ASSERT_FALSE(a.empty() || b.empty());
  v1::MultiplyRequest request;
  request.mutable_a_ref()->set_handle(a);
  request.mutable_b_ref()->set_handle(b);
  const std::vector<double> inline_c = ExpectProduct(request, Download(a), Download(b));
  ASSERT_FALSE(inline_c.empty());

  request.set_devices(gpus_);
  request.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::MultiplyResponse> kept = client_->Multiply(request);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_FALSE(kept->has_c());
  ASSERT_TRUE(kept->kept().contains("c"));
  const v1::ResidentMatrix& c = kept->kept().at("c");
  EXPECT_EQ(c.layout(), v1::RESIDENT_LAYOUT_DISTRIBUTED);
  EXPECT_EQ(c.rows(), 1100);
  EXPECT_EQ(c.cols(), 1029);
  const Matrix downloaded = Download(c.handle());
  ASSERT_EQ(downloaded.byte_size(), inline_c.size() * sizeof(double));
  EXPECT_EQ(std::memcmp(downloaded.bytes(), inline_c.data(), downloaded.byte_size()), 0);
  EXPECT_TRUE(client_->Release(c.handle()).ok());
}

}  // namespace
}  // namespace matrixd::server::testing
