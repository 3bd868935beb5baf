// The CUDA backend's host path for small jobs (core/cuda/host_small_jobs.h): determinants and
// factorizations of one matrix of order up to host_max_orders from host memory are answered by
// the CPU backend's code, bit for bit its values, and say so in their stats; larger orders and a
// limit of 0 use the device.
// Skips where there is no CUDA device, except the argument check.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/host_small_jobs.h"
#include "core/make_backend.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"

namespace matrixd {
namespace {

using testing::RandomMatrix;

std::vector<std::string> KernelNames(const DeterminantResult& result) {
  std::vector<std::string> names;
  for (const KernelRecord& record : result.stats.kernels) names.push_back(record.kernel);
  return names;
}

void ExpectSameValue(const DeterminantResult& got, const DeterminantResult& want) {
  EXPECT_EQ(got.value.mantissa(), want.value.mantissa());
  EXPECT_EQ(got.value.exponent2(), want.value.exponent2());
  EXPECT_EQ(got.exact, want.exact);
  EXPECT_EQ(got.residue, want.residue);
  ASSERT_EQ(got.accuracy.has_value(), want.accuracy.has_value());
  if (got.accuracy.has_value()) {
    EXPECT_EQ(got.accuracy->rcond, want.accuracy->rcond);
  }
}

TEST(CudaHostDeterminantArgumentTest, NegativeLimitIsRefusedNamingIt) {
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      MakeCudaBackend({}, {}, 1, {}, {.determinant = -1});
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(backend.status().message().find("host_determinant_max_order is -1"), std::string::npos)
      << backend.status();
  backend = MakeCudaBackend({}, {}, 1, {}, {.factorize = -2});
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(backend.status().message().find("host_factorize_max_order is -2"), std::string::npos)
      << backend.status();
}

TEST(CudaHostFactorizeArgumentTest, OnlyOneHostMatrixUpToTheLimitOnOneDevice) {
  const Matrix a = RandomMatrix<double>(8, 6, 1);
  const Matrix rhs = RandomMatrix<double>(8, 3, 2);
  const MatrixView view = a.view();
  MatrixView rhs_view = rhs.view();
  EXPECT_TRUE(cuda::FactorizeRunsOnHost(view, {}, nullptr, 8));
  EXPECT_TRUE(cuda::FactorizeRunsOnHost(view, {}, &rhs_view, 8));
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(view, {}, nullptr, 7));  // rows above the limit
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(view, {}, nullptr, 0));
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(view, {.devices = 2}, nullptr, 64));
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(view, {.keep_on_devices = true}, nullptr, 64));
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(view, {.batch_count = 2}, nullptr, 64));
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(view, {.refine = {.enabled = true}}, &rhs_view, 64));
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(view, {}, &rhs_view, 2));  // rhs columns above it
  const Matrix wide = RandomMatrix<double>(6, 9, 3);
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(wide.view(), {}, nullptr, 8));  // columns above it
  rhs_view.space = MemorySpace::kDevice;
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(view, {}, &rhs_view, 64));
  MatrixView on_device = view;
  on_device.space = MemorySpace::kDevice;
  EXPECT_FALSE(cuda::FactorizeRunsOnHost(on_device, {}, nullptr, 64));
}

TEST(CudaHostDeterminantArgumentTest, OnlyHostOperandsUpToTheLimitOnOneDevice) {
  const Matrix a = RandomMatrix<double>(8, 8, 1);
  MatrixView view = a.view();
  EXPECT_TRUE(cuda::DeterminantRunsOnHost(view, {}, 8));
  EXPECT_FALSE(cuda::DeterminantRunsOnHost(view, {}, 7));
  EXPECT_FALSE(cuda::DeterminantRunsOnHost(view, {}, 0));
  EXPECT_FALSE(cuda::DeterminantRunsOnHost(view, {.devices = 2}, 64));
  view.space = MemorySpace::kDevice;
  EXPECT_FALSE(cuda::DeterminantRunsOnHost(view, {}, 64));
}

class CudaHostDeterminantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
    absl::StatusOr<std::unique_ptr<Backend>> made = MakeBackend("cuda", {});
    ASSERT_TRUE(made.ok()) << made.status();
    cuda_ = *std::move(made);
    made = MakeBackend("cpu", {});
    ASSERT_TRUE(made.ok()) << made.status();
    cpu_ = *std::move(made);
  }
  // det `a` with `options` on the CUDA backend (`got`) and on the CPU one (`want`); false, with the
  // failure recorded, when either fails.
  bool BothDeterminants(const Matrix& a, const DeterminantOptions& options, DeterminantResult* got,
                        DeterminantResult* want) {
    absl::StatusOr<DeterminantResult> on_cuda = cuda_->Determinant(a.view(), options, nullptr);
    absl::StatusOr<DeterminantResult> on_cpu = cpu_->Determinant(a.view(), options, nullptr);
    EXPECT_TRUE(on_cuda.ok()) << on_cuda.status();
    EXPECT_TRUE(on_cpu.ok()) << on_cpu.status();
    if (!on_cuda.ok() || !on_cpu.ok()) return false;
    *got = *std::move(on_cuda);
    *want = *std::move(on_cpu);
    return true;
  }

  std::unique_ptr<Backend> cuda_;
  std::unique_ptr<Backend> cpu_;
};

