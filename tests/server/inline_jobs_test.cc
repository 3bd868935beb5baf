// The scheduler's inline jobs (SchedulerOptions::inline_max_flops): which jobs Submit runs on its
// caller's thread, that they need no free worker, and that they are running jobs like any other
// for the observer and for WaitUntilIdle.
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coalescing.h"
#include "server/scheduler.h"

namespace matrixd::server {
namespace {

using ::testing::ElementsAre;

constexpr absl::Duration kPatience = absl::Seconds(10);

// Work that records the thread it ran on.
JobWork RecordThread(std::thread::id* ran_on) {
  return [ran_on](JobControl&) {
    *ran_on = std::this_thread::get_id();
    return absl::OkStatus();
  };
}

JobSpec HostSpec(JobWork work, double flops, bool runs_on_host = true) {
  JobSpec spec;
  spec.op = "tiny";
  spec.estimated_flops = flops;
  spec.runs_on_host = runs_on_host;
  spec.work = std::move(work);
  return spec;
}

// Where a job of `spec` ran (submitted synchronously unless `remember`), and whether it had
// finished when Submit returned.
struct Outcome {
  std::thread::id thread;
  bool finished_on_return = false;
};

Outcome SubmitAndWait(Scheduler& scheduler, JobSpec spec, std::thread::id* ran_on,
                      bool remember = false) {
  absl::StatusOr<std::shared_ptr<Job>> job = scheduler.Submit(std::move(spec), remember);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return {};
  Outcome outcome;
  outcome.finished_on_return = (*job)->AwaitFinished(absl::Now());
  EXPECT_TRUE((*job)->AwaitFinished(absl::Now() + kPatience));
  outcome.thread = *ran_on;
  return outcome;
}

TEST(InlineJobs, ATinyHostJobRunsOnTheSubmittingThreadAndHasEndedWhenSubmitReturns) {
  Scheduler scheduler({.workers = 1, .inline_max_flops = 1e5});
  std::thread::id ran_on;
  absl::Status ended = absl::UnknownError("hook not run");
  JobSpec spec = HostSpec(RecordThread(&ran_on), 1e5);
  spec.on_finished = [&ended](const absl::Status& status) { ended = status; };
  const Outcome outcome = SubmitAndWait(scheduler, std::move(spec), &ran_on);
  EXPECT_EQ(outcome.thread, std::this_thread::get_id());
  EXPECT_TRUE(outcome.finished_on_return);
  EXPECT_TRUE(ended.ok()) << ended;
  EXPECT_EQ(scheduler.running(), 0);
}

TEST(InlineJobs, OtherJobsGoToAWorker) {
  Scheduler scheduler({.workers = 1, .inline_max_flops = 1e5});
  std::thread::id ran_on;
  // Over the flops bound, not on the host, remembered (asynchronous): queued for a worker.
  EXPECT_NE(SubmitAndWait(scheduler, HostSpec(RecordThread(&ran_on), 2e5), &ran_on).thread,
            std::this_thread::get_id());
  EXPECT_NE(SubmitAndWait(scheduler, HostSpec(RecordThread(&ran_on), 1.0, false), &ran_on).thread,
            std::this_thread::get_id());
  EXPECT_NE(SubmitAndWait(scheduler, HostSpec(RecordThread(&ran_on), 1.0), &ran_on,
                          /*remember=*/true)
                .thread,
            std::this_thread::get_id());
  // inline_max_flops = 0 (the default): nothing runs inline.
  Scheduler no_inline({.workers = 1});
  EXPECT_NE(SubmitAndWait(no_inline, HostSpec(RecordThread(&ran_on), 0.0), &ran_on).thread,
            std::this_thread::get_id());
}

// A coalescible job of an order that coalesces waits for a worker, which may group it.
class FakeCoalescible final : public CoalescibleWork {
 public:
  explicit FakeCoalescible(int64_t order) { key_.order = order; }
  const CoalesceKey& key() const override { return key_; }
  absl::Status Run(JobControl&) override { return absl::OkStatus(); }
  std::vector<absl::Status> RunGroup(std::span<CoalescibleWork* const> members,
                                     std::span<JobControl* const>, JobControl&) override {
    return std::vector<absl::Status>(members.size(), absl::OkStatus());
  }

