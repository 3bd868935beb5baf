// MemoryAdmission and the scheduler's MemoryJobAdmission: device-memory admission without a GPU.
#include "server/memory_admission.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/memory_job_admission.h"

namespace matrixd::server {
namespace {

constexpr absl::Duration kBound = absl::Seconds(5);  // far above any wait a test expects

absl::Time Soon() { return absl::Now() + kBound; }

// Runs Acquire on a thread of its own; the result is read after Join().
class BackgroundAcquire {
 public:
  BackgroundAcquire(MemoryAdmission& admission, uint64_t bytes, absl::Time deadline,
                    const JobControl* control = nullptr)
      : thread_([this, &admission, bytes, deadline, control] {
          result_.emplace(admission.Acquire(bytes, deadline, control));
          done_.Notify();
        }) {}
  ~BackgroundAcquire() { Join(); }

  bool Done(absl::Duration within) { return done_.WaitForNotificationWithTimeout(within); }
  absl::StatusOr<MemoryReservation>& Join() {
    if (thread_.joinable()) thread_.join();
    return *result_;
  }

 private:
  std::optional<absl::StatusOr<MemoryReservation>> result_;
  absl::Notification done_;
  std::thread thread_;
};

// Waits (bounded) until `admission` has `n` waiters.
bool AwaitWaiters(const MemoryAdmission& admission, int n) {
  const absl::Time until = Soon();
  while (admission.waiting() != n) {
    if (absl::Now() > until) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

TEST(MemoryAdmission, JobLargerThanTheLimitFailsAtOnce) {
  MemoryAdmission admission(1000);
  const absl::Time start = absl::Now();
  absl::StatusOr<MemoryReservation> reservation =
      admission.Acquire(1001, absl::InfiniteFuture(), nullptr);
  EXPECT_EQ(reservation.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(100));
  EXPECT_EQ(admission.reserved(), 0u);
}

TEST(MemoryAdmission, ReservationsThatFitStartAtOnceAndReleaseOnDestruction) {
  MemoryAdmission admission(1000);
  {
    absl::StatusOr<MemoryReservation> a = admission.Acquire(600, absl::Now(), nullptr);
    ASSERT_TRUE(a.ok()) << a.status();
    absl::StatusOr<MemoryReservation> b = admission.Acquire(400, absl::Now(), nullptr);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(a->bytes(), 600u);
    EXPECT_EQ(admission.reserved(), 1000u);
  }
  EXPECT_EQ(admission.reserved(), 0u);
}

TEST(MemoryAdmission, JobThatDoesNotFitWaitsAndRunsAfterARelease) {
  MemoryAdmission admission(1000);
  absl::StatusOr<MemoryReservation> running = admission.Acquire(700, Soon(), nullptr);
  ASSERT_TRUE(running.ok());
  BackgroundAcquire waiting(admission, 500, Soon());
  ASSERT_TRUE(AwaitWaiters(admission, 1));
  EXPECT_FALSE(waiting.Done(absl::Milliseconds(50)));  // still does not fit
  running->Release();
  absl::StatusOr<MemoryReservation>& admitted = waiting.Join();
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  EXPECT_EQ(admission.reserved(), 500u);
  EXPECT_EQ(admission.waiting(), 0);
}

TEST(MemoryAdmission, WaitEndsWithDeadlineExceeded) {
  MemoryAdmission admission(1000);
  absl::StatusOr<MemoryReservation> running = admission.Acquire(1000, Soon(), nullptr);
  ASSERT_TRUE(running.ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<MemoryReservation> late =
      admission.Acquire(1, start + absl::Milliseconds(60), nullptr);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(60));
  EXPECT_EQ(admission.reserved(), 1000u);
  EXPECT_EQ(admission.waiting(), 0);
}

TEST(MemoryAdmission, CancelledWaiterLeavesWithinTheBound) {
  MemoryAdmission admission(1000);
  absl::StatusOr<MemoryReservation> running = admission.Acquire(900, Soon(), nullptr);
  ASSERT_TRUE(running.ok());
  JobControl control;
  BackgroundAcquire waiting(admission, 200, absl::InfiniteFuture(), &control);
  ASSERT_TRUE(AwaitWaiters(admission, 1));
  const absl::Time cancelled = absl::Now();
  control.Cancel();
  ASSERT_TRUE(waiting.Done(kBound));
  EXPECT_LT(absl::Now() - cancelled, absl::Milliseconds(100));
  EXPECT_EQ(waiting.Join().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(admission.reserved(), 900u);
}

TEST(MemoryAdmission, ZeroBytesNeverWait) {
  MemoryAdmission admission(10);
  absl::StatusOr<MemoryReservation> full = admission.Acquire(10, Soon(), nullptr);
  ASSERT_TRUE(full.ok());
  absl::StatusOr<MemoryReservation> none = admission.Acquire(0, absl::Now(), nullptr);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->bytes(), 0u);
  EXPECT_TRUE(admission.TryReserve(0));
}

TEST(MemoryAdmission, MovedReservationReleasesExactlyOnce) {
  MemoryAdmission admission(100);
  absl::StatusOr<MemoryReservation> a = admission.Acquire(60, Soon(), nullptr);
  ASSERT_TRUE(a.ok());
  MemoryReservation moved = *std::move(a);
  MemoryReservation target;
  target = std::move(moved);
  EXPECT_EQ(moved.bytes(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  moved.Release();
  EXPECT_EQ(admission.reserved(), 60u);
  target.Release();
  target.Release();
  EXPECT_EQ(admission.reserved(), 0u);
}

TEST(MemoryAdmission, SmallJobsOvertakeAWaitingLargeOneUntilTheStarvationLimit) {
  MemoryAdmission admission(1000, {.starvation_limit = absl::Milliseconds(200)});
  absl::StatusOr<MemoryReservation> running = admission.Acquire(600, Soon(), nullptr);
  ASSERT_TRUE(running.ok());
  BackgroundAcquire large(admission, 800, Soon());
  ASSERT_TRUE(AwaitWaiters(admission, 1));
  // Young waiter: a small job that fits goes first.
  absl::StatusOr<MemoryReservation> small = admission.Acquire(100, absl::Now(), nullptr);
  ASSERT_TRUE(small.ok()) << small.status();
  small->Release();
  absl::SleepFor(absl::Milliseconds(250));
  // Old waiter: nobody overtakes it any more, blocking or not.
  EXPECT_FALSE(admission.TryReserve(100));
  EXPECT_EQ(admission.Acquire(100, absl::Now() + absl::Milliseconds(30), nullptr).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  running->Release();
  ASSERT_TRUE(large.Join().ok());
  EXPECT_EQ(admission.reserved(), 800u);
}

TEST(MemoryAdmission, TryReserveTakesOnlyWhatFits) {
  MemoryAdmission admission(100);
  EXPECT_TRUE(admission.TryReserve(70));
  EXPECT_FALSE(admission.TryReserve(31));
  EXPECT_TRUE(admission.TryReserve(30));
  EXPECT_EQ(admission.reserved(), 100u);
  admission.Unreserve(70);
  admission.Unreserve(30);
  EXPECT_EQ(admission.reserved(), 0u);
}

TEST(MemoryAdmission, ConcurrentJobsNeverExceedTheCapacityAndReturnToZero) {
  constexpr uint64_t kCapacity = 1000;
  MemoryAdmission admission(kCapacity);
  std::atomic<uint64_t> held{0};
  std::atomic<uint64_t> most{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      std::uniform_int_distribution<uint64_t> size(1, kCapacity);
      for (int i = 0; i < 60; ++i) {
        absl::StatusOr<MemoryReservation> r = admission.Acquire(size(random), Soon(), nullptr);
        if (!r.ok()) {
          ++failures;
          continue;
        }
        const uint64_t now = held += r->bytes();
        uint64_t seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        held -= r->bytes();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(most.load(), kCapacity);
  EXPECT_EQ(admission.reserved(), 0u);
  EXPECT_EQ(admission.waiting(), 0);
}

JobSpec SpecNeeding(uint64_t device_bytes) {
  JobSpec spec;
  spec.op = "factorize";
  spec.device_bytes = device_bytes;
  return spec;
}

TEST(MemoryJobAdmission, RefusesJobsLargerThanTheLimitAndReservesTheRest) {
  MemoryAdmission memory(1000);
  MemoryJobAdmission policy({&memory});
  const absl::Status refused = policy.CheckFits(SpecNeeding(1001));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("1001"), absl::string_view::npos) << refused;
  EXPECT_TRUE(policy.CheckFits(SpecNeeding(1000)).ok());

  Job first("", SpecNeeding(700), false, absl::Now());
  Job second("", SpecNeeding(400), false, absl::Now());
  EXPECT_TRUE(policy.TryAdmit(first));
  EXPECT_FALSE(policy.TryAdmit(second));
  policy.Release(first);
  EXPECT_TRUE(policy.TryAdmit(second));
  policy.Release(second);
  EXPECT_EQ(memory.reserved(), 0u);
}

TEST(MemoryJobAdmission, PlacesJobsOnTheLeastLoadedDeviceThatHasRoom) {
  MemoryAdmission small(1000);
  MemoryAdmission large(3000);
  MemoryJobAdmission policy({&small, &large});
  // Fits the larger device only.
  EXPECT_TRUE(policy.CheckFits(SpecNeeding(2500)).ok());
  EXPECT_EQ(policy.CheckFits(SpecNeeding(3001)).code(), absl::StatusCode::kResourceExhausted);

  // Equal job counts: the device with more room first.
  Job first("", SpecNeeding(100), false, absl::Now());
  ASSERT_TRUE(policy.TryAdmit(first));
  EXPECT_EQ(first.device_index(), 1);
  // Device 0 now runs fewer jobs, so it takes the next one.
  Job second("", SpecNeeding(100), false, absl::Now());
  ASSERT_TRUE(policy.TryAdmit(second));
  EXPECT_EQ(second.device_index(), 0);
  // Too large for device 0's room: goes to device 1 although that one runs as many jobs.
  Job third("", SpecNeeding(2000), false, absl::Now());
  ASSERT_TRUE(policy.TryAdmit(third));
  EXPECT_EQ(third.device_index(), 1);
  EXPECT_EQ(policy.admitted_jobs(0), 1);
  EXPECT_EQ(policy.admitted_jobs(1), 2);
  // Neither device has 1000 bytes left now (900 and 900).
  Job fourth("", SpecNeeding(1000), false, absl::Now());
  EXPECT_FALSE(policy.TryAdmit(fourth));
  EXPECT_EQ(fourth.device_index(), JobControl::kAnyDevice);

  // Releases give the bytes back to the device each job was placed on.
  policy.Release(third);
  EXPECT_EQ(large.reserved(), 100u);
  EXPECT_TRUE(policy.TryAdmit(fourth));
  EXPECT_EQ(fourth.device_index(), 1);
  for (const Job* job : {&first, &second, &fourth}) policy.Release(*job);
  EXPECT_EQ(small.reserved(), 0u);
  EXPECT_EQ(large.reserved(), 0u);
  EXPECT_EQ(policy.admitted_jobs(0), 0);
  EXPECT_EQ(policy.admitted_jobs(1), 0);
}

TEST(MemoryJobAdmission, PinnedJobsGoToTheirDeviceOrWait) {
  MemoryAdmission first_device(1000);
  MemoryAdmission second_device(3000);
  MemoryJobAdmission policy({&first_device, &second_device});
  const auto pinned_spec = [] {
    JobSpec spec = SpecNeeding(800);
    spec.pinned_device = 0;
    return spec;
  };
  // Placed on device 0 from the start, before admission (the backend reads it there too).
  Job pinned("", pinned_spec(), false, absl::Now());
  EXPECT_EQ(pinned.device_index(), 0);
  EXPECT_EQ(pinned.pinned_device(), 0);
  // Device 1 has more room, but a pinned job goes to device 0 only.
  ASSERT_TRUE(policy.TryAdmit(pinned));
  EXPECT_EQ(pinned.device_index(), 0);
  // A second one does not fit device 0 now: it waits rather than go to device 1.
  Job waiting("", pinned_spec(), false, absl::Now());
  EXPECT_FALSE(policy.TryAdmit(waiting));
  policy.Release(pinned);
  ASSERT_TRUE(policy.TryAdmit(waiting));
  EXPECT_EQ(waiting.device_index(), 0);
  policy.Release(waiting);
  EXPECT_EQ(first_device.reserved(), 0u);
  EXPECT_EQ(second_device.reserved(), 0u);
}

}  // namespace
}  // namespace matrixd::server
