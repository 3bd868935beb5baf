// The service on the gRPC callback API, its computing calls on either API
// (ServerOptions::computing_calls), end to end on the CPU backend: a client that goes away mid-job
// cancels the job and frees its worker, queued calls hold no server thread, and a Watch whose
// client disconnects ends cleanly while the job runs on.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "matrixd/v1/matrixd.grpc.pb.h"
#include "tests/server/metrics_test_support.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

// Upper bound for "at once" on CI's two busy cores.
constexpr absl::Duration kPromptly = absl::Seconds(1);

// Waits up to 10 s for `condition`; returns whether it became true.
template <typename Condition>
bool Eventually(Condition condition) {
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!condition()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// Threads of this process (server and client share it).
int ThreadCount() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++count;
  }
  return count;
}

// A 30 x 30 permanent takes many seconds on the CPU: it only ever ends by being cancelled.
v1::PermanentRequest LongPermanent() {
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(30, 30, std::vector<double>(900, 0.5));
  return request;
}

v1::DeterminantRequest SmallDeterminant() {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0});  // det 5
  return request;
}

class CallbackServiceTest : public ::testing::TestWithParam<ServerOptions::ComputingCalls> {
 protected:
  // One worker, so that a long job blocks everything behind it.
  void SetUp() override {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.limits = TestLimits();
    options.limits.max_permanent_n = 30;
    options.scheduler.workers = 1;
    options.scheduler.queue_depth = 512;
    options.computing_calls = GetParam();
    options.cq_threads = 2;
    absl::StatusOr<std::unique_ptr<MatrixServer>> server =
        MatrixServer::Start(MakeCpuBackend({.threads = 2}), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ =
        std::make_unique<Client>(server_->address(), ClientOptions{.deadline = absl::Seconds(20)});
    stub_ = v1::MatrixService::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  // Submits the long permanent as a job and waits until it runs.
  std::string StartLongJob() {
    v1::JobRequest request;
    *request.mutable_permanent() = LongPermanent();
    absl::StatusOr<std::string> id = client_->Submit(request);
    EXPECT_TRUE(id.ok()) << id.status();
    EXPECT_TRUE(Eventually([&] { return server_->scheduler().running() == 1; }));
    return id.value_or("");
  }

  double JobsEnded(const char* op, const char* status) {
    return SampleValue(server_->metrics().Serialize(), "matrixd_jobs_total",
                       {{"op", op}, {"status", status}})
        .value_or(-1.0);
  }

  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<v1::MatrixService::Stub> stub_;
};

TEST_P(CallbackServiceTest, ClientCancellingMidJobCancelsTheJobAndFreesItsWorker) {
  grpc::ClientContext context;
  v1::PermanentRequest request = LongPermanent();
  v1::PermanentResponse response;
  absl::Notification done;
  grpc::Status status;
  stub_->async()->Permanent(&context, &request, &response, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().running() == 1; }));

  const absl::Time start = absl::Now();
  context.TryCancel();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  // The running job saw the cancellation: it ended as CANCELLED and gave its worker back.
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().running() == 0; }));
  EXPECT_LT(absl::Now() - start, kPromptly);
  EXPECT_TRUE(Eventually([&] { return JobsEnded("permanent", "CANCELLED") == 1.0; }));
  absl::StatusOr<v1::DeterminantResponse> small = client_->Determinant(SmallDeterminant());
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_NEAR(small->value(), 5.0, 1e-14);
  EXPECT_LT(absl::Now() - start, kPromptly);
}

TEST_P(CallbackServiceTest, ManyQueuedCallsHoldNoServerThreadAndAllComplete) {
  {
    // Connects the channel (and starts its threads) before counting.
    grpc::ClientContext context;
    v1::DeterminantResponse response;
    ASSERT_TRUE(stub_->Determinant(&context, SmallDeterminant(), &response).ok());
  }
  const std::string blocker = StartLongJob();
  const int threads_before = ThreadCount();

  constexpr int kCalls = 200;
  struct Call {
    grpc::ClientContext context;
    v1::DeterminantRequest request = SmallDeterminant();
    v1::DeterminantResponse response;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  absl::Mutex mutex;
  int completed = 0;
  for (int c = 0; c < kCalls; ++c) {
    calls.push_back(std::make_unique<Call>());
    Call* call = calls.back().get();
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    stub_->async()->Determinant(&call->context, &call->request, &call->response,
                                [call, &mutex, &completed](grpc::Status status) {
                                  absl::MutexLock lock(&mutex);
                                  call->status = std::move(status);
                                  ++completed;
                                });
  }
  // All of them wait in the queue behind the long job, each without a thread of its own.
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().queued() == kCalls; }));
  const int threads_queued = ThreadCount();
  std::cout << threads_before << " threads before, " << threads_queued << " with " << kCalls
            << " calls queued\n";
  EXPECT_LT(threads_queued - threads_before, 32)
      << threads_before << " threads before, " << threads_queued << " with " << kCalls
      << " calls queued";

  ASSERT_TRUE(client_->Cancel(blocker).ok());
  {
    absl::MutexLock lock(&mutex);
    auto all_done = [&completed] { return completed == kCalls; };
    ASSERT_TRUE(mutex.AwaitWithTimeout(absl::Condition(&all_done), absl::Seconds(30)));
  }
  for (const std::unique_ptr<Call>& call : calls) {
    ASSERT_TRUE(call->status.ok()) << call->status.error_message();
    EXPECT_NEAR(call->response.value(), 5.0, 1e-14);
  }
}

TEST_P(CallbackServiceTest, WatchWhoseClientDisconnectsEndsCleanlyAndTheJobRunsOn) {
  const std::string id = StartLongJob();
  {
    grpc::ClientContext context;
    v1::JobId request;
    request.set_job_id(id);
    std::unique_ptr<grpc::ClientReader<v1::JobUpdate>> reader = stub_->Watch(&context, request);
    v1::JobUpdate update;
    ASSERT_TRUE(reader->Read(&update));  // the current state, at once
    EXPECT_EQ(update.state(), v1::JOB_STATE_RUNNING);
    context.TryCancel();
    while (reader->Read(&update)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // Ending the Watch left the job running.
  absl::StatusOr<v1::JobUpdate> running = client_->GetJob(id);
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ(running->state(), v1::JOB_STATE_RUNNING);

  // A second watcher still follows it to its end.
  ASSERT_TRUE(client_->Cancel(id).ok());
  absl::StatusOr<v1::JobUpdate> last = client_->Watch(id);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->state(), v1::JOB_STATE_CANCELLED);

  // No call is left behind: shutting down does not wait for its drain timeout.
  const absl::Time start = absl::Now();
  server_->Drain(/*timeout=*/absl::Seconds(5));
  server_->Wait();
  EXPECT_LT(absl::Now() - start, kPromptly);
}

INSTANTIATE_TEST_SUITE_P(BothApis, CallbackServiceTest,
                         ::testing::Values(ServerOptions::ComputingCalls::kCallback,
                                           ServerOptions::ComputingCalls::kAsync),
                         [](const ::testing::TestParamInfo<ServerOptions::ComputingCalls>& info) {
                           return info.param == ServerOptions::ComputingCalls::kAsync ? "Async"
                                                                                      : "Callback";
                         });

}  // namespace
}  // namespace matrixd::server::testing
