// Jobs end to end, through the real server on the CPU backend: Submit/Watch/Cancel/GetJob, and the
// queue under the synchronous calls (full queue, deadlines, cancellation of a running permanent,
// small jobs beside long ones, the TTL of finished jobs).
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// Upper bound for "at once" and "promptly" on CI's two busy cores. Measured on the development
// machine (2 shared cores): cancelling a running n = 30 permanent takes 5-40 ms end to end.
constexpr absl::Duration kPromptly = absl::Seconds(1);

// A server of `workers` workers with room for permanents up to n = 30.
std::unique_ptr<MatrixServer> StartJobServer(int workers, int queue_depth = 8,
                                             absl::Duration job_ttl = absl::Minutes(1)) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.limits = TestLimits();
  options.limits.max_permanent_n = 30;
  options.scheduler.workers = workers;
  options.scheduler.queue_depth = queue_depth;
  options.scheduler.job_ttl = job_ttl;
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      MatrixServer::Start(MakeCpuBackend({.threads = 2}), options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// n x n all `value` (float64): per = n! value^n. At n = 30 the CPU needs many seconds (the large
// lane), so the tests only ever cancel it.
v1::PermanentRequest LongPermanent() {
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(30, 30, std::vector<double>(900, 0.5));
  return request;
}

// The n x n all-ones INT64 matrix: its exact permanent is n!. n = 24 takes about 0.5 s here.
v1::PermanentRequest OnesPermanent(int n) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<int64_t>(n, n, std::vector<int64_t>(n * n, 1));
  return request;
}

// n! in decimal, by schoolbook multiplication: the independent reference for OnesPermanent.
std::string Factorial(int n) {
  std::vector<int> digits = {1};  // little-endian decimal digits
  for (int k = 2; k <= n; ++k) {
    int carry = 0;
    for (int& digit : digits) {
      const int product = digit * k + carry;
      digit = product % 10;
      carry = product / 10;
    }
    for (; carry > 0; carry /= 10) digits.push_back(carry % 10);
  }
  std::string decimal;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) decimal.push_back('0' + *it);
  return decimal;
}

v1::DeterminantRequest SmallDeterminant() {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0});  // det 5
  return request;
}

v1::JobRequest AsJob(const v1::PermanentRequest& request, double timeout_seconds = 0.0) {
  v1::JobRequest job;
  *job.mutable_permanent() = request;
  job.set_timeout_seconds(timeout_seconds);
  return job;
}

v1::JobRequest AsJob(const v1::DeterminantRequest& request, double timeout_seconds = 0.0) {
  v1::JobRequest job;
  *job.mutable_determinant() = request;
  job.set_timeout_seconds(timeout_seconds);
  return job;
}

// Polls GetJob until the job is in `state` (or 10 s pass).
absl::StatusOr<v1::JobUpdate> AwaitState(Client& client, const std::string& id,
                                         v1::JobState state) {
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  for (;;) {
    absl::StatusOr<v1::JobUpdate> update = client.GetJob(id);
    if (!update.ok() || update->state() == state || absl::Now() > give_up) return update;
    absl::SleepFor(absl::Milliseconds(2));
  }
}

