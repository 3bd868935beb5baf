// ToStatus and the CUDA macros need the CUDA runtime library but no device: these run everywhere
// the CUDA backend is built.
#include "core/cuda/cuda_status.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

absl::Status FailingCall() {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaErrorInvalidValue);
  return absl::OkStatus();
}

TEST(CudaStatusLog, FailureIsLoggedWithFileAndLineWhileTheStatusStaysClean) {
  ::testing::internal::CaptureStderr();
  const absl::Status status = FailingCall();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("cudaErrorInvalidValue"));
  EXPECT_THAT(status.message(), Not(HasSubstr(".cc")));
  EXPECT_THAT(log, HasSubstr("matrixd: core/cuda_status_test.cc:"));  // from "core/" on
  EXPECT_THAT(log, HasSubstr("cudaErrorInvalidValue"));
}

TEST(CudaStatusLog, SuccessAndCallsWithoutASiteLogNothing) {
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(MATRIXD_CUDA_STATUS(cudaSuccess).ok());
  EXPECT_TRUE(MATRIXD_CUDA_STATUS(CUBLAS_STATUS_SUCCESS).ok());
  EXPECT_FALSE(ToStatus(cudaErrorMemoryAllocation, "cudaMallocAsync(&p, n, s)").ok());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(CudaStatusLog, AssertCudaSuccessLogsAFailureInReleaseBuilds) {
#ifndef NDEBUG
  GTEST_SKIP() << "asserts in debug builds";
#endif
  ::testing::internal::CaptureStderr();
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaErrorInvalidResourceHandle);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("cuda_status_test.cc:"));
  EXPECT_THAT(log, HasSubstr("cudaErrorInvalidResourceHandle"));
}

}  // namespace
}  // namespace matrixd::cuda
