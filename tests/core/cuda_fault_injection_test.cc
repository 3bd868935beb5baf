// Injected device failures in the CUDA backend (core/cuda/fault_injection.h): a failed device
// allocation, a failed kernel launch and a cuSOLVER error status, each at every point of a
// determinant it can hit (and a verified product at each allocation and launch). Each time the
// operation must fail with a clear status naming the call and the injected fault, the pool's used
// bytes must return to where they were, and the next determinant on the same device must be right.
// Skips where there is no CUDA device.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cpu/cpu_backend.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/fault_injection.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using cuda::FaultPoint;
using cuda::ScopedFault;

constexpr uint64_t kMiB = uint64_t{1} << 20;
// A cap of its own, so that this suite's pool is not shared with other suites' (pools are shared
// per device and limit) and its used bytes are this backend's alone.
constexpr uint64_t kLimit = 704 * kMiB;
constexpr int kN = 96;
// Checks of one point that a determinant of kN passes, at most; an armed fault that the operation
// never reaches leaves it succeeding, which the test also checks.
constexpr int kMaxNth = 6;

Matrix RandomMatrix(int n, unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> entry(-1.0, 1.0);
  std::vector<double> values(static_cast<size_t>(n) * n);
  for (double& v : values) v = entry(random);
  return Matrix::FromValues<double>(n, n, values);
}

struct FaultCase {
  FaultPoint point;
  const char* name;
  absl::StatusCode code;  // of the failed operation
};

// Names the case in ctest's and gtest's listings.
void PrintTo(const FaultCase& fault, std::ostream* os) { *os << fault.name; }

class CudaFaultInjectionTest : public ::testing::TestWithParam<FaultCase> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
    absl::StatusOr<std::unique_ptr<Backend>> backend =
        MakeCudaBackend({0}, DeviceMemoryLimit{.bytes = kLimit});
    ASSERT_TRUE(backend.ok()) << backend.status();
    gpu_ = *std::move(backend);
    cpu_ = MakeCpuBackend({.threads = 1});
    // One determinant first: whatever the backend allocates once and keeps is then in the
    // baseline.
    ExpectRightDeterminant(RandomMatrix(kN, 1));
    baseline_ = Used();
  }

  // The pool's used bytes once the device is idle (frees are stream-ordered).
  uint64_t Used() {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<DeviceMemoryUsage> devices = gpu_->DeviceMemory();
    EXPECT_EQ(devices.size(), 1u);
    return devices.empty() ? 0 : devices[0].used;
  }

  // det on the GPU against the CPU backend's.
  void ExpectRightDeterminant(const Matrix& a) {
    const DeterminantOptions options{.method = DeterminantMethod::kLu};
    absl::StatusOr<DeterminantResult> want = cpu_->Determinant(a.view(), options, nullptr);
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<DeterminantResult> got = gpu_->Determinant(a.view(), options, nullptr);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_NEAR(got->value.log_abs(), want->value.log_abs(), 1e-10 * kN);
    EXPECT_NEAR(std::real(got->value.phase()), std::real(want->value.phase()), 1e-12);  // the sign
  }

  std::unique_ptr<Backend> gpu_;
  std::unique_ptr<Backend> cpu_;
  uint64_t baseline_ = 0;
};

TEST_P(CudaFaultInjectionTest, FailsCleanlyAtEveryCheckAndTheNextDeterminantIsRight) {
  const FaultCase& fault = GetParam();
  const int64_t fired_before = cuda::InjectedFault(fault.point).fired();
  int failures = 0;
  for (int nth = 1; nth <= kMaxNth; ++nth) {
    SCOPED_TRACE(::testing::Message() << fault.name << " fault at check " << nth);
    const Matrix a = RandomMatrix(kN, 100 + nth);
    absl::StatusOr<DeterminantResult> result;
    {
      ScopedFault armed(fault.point, nth);
      result = gpu_->Determinant(a.view(), {.method = DeterminantMethod::kLu}, nullptr);
    }
    if (result.ok()) {
      // The determinant has fewer checks of this point than nth: nothing fired.
      EXPECT_EQ(cuda::InjectedFault(fault.point).fired(), fired_before + failures);
    } else {
      ++failures;
      EXPECT_EQ(result.status().code(), fault.code) << result.status();
      EXPECT_NE(result.status().message().find(cuda::kInjectedFaultNote), std::string::npos)
          << result.status();
    }
    EXPECT_EQ(Used(), baseline_) << "device memory left behind by the failed determinant";
    ExpectRightDeterminant(a);
    EXPECT_EQ(Used(), baseline_);
  }
  EXPECT_GE(failures, 1) << "the determinant never reached a " << fault.name << " check";
  EXPECT_EQ(cuda::InjectedFault(fault.point).fired(), fired_before + failures);
}

