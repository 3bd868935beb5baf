#include "core/memory_resource.h"

#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/mock_memory_resource.h"

namespace matrixd {
namespace {

using ::matrixd::testing::FaultInjectionResource;
using ::matrixd::testing::HostMemoryResource;
using ::testing::HasSubstr;

MemoryStream StreamNumber(uintptr_t n) { return reinterpret_cast<MemoryStream>(n); }

TEST(MemoryResource, ZeroBytesIsNullWithoutAskingTheResource) {
  HostMemoryResource host;
  FaultInjectionResource faults(&host);
  faults.FailAll(true);
  absl::StatusOr<void*> data = faults.Allocate(0, nullptr);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(*data, nullptr);
  faults.Deallocate(nullptr, 0, nullptr);
  EXPECT_EQ(faults.allocations(), 0);
}

TEST(FaultInjectionResource, FailsTheNthAllocationOnceAndOnDemand) {
  HostMemoryResource host;
  FaultInjectionResource faults(&host);
  faults.FailAllocation(2);
  absl::StatusOr<void*> first = faults.Allocate(8, nullptr);
  EXPECT_TRUE(first.ok());
  EXPECT_EQ(faults.Allocate(8, nullptr).status().code(), absl::StatusCode::kResourceExhausted);
  absl::StatusOr<void*> third = faults.Allocate(8, nullptr);
  EXPECT_TRUE(third.ok());
  faults.SetFailure(absl::InternalError("device lost"));
  faults.FailAll(true);
  EXPECT_EQ(faults.Allocate(8, nullptr).status(), absl::InternalError("device lost"));
  faults.Deallocate(*first, 8, nullptr);
  faults.Deallocate(*third, 4, nullptr);  // wrong size: recorded
  EXPECT_EQ(faults.injected_failures(), 2);
  EXPECT_EQ(faults.live_allocations(), 0u);
  EXPECT_EQ(faults.mismatched_deallocations(), 1);
}

TEST(LimitingResource, RefusesPastTheLimitNamingRequestedAndFreeBytes) {
  HostMemoryResource host;
  FaultInjectionResource upstream(&host);
  LimitingResource limit(&upstream, 100);
  absl::StatusOr<void*> a = limit.Allocate(60, nullptr);
  ASSERT_TRUE(a.ok());
  absl::StatusOr<void*> b = limit.Allocate(41, nullptr);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(b.status().message(), HasSubstr("41 bytes requested"));
  EXPECT_THAT(b.status().message(), HasSubstr("but only 40 of the 100-byte limit are free"));
  EXPECT_EQ(upstream.allocations(), 1);  // refused without asking the upstream
  absl::StatusOr<void*> c = limit.Allocate(40, nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(limit.allocated(), 100u);
  limit.Deallocate(*a, 60, nullptr);
  limit.Deallocate(*c, 40, nullptr);
  EXPECT_EQ(limit.allocated(), 0u);
  EXPECT_EQ(upstream.mismatched_deallocations(), 0);
}

TEST(LimitingResource, UpstreamFailureGivesTheReservationBack) {
  HostMemoryResource host;
  FaultInjectionResource upstream(&host);
  LimitingResource limit(&upstream, 100);
  upstream.FailAllocation(1);
  EXPECT_FALSE(limit.Allocate(100, nullptr).ok());
  EXPECT_EQ(limit.allocated(), 0u);
  absl::StatusOr<void*> all = limit.Allocate(100, nullptr);
  ASSERT_TRUE(all.ok()) << all.status();
  limit.Deallocate(*all, 100, nullptr);
}

TEST(LimitingResource, ConcurrentAllocationsNeverPassTheLimit) {
  HostMemoryResource host;
  LimitingResource limit(&host, 64 * 10);
  std::vector<std::vector<void*>> granted(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        if (absl::StatusOr<void*> data = limit.Allocate(64, nullptr); data.ok()) {
          granted[t].push_back(*data);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  size_t total = 0;
  for (const std::vector<void*>& g : granted) total += g.size();
  EXPECT_EQ(total, 10u);  // exactly the limit's worth
  EXPECT_EQ(limit.allocated(), 640u);
  for (const std::vector<void*>& g : granted) {
    for (void* data : g) limit.Deallocate(data, 64, nullptr);
  }
  EXPECT_EQ(limit.allocated(), 0u);
}

TEST(StatisticsResource, CountsCurrentPeakTotalAndFailures) {
  HostMemoryResource host;
  FaultInjectionResource upstream(&host);
  StatisticsResource stats(&upstream);
  absl::StatusOr<void*> a = stats.Allocate(100, nullptr);
  absl::StatusOr<void*> b = stats.Allocate(50, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  stats.Deallocate(*a, 100, nullptr);
  upstream.FailAllocation(1);
  EXPECT_FALSE(stats.Allocate(10, nullptr).ok());
  MemoryStatistics s = stats.statistics();
  EXPECT_EQ(s.current_bytes, 50u);
  EXPECT_EQ(s.peak_bytes, 150u);
  EXPECT_EQ(s.total_bytes, 150u);
  EXPECT_EQ(s.current_count, 1u);
  EXPECT_EQ(s.peak_count, 2u);
  EXPECT_EQ(s.total_count, 2u);
  EXPECT_EQ(s.failed_count, 1u);
  stats.ResetPeaks();
  s = stats.statistics();
  EXPECT_EQ(s.peak_bytes, 50u);
  EXPECT_EQ(s.peak_count, 1u);
  stats.Deallocate(*b, 50, nullptr);
  EXPECT_EQ(stats.statistics().current_bytes, 0u);
}

TEST(RetryOnExhaustionResource, ReclaimsThenRetriesOnTheAllocationsStream) {
  HostMemoryResource host;
  FaultInjectionResource upstream(&host);
  int reclaims = 0;
  MemoryStream seen = nullptr;
  RetryOnExhaustionResource retry(&upstream, [&](size_t bytes, MemoryStream stream) {
    ++reclaims;
    seen = stream;
    EXPECT_EQ(bytes, 32u);
    return true;
  });
  upstream.FailAllocation(1);
  absl::StatusOr<void*> data = retry.Allocate(32, StreamNumber(7));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(reclaims, 1);
  EXPECT_EQ(seen, StreamNumber(7));
  EXPECT_EQ(upstream.allocations(), 2);
  retry.Deallocate(*data, 32, StreamNumber(7));
  EXPECT_EQ(upstream.mismatched_deallocations(), 0);
}

TEST(RetryOnExhaustionResource, GivesUpAfterMaxRetriesOrWhenNothingWasReclaimed) {
  HostMemoryResource host;
  FaultInjectionResource upstream(&host);
  upstream.FailAll(true);
  int reclaims = 0;
  RetryOnExhaustionResource twice(
      &upstream, [&](size_t, MemoryStream) { return ++reclaims > 0; }, 2);
  EXPECT_EQ(twice.Allocate(8, nullptr).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(reclaims, 2);
  EXPECT_EQ(upstream.allocations(), 3);

  RetryOnExhaustionResource nothing(&upstream, [](size_t, MemoryStream) { return false; });
  EXPECT_FALSE(nothing.Allocate(8, nullptr).ok());
  EXPECT_EQ(upstream.allocations(), 4);  // no retry without reclaimed memory
}

TEST(RetryOnExhaustionResource, OtherFailuresAreNotRetried) {
  HostMemoryResource host;
  FaultInjectionResource upstream(&host);
  upstream.SetFailure(absl::InternalError("broken"));
  upstream.FailAllocation(1);
  int reclaims = 0;
  RetryOnExhaustionResource retry(&upstream, [&](size_t, MemoryStream) { return ++reclaims > 0; });
  EXPECT_EQ(retry.Allocate(8, nullptr).status(), absl::InternalError("broken"));
  EXPECT_EQ(reclaims, 0);
}

// The stack DeviceContext builds (pool -> limit -> statistics -> retry): the retry's reclaim
// frees memory held elsewhere, and the limit then lets the allocation through.
TEST(MemoryResourceStack, ReclaimUnderTheLimitLetsTheRetrySucceed) {
  HostMemoryResource host;
  FaultInjectionResource pool(&host);
  LimitingResource limit(&pool, 100);
  StatisticsResource stats(&limit);
  absl::StatusOr<void*> cached = stats.Allocate(80, nullptr);
  ASSERT_TRUE(cached.ok());
  RetryOnExhaustionResource retry(&stats, [&](size_t, MemoryStream) {
    stats.Deallocate(*cached, 80, nullptr);
    return true;
  });
  absl::StatusOr<void*> data = retry.Allocate(50, nullptr);
  ASSERT_TRUE(data.ok()) << data.status();
  const MemoryStatistics s = stats.statistics();
  EXPECT_EQ(s.current_bytes, 50u);
  EXPECT_EQ(s.peak_bytes, 80u);
  EXPECT_EQ(s.failed_count, 1u);
  retry.Deallocate(*data, 50, nullptr);
  EXPECT_EQ(limit.allocated(), 0u);
  EXPECT_EQ(pool.live_allocations(), 0u);
}

}  // namespace
}  // namespace matrixd