TEST_F(CudaHostDeterminantTest, SmallOrdersAreTheCpuBackendsValuesComputedOnTheHost) {
  for (const int64_t n : {int64_t{1}, int64_t{8}, int64_t{kHostDeterminantMaxOrder}}) {
    const Matrix a = RandomMatrix<double>(n, n, 10 + static_cast<uint64_t>(n));
    for (const DeterminantMethod method :
         {DeterminantMethod::kAuto, DeterminantMethod::kCondensation}) {
      SCOPED_TRACE(::testing::Message() << "n = " << n << " method " << static_cast<int>(method));
      DeterminantResult got;
      DeterminantResult want;
      ASSERT_TRUE(BothDeterminants(a, {.method = method}, &got, &want));
      ExpectSameValue(got, want);
      EXPECT_EQ(got.method_used, want.method_used);
      // The CPU code's records, each named host_...; the method's first.
      const std::vector<std::string> names = KernelNames(got);
      ASSERT_FALSE(names.empty());
      EXPECT_EQ(names.front(),
                method == DeterminantMethod::kCondensation ? "host_condensation" : "host_lu");
      for (const std::string& name : names) EXPECT_EQ(name.rfind("host_", 0), 0u) << name;
      EXPECT_EQ(got.stats.backend, "cuda");
      EXPECT_EQ(got.stats.device, cuda::kHostComputeDevice);
      EXPECT_GT(got.stats.seconds, 0.0);
    }
  }
}

TEST_F(CudaHostDeterminantTest, ExactAndModularSmallDeterminantsToo) {
  std::vector<int64_t> values(12 * 12);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<int64_t>((i * 7919) % 2001) - 1000;
  }
  const Matrix a = Matrix::FromValues<int64_t>(12, 12, values);
  for (const uint64_t modulus : {uint64_t{0}, uint64_t{65521}, uint64_t{2147483629}}) {
    DeterminantResult got;
    DeterminantResult want;
    ASSERT_TRUE(BothDeterminants(a, {.modulus = modulus}, &got, &want));
    ExpectSameValue(got, want);
    EXPECT_EQ(got.stats.device, cuda::kHostComputeDevice) << "modulus " << modulus;
  }
}

TEST_F(CudaHostDeterminantTest, LargerOrdersAndALimitOfZeroRunOnTheDevice) {
  const Matrix above =
      RandomMatrix<double>(kHostDeterminantMaxOrder + 1, kHostDeterminantMaxOrder + 1, 3);
  absl::StatusOr<DeterminantResult> det = cuda_->Determinant(above.view(), {}, nullptr);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(KernelNames(*det).front(), "scale_rows");
  EXPECT_NE(det->stats.device, cuda::kHostComputeDevice);

  absl::StatusOr<std::unique_ptr<Backend>> device_only =
      MakeBackend("cuda", {.host_max_orders = {.determinant = 0}});
  ASSERT_TRUE(device_only.ok()) << device_only.status();
  const Matrix small = RandomMatrix<double>(8, 8, 4);
  det = (*device_only)->Determinant(small.view(), {}, nullptr);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(KernelNames(*det).front(), "scale_rows");
}

void ExpectSameFactorization(const FactorizeResult& got, const FactorizeResult& want) {
  EXPECT_EQ(got.kind, want.kind);
  for (const auto& [name, got_matrix, want_matrix] :
       {std::tuple{"lu", &got.lu, &want.lu}, std::tuple{"l", &got.l, &want.l},
        std::tuple{"q", &got.q, &want.q}, std::tuple{"r", &got.r, &want.r}}) {
    SCOPED_TRACE(name);
    ASSERT_EQ(got_matrix->byte_size(), want_matrix->byte_size());
    EXPECT_EQ(0, std::memcmp(got_matrix->bytes(), want_matrix->bytes(), got_matrix->byte_size()));
  }
  EXPECT_EQ(got.permutation, want.permutation);
  EXPECT_EQ(got.singular_column, want.singular_column);
  ASSERT_EQ(got.solution.has_value(), want.solution.has_value());
  if (got.solution.has_value()) {
    ASSERT_EQ(got.solution->byte_size(), want.solution->byte_size());
    EXPECT_EQ(
        0, std::memcmp(got.solution->bytes(), want.solution->bytes(), got.solution->byte_size()));
  }
  ASSERT_EQ(got.accuracy.has_value(), want.accuracy.has_value());
  if (got.accuracy.has_value()) {
    EXPECT_EQ(got.accuracy->rcond, want.accuracy->rcond);
  }
}

