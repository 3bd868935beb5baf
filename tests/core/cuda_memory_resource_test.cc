// The CUDA end of the memory-resource stack: CudaAsyncResource over a stream-ordered pool, and the
// stack DeviceContext allocates through (limit, statistics, retry). Skips where there is no CUDA
// device; the adaptors themselves are tested without one in memory_resource_test.cc.
#include "core/cuda/cuda_memory_resource.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/device_vector.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = uint64_t{1} << 20;
// A cap no other test uses, so that the stack (shared per device and limit) is this test's own.
constexpr uint64_t kLimit = 258 * kMiB;

class CudaMemoryResourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
    absl::StatusOr<std::unique_ptr<DeviceContext>> context =
        DeviceContext::Create(0, DeviceMemoryLimit{.bytes = kLimit});
    ASSERT_TRUE(context.ok()) << context.status();
    context_ = *std::move(context);
  }
  std::unique_ptr<DeviceContext> context_;
};

TEST_F(CudaMemoryResourceTest, AsyncResourceAllocatesUsableMemoryInStreamOrder) {
  absl::StatusOr<std::unique_ptr<CudaAsyncResource>> pool = CudaAsyncResource::Create(0, 0);
  ASSERT_TRUE(pool.ok()) << pool.status();
  const cudaStream_t stream = context_->stream();
  absl::StatusOr<void*> data = (*pool)->Allocate(4 * kMiB, stream);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(cudaMemsetAsync(*data, 1, 4 * kMiB, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  absl::StatusOr<MemoryPoolUsage> usage = (*pool)->Usage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_GE(usage->used, 4 * kMiB);
  (*pool)->Deallocate(*data, 4 * kMiB, stream);
  EXPECT_TRUE((*pool)->Trim(stream));
  usage = (*pool)->Usage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->used, 0u);
  EXPECT_EQ(usage->reserved, 0u);
}

TEST_F(CudaMemoryResourceTest, ContextCountsItsAllocationsInTheSharedStatistics) {
  const MemoryStatistics before = context_->memory_statistics();
  {
    absl::StatusOr<DeviceBuffer> a = context_->Allocate(8 * kMiB);
    absl::StatusOr<DeviceBuffer> b = context_->Allocate(2 * kMiB);
    ASSERT_TRUE(a.ok() && b.ok());
    const MemoryStatistics during = context_->memory_statistics();
    EXPECT_EQ(during.current_bytes, before.current_bytes + 10 * kMiB);
    EXPECT_GE(during.peak_bytes, during.current_bytes);
    EXPECT_EQ(during.total_count, before.total_count + 2);
  }
  const MemoryStatistics after = context_->memory_statistics();
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_EQ(after.current_count, before.current_count);
}

TEST_F(CudaMemoryResourceTest, OverTheLimitIsResourceExhaustedNamingTheDeviceAndTheBytes) {
  absl::StatusOr<DeviceBuffer> too_big = context_->Allocate(kLimit + 2 * kMiB);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(too_big.status().message(), HasSubstr("on CUDA device 0"));
  EXPECT_THAT(too_big.status().message(), HasSubstr("bytes requested, but only"));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  absl::StatusOr<DeviceBuffer> fits = context_->Allocate(kLimit / 2);
  EXPECT_TRUE(fits.ok()) << fits.status();
}

TEST_F(CudaMemoryResourceTest, DeviceVectorOwnsTypedElementsOnTheContextsStream) {
  const MemoryStatistics before = context_->memory_statistics();
  absl::StatusOr<DeviceVector<double>> vector = DeviceVector<double>::Create(*context_, 1000);
  ASSERT_TRUE(vector.ok()) << vector.status();
  EXPECT_EQ(vector->size(), 1000u);
  EXPECT_EQ(vector->size_bytes(), 8000u);
  EXPECT_EQ(vector->stream(), context_->stream());
  EXPECT_EQ(context_->memory_statistics().current_bytes, before.current_bytes + 8000);
  EXPECT_EQ(cudaMemsetAsync(vector->data(), 0, vector->size_bytes(), vector->stream()),
            cudaSuccess);
  DeviceVector<double> moved = *std::move(vector);
  EXPECT_EQ(vector->size(), 0u);  // NOLINT: a moved-from vector is empty
  EXPECT_EQ(vector->data(), nullptr);
  const DeviceSpan<const double> span = moved;
  EXPECT_EQ(span.size(), 1000u);
  moved = DeviceVector<double>();
  EXPECT_EQ(context_->memory_statistics().current_bytes, before.current_bytes);
  EXPECT_EQ(DeviceVector<double>::Create(*context_, kLimit).status().code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace matrixd::cuda
