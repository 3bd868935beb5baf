// The CUDA backend's host path for small determinants (core/cuda/host_determinant.h): orders up
// to host_determinant_max_order from host memory are answered by the CPU backend's code, bit for
// bit its values, and say so in their stats; larger orders and a limit of 0 use the device.
// Skips where there is no CUDA device, except the argument check.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/host_determinant.h"
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
  absl::StatusOr<std::unique_ptr<Backend>> backend = MakeCudaBackend({}, {}, 1, {}, -1);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(backend.status().message().find("host_determinant_max_order is -1"), std::string::npos)
      << backend.status();
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
  std::unique_ptr<Backend> cuda_;
  std::unique_ptr<Backend> cpu_;
};

TEST_F(CudaHostDeterminantTest, SmallOrdersAreTheCpuBackendsValuesComputedOnTheHost) {
  for (const int64_t n : {int64_t{1}, int64_t{8}, int64_t{kHostDeterminantMaxOrder}}) {
    const Matrix a = RandomMatrix<double>(n, n, 10 + static_cast<uint64_t>(n));
    for (const DeterminantMethod method :
         {DeterminantMethod::kAuto, DeterminantMethod::kCondensation}) {
      SCOPED_TRACE(::testing::Message() << "n = " << n << " method " << static_cast<int>(method));
      absl::StatusOr<DeterminantResult> got =
          cuda_->Determinant(a.view(), {.method = method}, nullptr);
      absl::StatusOr<DeterminantResult> want =
          cpu_->Determinant(a.view(), {.method = method}, nullptr);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_TRUE(want.ok()) << want.status();
      ExpectSameValue(*got, *want);
      EXPECT_EQ(got->method_used, want->method_used);
      EXPECT_EQ(KernelNames(*got),
                std::vector<std::string>{
                    method == DeterminantMethod::kCondensation ? "host_condensation" : "host_lu"});
      EXPECT_EQ(got->stats.backend, "cuda");
      EXPECT_EQ(got->stats.device, cuda::kHostDeterminantDevice);
      EXPECT_GT(got->stats.seconds, 0.0);
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
    absl::StatusOr<DeterminantResult> got =
        cuda_->Determinant(a.view(), {.modulus = modulus}, nullptr);
    absl::StatusOr<DeterminantResult> want =
        cpu_->Determinant(a.view(), {.modulus = modulus}, nullptr);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectSameValue(*got, *want);
    EXPECT_EQ(got->stats.device, cuda::kHostDeterminantDevice) << "modulus " << modulus;
  }
}

TEST_F(CudaHostDeterminantTest, LargerOrdersAndALimitOfZeroRunOnTheDevice) {
  const Matrix above =
      RandomMatrix<double>(kHostDeterminantMaxOrder + 1, kHostDeterminantMaxOrder + 1, 3);
  absl::StatusOr<DeterminantResult> det = cuda_->Determinant(above.view(), {}, nullptr);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(KernelNames(*det).front(), "scale_rows");
  EXPECT_NE(det->stats.device, cuda::kHostDeterminantDevice);

  absl::StatusOr<std::unique_ptr<Backend>> device_only =
      MakeBackend("cuda", {.host_determinant_max_order = 0});
  ASSERT_TRUE(device_only.ok()) << device_only.status();
  const Matrix small = RandomMatrix<double>(8, 8, 4);
  det = (*device_only)->Determinant(small.view(), {}, nullptr);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(KernelNames(*det).front(), "scale_rows");
}

}  // namespace
}  // namespace matrixd