TEST_F(CudaHostDeterminantTest, SmallFactorizationsAreTheCpuBackendsComputedOnTheHost) {
  for (const int64_t n : {int64_t{1}, int64_t{8}, int64_t{kHostFactorizeMaxOrder}}) {
    const Matrix general = RandomMatrix<double>(n, n, 20 + static_cast<uint64_t>(n));
    const Matrix spd = testing::HermitianPositiveDefinite<double>(n, 30 + static_cast<uint64_t>(n));
    const Matrix rhs = RandomMatrix<double>(n, 2, 40 + static_cast<uint64_t>(n));
    const MatrixView rhs_view = rhs.view();
    for (const auto& [kind, a] : {std::pair{FactorizationKind::kLu, &general},
                                  std::pair{FactorizationKind::kCholesky, &spd},
                                  std::pair{FactorizationKind::kQr, &general}}) {
      SCOPED_TRACE(::testing::Message() << "n = " << n << " kind " << static_cast<int>(kind));
      const FactorizeOptions options{.kind = kind, .estimate_condition = true};
      absl::StatusOr<FactorizeResult> got =
          cuda_->Factorize(a->view(), options, &rhs_view, nullptr);
      absl::StatusOr<FactorizeResult> want =
          cpu_->Factorize(a->view(), options, &rhs_view, nullptr);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_TRUE(want.ok()) << want.status();
      ExpectSameFactorization(*got, *want);
      ASSERT_FALSE(got->stats.kernels.empty());
      for (const KernelRecord& record : got->stats.kernels) {
        EXPECT_EQ(record.kernel.rfind("host_", 0), 0u) << record.kernel;
      }
      EXPECT_EQ(got->stats.backend, "cuda");
      EXPECT_EQ(got->stats.device, cuda::kHostComputeDevice);
      EXPECT_GT(got->stats.seconds, 0.0);
    }
  }
}

TEST_F(CudaHostDeterminantTest, ASingularSmallLuSaysWhereAsTheCpuBackendDoes) {
  std::vector<double> values(5 * 5, 1.0);  // rank 1
  const Matrix a = Matrix::FromValues<double>(5, 5, values);
  absl::StatusOr<FactorizeResult> got = cuda_->Factorize(a.view(), {}, nullptr, nullptr);
  absl::StatusOr<FactorizeResult> want = cpu_->Factorize(a.view(), {}, nullptr, nullptr);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got->singular_column.has_value());
  ExpectSameFactorization(*got, *want);
  EXPECT_EQ(got->stats.device, cuda::kHostComputeDevice);
}

TEST_F(CudaHostDeterminantTest, LargerFactorizationsBatchesAndALimitOfZeroRunOnTheDevice) {
  const int64_t above = kHostFactorizeMaxOrder + 1;
  const Matrix big = RandomMatrix<double>(above, above, 5);
  absl::StatusOr<FactorizeResult> lu = cuda_->Factorize(big.view(), {}, nullptr, nullptr);
  ASSERT_TRUE(lu.ok()) << lu.status();
  EXPECT_NE(lu->stats.device, cuda::kHostComputeDevice);

  const Matrix batch = RandomMatrix<double>(2 * 8, 8, 6);
  lu = cuda_->Factorize(batch.view(), {.batch_count = 2}, nullptr, nullptr);
  ASSERT_TRUE(lu.ok()) << lu.status();
  EXPECT_NE(lu->stats.device, cuda::kHostComputeDevice);

  absl::StatusOr<std::unique_ptr<Backend>> device_only =
      MakeBackend("cuda", {.host_max_orders = {.factorize = 0}});
  ASSERT_TRUE(device_only.ok()) << device_only.status();
  const Matrix small = RandomMatrix<double>(8, 8, 7);
  lu = (*device_only)->Factorize(small.view(), {}, nullptr, nullptr);
  ASSERT_TRUE(lu.ok()) << lu.status();
  EXPECT_NE(lu->stats.device, cuda::kHostComputeDevice);
  for (const KernelRecord& record : lu->stats.kernels) {
    EXPECT_NE(record.kernel.rfind("host_", 0), 0u) << record.kernel;
  }
}

}  // namespace
}  // namespace matrixd