 private:
  CoalesceKey key_;
};

TEST(InlineJobs, AJobThatWouldCoalesceIsQueuedUnlessItsOrderIsNotCoalesced) {
  Scheduler scheduler(
      {.workers = 1, .coalesce = {.max_group = 8, .max_order = 32}, .inline_max_flops = 1e5});
  std::thread::id ran_on;
  JobSpec coalesces = HostSpec(RecordThread(&ran_on), 1.0);
  coalesces.coalescible = std::make_shared<FakeCoalescible>(32);
  EXPECT_NE(SubmitAndWait(scheduler, std::move(coalesces), &ran_on).thread,
            std::this_thread::get_id());
  JobSpec too_large = HostSpec(RecordThread(&ran_on), 1.0);
  too_large.coalescible = std::make_shared<FakeCoalescible>(33);
  EXPECT_EQ(SubmitAndWait(scheduler, std::move(too_large), &ran_on).thread,
            std::this_thread::get_id());
}

TEST(InlineJobs, RunEvenWhenEveryWorkerIsBusy) {
  Scheduler scheduler({.workers = 1, .inline_max_flops = 1e5});
  absl::Notification started, release;
  std::shared_ptr<Job> busy =
      *scheduler.Submit(HostSpec(
                            [&](JobControl&) {
                              started.Notify();
                              release.WaitForNotificationWithTimeout(kPatience);
                              return absl::OkStatus();
                            },
                            1e9, false),
                        false);
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(kPatience));
  std::thread::id ran_on;
  const Outcome outcome = SubmitAndWait(scheduler, HostSpec(RecordThread(&ran_on), 1.0), &ran_on);
  EXPECT_TRUE(outcome.finished_on_return);
  EXPECT_EQ(outcome.thread, std::this_thread::get_id());
  release.Notify();
  EXPECT_TRUE(busy->AwaitFinished(absl::Now() + kPatience));
}

class EventLog final : public SchedulerObserver {
 public:
  void QueueDepthChanged(int depth) override {
    events_.push_back("depth " + std::to_string(depth));
  }
  void JobStarted(const Job& job, absl::Duration) override {
    events_.push_back("start " + job.op());
  }
  void JobEnded(absl::string_view op, const absl::Status& status) override {
    events_.push_back(std::string("end ") + std::string(op) + " " +
                      absl::StatusCodeToString(status.code()));
  }
  void Add(std::string event) { events_.push_back(std::move(event)); }
  const std::vector<std::string>& events() const { return events_; }

 private:
  std::vector<std::string> events_;  // only the test's thread submits
};

TEST(InlineJobs, TheObserverSeesAnInlineJobStartAndEndWithoutAQueue) {
  EventLog log;
  {
    Scheduler scheduler({.workers = 1, .observer = &log, .inline_max_flops = 1e5});
    JobSpec failing = HostSpec([](JobControl&) { return absl::InternalError("boom"); }, 1.0);
    absl::StatusOr<std::shared_ptr<Job>> job = scheduler.Submit(std::move(failing), false);
    ASSERT_TRUE(job.ok());
    EXPECT_TRUE((*job)->AwaitFinished(absl::Now()));
    EXPECT_TRUE(scheduler.WaitUntilIdle(absl::Now()));
  }
  EXPECT_THAT(log.events(), ElementsAre("start tiny", "end tiny INTERNAL"));
}

TEST(InlineJobs, TheObserverHearsOfTheEndBeforeTheJobsOwnHook) {
  // JobStarted and JobEnded run after the scheduler's lock is released (the lock every request
  // takes), still before on_finished, whose caller may read the metrics at once.
  EventLog log;
  Scheduler scheduler({.workers = 1, .observer = &log, .inline_max_flops = 1e5});
  JobSpec spec = HostSpec([](JobControl&) { return absl::OkStatus(); }, 1.0);
  spec.on_finished = [&log](const absl::Status& status) {
    log.Add("done " + absl::StatusCodeToString(status.code()));
  };
  ASSERT_TRUE(scheduler.Submit(std::move(spec), false).ok());
  EXPECT_THAT(log.events(), ElementsAre("start tiny", "end tiny OK", "done OK"));
}

TEST(InlineJobs, InlineMaxFlopsMustBeFiniteAndNotNegative) {
  EXPECT_FALSE(ValidateSchedulerOptions({.inline_max_flops = -1.0}).ok());
  EXPECT_FALSE(
      ValidateSchedulerOptions({.inline_max_flops = std::numeric_limits<double>::infinity()}).ok());
  EXPECT_TRUE(ValidateSchedulerOptions({.inline_max_flops = 3e5}).ok());
}

}  // namespace
}  // namespace matrixd::server