// A verified product (Freivalds' check of B on the side lane while A is uploaded): a failure
// at any allocation or launch, including between the check's start and its end, fails the
// product cleanly, frees everything (after the side lane's reads), and the next verified product
// passes its check.
TEST_P(CudaFaultInjectionTest, VerifiedProductFailsCleanlyAtEveryCheckAndTheNextPasses) {
  const FaultCase& fault = GetParam();
  if (fault.point == FaultPoint::kCusolverCall) GTEST_SKIP() << "a product calls no cuSOLVER";
  constexpr int kMaxProductNth = 14;  // allocations and launches of one verified product, at most
  const Matrix a = RandomMatrix(kN, 7);
  const Matrix b = RandomMatrix(kN, 8);
  const MultiplyOptions options{.verify = true};
  const int64_t fired_before = cuda::InjectedFault(fault.point).fired();
  int failures = 0;
  for (int nth = 1; nth <= kMaxProductNth; ++nth) {
    SCOPED_TRACE(::testing::Message() << fault.name << " fault at check " << nth);
    absl::StatusOr<MultiplyResult> result;
    {
      ScopedFault armed(fault.point, nth);
      result = gpu_->Multiply(a.view(), b.view(), options, nullptr);
    }
    if (!result.ok()) {
      ++failures;
      EXPECT_EQ(result.status().code(), fault.code) << result.status();
    }
    EXPECT_EQ(Used(), baseline_) << "device memory left behind by the failed product";
    absl::StatusOr<MultiplyResult> next = gpu_->Multiply(a.view(), b.view(), options, nullptr);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_TRUE(next->check.has_value());
    EXPECT_TRUE(next->check->passed) << next->check->discrepancy;
  }
  EXPECT_GE(failures, 3) << "the verified product reached few " << fault.name << " checks";
  EXPECT_EQ(cuda::InjectedFault(fault.point).fired(), fired_before + failures);
}

INSTANTIATE_TEST_SUITE_P(
    Points, CudaFaultInjectionTest,
    ::testing::Values(
        FaultCase{FaultPoint::kDeviceAllocation, "DeviceAllocation",
                  absl::StatusCode::kResourceExhausted},
        FaultCase{FaultPoint::kKernelLaunch, "KernelLaunch", absl::StatusCode::kInternal},
        FaultCase{FaultPoint::kCusolverCall, "CusolverCall", absl::StatusCode::kInternal}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return std::string(info.param.name); });

TEST(CudaFaultInjection, InjectedAllocationFailureIsNotRetried) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
  absl::StatusOr<std::unique_ptr<Backend>> gpu =
      MakeCudaBackend({0}, DeviceMemoryLimit{.bytes = kLimit});
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const Matrix a = RandomMatrix(kN, 7);
  ScopedFault armed(FaultPoint::kDeviceAllocation, 1);
  absl::StatusOr<DeterminantResult> result =
      (*gpu)->Determinant(a.view(), {.method = DeterminantMethod::kLu}, nullptr);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted) << result.status();
  EXPECT_NE(result.status().message().find("cudaMallocFromPoolAsync"), std::string::npos)
      << result.status();
  // Failed at the first allocation: the stack did not retry it after trimming (a retry, the next
  // check, would have passed).
  EXPECT_FALSE(cuda::InjectedFault(FaultPoint::kDeviceAllocation).armed());
}

}  // namespace
}  // namespace matrixd