class JobApiTest : public ::testing::Test {
 protected:
  void Start(int workers, int queue_depth = 8, absl::Duration job_ttl = absl::Minutes(1)) {
    server_ = StartJobServer(workers, queue_depth, job_ttl);
    ASSERT_NE(server_, nullptr);
    client_ =
        std::make_unique<Client>(server_->address(), ClientOptions{.deadline = absl::Seconds(20)});
  }
  // Submits and fails the test on an error.
  std::string MustSubmit(const v1::JobRequest& request) {
    absl::StatusOr<std::string> id = client_->Submit(request);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or("");
  }
  // A small synchronous job that must run at once (the determinant of a 2 x 2 matrix).
  void ExpectSmallJobRunsAtOnce() {
    const absl::Time start = absl::Now();
    absl::StatusOr<v1::DeterminantResponse> response = client_->Determinant(SmallDeterminant());
    const absl::Duration took = absl::Now() - start;
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_NEAR(response->value(), 5.0, 1e-14);
    EXPECT_LT(took, kPromptly);
  }

  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(JobApiTest, WatchStreamsRisingProgressAndEndsWithTheResult) {
  Start(/*workers=*/1);
  constexpr int kN = 24;
  const std::string id = MustSubmit(AsJob(OnesPermanent(kN)));
  std::vector<v1::JobUpdate> updates;
  absl::StatusOr<v1::JobUpdate> last =
      client_->Watch(id, [&](const v1::JobUpdate& update) { updates.push_back(update); });
  ASSERT_TRUE(last.ok()) << last.status();

  EXPECT_EQ(last->job_id(), id);
  EXPECT_EQ(last->state(), v1::JOB_STATE_SUCCEEDED);
  ASSERT_TRUE(last->has_permanent());
  EXPECT_EQ(last->permanent().exact(), Factorial(kN));
  EXPECT_FALSE(last->has_error());
  EXPECT_EQ(last->progress(), 1.0);
  EXPECT_GT(last->running_seconds(), 0.0);

  // Several updates while it ran, progress never going back, with an ETA once there is progress.
  int running_with_progress = 0;
  for (size_t k = 0; k < updates.size(); ++k) {
    if (k > 0) {
      EXPECT_GE(updates[k].progress(), updates[k - 1].progress());
    }
    if (updates[k].state() == v1::JOB_STATE_RUNNING && updates[k].progress() > 0.0) {
      ++running_with_progress;
      EXPECT_GE(updates[k].eta_seconds(), 0.0);
      EXPECT_FALSE(updates[k].has_permanent());
    }
  }
  EXPECT_GE(running_with_progress, 2) << updates.size() << " updates";
  EXPECT_EQ(updates.back().state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(JobApiTest, GetJobReturnsTheResultOnceFinished) {
  Start(/*workers=*/1);
  const std::string id = MustSubmit(AsJob(SmallDeterminant()));
  absl::StatusOr<v1::JobUpdate> done = AwaitState(*client_, id, v1::JOB_STATE_SUCCEEDED);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED);
  ASSERT_TRUE(done->has_determinant());
  EXPECT_NEAR(done->determinant().value(), 5.0, 1e-14);
  EXPECT_EQ(done->eta_seconds(), -1.0);
  // Watching a finished job gives its one final update.
  std::vector<v1::JobUpdate> updates;
  absl::StatusOr<v1::JobUpdate> watched =
      client_->Watch(id, [&](const v1::JobUpdate& update) { updates.push_back(update); });
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_THAT(updates, SizeIs(1));
  EXPECT_NEAR(watched->determinant().value(), 5.0, 1e-14);
}

TEST_F(JobApiTest, FailedJobCarriesTheErrorOfTheSynchronousCall) {
  Start(/*workers=*/1);
  v1::DeterminantRequest request = SmallDeterminant();
  request.set_modulus(7);  // a modulus needs INT64 input: refused at Submit, nothing queued
  absl::StatusOr<std::string> refused = client_->Submit(AsJob(request));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  // Singular matrices succeed; an LU solve of one fails in the job, with the backend's code.
  v1::JobRequest job;
  v1::FactorizeRequest* factorize = job.mutable_factorize();
  *factorize->mutable_matrix() = MakeMatrix<double>(2, 2, {1.0, 2.0, 2.0, 4.0});
  *factorize->mutable_rhs() = MakeMatrix<double>(2, 1, {1.0, 1.0});
  factorize->set_kind(v1::FACTORIZATION_KIND_LU);
  absl::StatusOr<v1::FactorizeResponse> sync = client_->Factorize(*factorize);
  ASSERT_FALSE(sync.ok());
  const std::string id = MustSubmit(job);
  absl::StatusOr<v1::JobUpdate> last = client_->Watch(id);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(last->error().code(), static_cast<int>(sync.status().code()));
  EXPECT_EQ(last->error().message(), sync.status().message());
  EXPECT_FALSE(last->has_factorize());
}

TEST_F(JobApiTest, SubmitRefusesMalformedJobRequests) {
  Start(/*workers=*/1);
  v1::JobRequest empty;
  absl::StatusOr<std::string> none = client_->Submit(empty);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("request"));
  absl::StatusOr<std::string> negative = client_->Submit(AsJob(SmallDeterminant(), -1.0));
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(negative.status().message()), HasSubstr("timeout_seconds"));
  v1::PermanentRequest too_big;
  *too_big.mutable_matrix() = MakeMatrix<double>(31, 31, std::vector<double>(31 * 31, 1.0));
  EXPECT_EQ(client_->Submit(AsJob(too_big)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server_->scheduler().queued() + server_->scheduler().running(), 0);
}

TEST_F(JobApiTest, UnknownJobIdIsNotFoundEverywhere) {
  Start(/*workers=*/1);
  const std::string unknown = "0123456789abcdef0123456789abcdef";
  EXPECT_EQ(client_->GetJob(unknown).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->Cancel(unknown).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->Watch(unknown).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->GetJob("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(JobApiTest, CancelStopsARunningLongPermanentPromptlyAndFreesItsWorker) {
  Start(/*workers=*/1);
  const std::string id = MustSubmit(AsJob(LongPermanent()));
  ASSERT_TRUE(AwaitState(*client_, id, v1::JOB_STATE_RUNNING).ok());

  const absl::Time start = absl::Now();
  absl::StatusOr<v1::JobUpdate> reply = client_->Cancel(id);
  ASSERT_TRUE(reply.ok()) << reply.status();
  absl::StatusOr<v1::JobUpdate> last = client_->Watch(id);
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(last->error().code(), static_cast<int>(absl::StatusCode::kCancelled));
  EXPECT_THAT(last->error().message(), HasSubstr("Cancel"));
  EXPECT_LT(last->progress(), 1.0);
  EXPECT_LT(took, kPromptly);
  std::cout << "cancelling a running n = 30 permanent took " << absl::FormatDuration(took) << "\n";
  // The only worker is free again.
  ExpectSmallJobRunsAtOnce();
  // Cancelling again changes nothing.
  absl::StatusOr<v1::JobUpdate> again = client_->Cancel(id);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->state(), v1::JOB_STATE_CANCELLED);
}

TEST_F(JobApiTest, CancelEndsAQueuedJobAtOnce) {
  Start(/*workers=*/1);
  const std::string running = MustSubmit(AsJob(LongPermanent()));
  ASSERT_TRUE(AwaitState(*client_, running, v1::JOB_STATE_RUNNING).ok());
  const std::string queued = MustSubmit(AsJob(SmallDeterminant()));
  absl::StatusOr<v1::JobUpdate> reply = client_->Cancel(queued);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->state(), v1::JOB_STATE_CANCELLED);  // in the reply itself
  EXPECT_EQ(reply->running_seconds(), 0.0);
  ASSERT_TRUE(client_->Cancel(running).ok());
}

TEST_F(JobApiTest, ClientDeadlineStopsARunningPermanentAndFreesItsWorker) {
  Start(/*workers=*/1);
  client_->set_deadline(absl::Milliseconds(300));
  absl::StatusOr<v1::PermanentResponse> response = client_->Permanent(LongPermanent());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
  client_->set_deadline(absl::Seconds(20));
  // The call's cancellation cancels its job, and the permanent stops at its next chunk.
  ExpectSmallJobRunsAtOnce();
}

TEST_F(JobApiTest, DeadlinePassingWhileQueuedFailsTheJobUnrun) {
  Start(/*workers=*/1);
  const std::string running = MustSubmit(AsJob(LongPermanent()));
  ASSERT_TRUE(AwaitState(*client_, running, v1::JOB_STATE_RUNNING).ok());
  const std::string late = MustSubmit(AsJob(SmallDeterminant(), /*timeout_seconds=*/0.1));
  absl::StatusOr<v1::JobUpdate> last = client_->Watch(late);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(last->error().code(), static_cast<int>(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(last->error().message(), HasSubstr("never ran"));
  EXPECT_EQ(last->running_seconds(), 0.0);
  EXPECT_GE(last->queued_seconds(), 0.09);  // the deadline counts from just before queueing
  absl::StatusOr<v1::JobUpdate> blocker = client_->GetJob(running);
  ASSERT_TRUE(blocker.ok());
  EXPECT_EQ(blocker->state(), v1::JOB_STATE_RUNNING);
  ASSERT_TRUE(client_->Cancel(running).ok());
}

TEST_F(JobApiTest, SynchronousCallWhoseDeadlinePassesWhileQueuedLeavesTheQueue) {
  Start(/*workers=*/1);
  const std::string running = MustSubmit(AsJob(LongPermanent()));
  ASSERT_TRUE(AwaitState(*client_, running, v1::JOB_STATE_RUNNING).ok());
  client_->set_deadline(absl::Milliseconds(100));
  absl::StatusOr<v1::DeterminantResponse> response = client_->Determinant(SmallDeterminant());
  client_->set_deadline(absl::Seconds(20));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
  // Gone from the queue without waiting for the worker, which is still busy.
  const absl::Time give_up = absl::Now() + kPromptly;
  while (server_->scheduler().queued() > 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_EQ(server_->scheduler().queued(), 0);
  absl::StatusOr<v1::JobUpdate> blocker = client_->GetJob(running);
  ASSERT_TRUE(blocker.ok());
  EXPECT_EQ(blocker->state(), v1::JOB_STATE_RUNNING);
  ASSERT_TRUE(client_->Cancel(running).ok());
}

TEST_F(JobApiTest, FullQueueRefusesSynchronousAndAsynchronousCallsAtOnce) {
  Start(/*workers=*/1, /*queue_depth=*/1);
  const std::string running = MustSubmit(AsJob(LongPermanent()));
  ASSERT_TRUE(AwaitState(*client_, running, v1::JOB_STATE_RUNNING).ok());
  const std::string waiting = MustSubmit(AsJob(LongPermanent()));  // fills the large lane

  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> refused = client_->Submit(AsJob(LongPermanent()));
  absl::StatusOr<v1::PermanentResponse> sync = client_->Permanent(LongPermanent());
  EXPECT_LT(absl::Now() - start, kPromptly);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("queue is full"));
  EXPECT_EQ(sync.status().code(), absl::StatusCode::kResourceExhausted) << sync.status();

  ASSERT_TRUE(client_->Cancel(waiting).ok());
  ASSERT_TRUE(client_->Cancel(running).ok());
}

TEST_F(JobApiTest, SmallJobRunsBesideLongOnes) {
  Start(/*workers=*/2);
  const std::string first = MustSubmit(AsJob(LongPermanent()));
  const std::string second = MustSubmit(AsJob(LongPermanent()));
  ASSERT_TRUE(AwaitState(*client_, first, v1::JOB_STATE_RUNNING).ok());
  ExpectSmallJobRunsAtOnce();
  // The second long job waits: one worker stays kept for small jobs.
  absl::StatusOr<v1::JobUpdate> waiting = client_->GetJob(second);
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->state(), v1::JOB_STATE_QUEUED);
  ASSERT_TRUE(client_->Cancel(second).ok());
  ASSERT_TRUE(client_->Cancel(first).ok());
}

TEST_F(JobApiTest, FinishedJobIsForgottenAfterTheTtl) {
  constexpr absl::Duration kTtl = absl::Milliseconds(200);
  Start(/*workers=*/1, /*queue_depth=*/8, kTtl);
  const std::string id = MustSubmit(AsJob(SmallDeterminant()));
  absl::StatusOr<v1::JobUpdate> done = client_->Watch(id);
  ASSERT_TRUE(done.ok()) << done.status();
  const absl::Time finished = absl::Now();
  absl::StatusOr<v1::JobUpdate> update = client_->GetJob(id);
  const absl::Duration kept_at_least = absl::Now() - finished;
  if (kept_at_least < kTtl) {
    EXPECT_TRUE(update.ok()) << update.status();
  }
  while (update.ok() && absl::Now() - finished < absl::Seconds(10)) {
    absl::SleepFor(absl::Milliseconds(10));
    update = client_->GetJob(id);
  }
  EXPECT_EQ(update.status().code(), absl::StatusCode::kNotFound) << update.status();
  EXPECT_LT(absl::Now() - finished, kTtl + kPromptly);
}

}  // namespace
}  // namespace matrixd::server::testing
