// The server asks Backend::Supports before queueing (server/request_jobs.cc): a request the backend
// cannot run is answered at once with the backend's own status, never queued and never run, even
// while the queue is full; the metrics wrapper (server/metrics_backend.h) passes the answer on.
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

// "At once" on CI's two busy cores: a refused request takes a few milliseconds.
constexpr absl::Duration kPromptly = absl::Seconds(1);

TEST(BackendSupportsServerTest, PermanentAboveTheBackendsOrderIsUnimplementedAtOnce) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.limits.max_permanent_n = 63;  // above the CPU backend's 62
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      MatrixServer::Start(MakeCpuBackend({.threads = 1}), options);
  ASSERT_TRUE(server.ok()) << server.status();
  // A 2^62-step walk, were it queued, would outlive the test's deadline by far.
  Client client((*server)->address(), {.deadline = absl::Seconds(10)});
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(63, 63, std::vector<double>(63 * 63, 1.0));
  absl::StatusOr<v1::PermanentResponse> response = client.Permanent(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(response.status().message(), HasSubstr("permanents up to n = 62"));
  EXPECT_EQ((*server)->scheduler().queued(), 0);
}

// Refuses every product (INVALID_ARGUMENT) and permanents above n = 3 (UNIMPLEMENTED); a
// permanent it supports holds its worker until cancelled. Counts the operations that ran.
class RefusingBackend final : public Backend {
 public:
  static constexpr int kLargestPermanent = 3;

  explicit RefusingBackend(std::atomic<int>* ran) : ran_(ran) {}

  std::string_view name() const override { return "refusing"; }
  std::string device() const override { return "refusing device"; }

  absl::Status Supports(const OperationQuery& query) const override {
    if (query.operation == Operation::kMultiply) {
      return absl::InvalidArgumentError("a: this backend multiplies nothing");
    }
    if (query.operation == Operation::kPermanent && query.rows > kLargestPermanent) {
      return absl::UnimplementedError("matrix: this backend stops at n = 3");
    }
    return Backend::Supports(query);
  }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    ++*ran_;
    return cpu_->Determinant(a, options, control);
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    ++*ran_;
    return cpu_->Factorize(a, options, rhs, control);
  }
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override {
    ++*ran_;
    return cpu_->Solve(factorization, rhs, options, control);
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    ++*ran_;
    return cpu_->Multiply(a, b, options, control);
  }
  // Until cancelled (at most 10 s, so that a broken test fails rather than hangs).
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& /*a*/,
                                            const PermanentOptions& /*options*/,
                                            JobControl* control) override {
    ++*ran_;
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!IsCancelled(control) && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
    return absl::CancelledError("permanent cancelled");
  }

 private:
  std::atomic<int>* ran_;
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.threads = 1});
};

v1::PermanentRequest OnesPermanent(int n) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(n, n, std::vector<double>(n * n, 1.0));
  return request;
}

v1::MultiplyRequest SmallProduct() {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(2, 2, {1, 2, 3, 4});
  *request.mutable_b() = MakeMatrix<double>(2, 2, {1, 0, 0, 1});
  return request;
}

v1::JobRequest AsJob(const v1::PermanentRequest& request) {
  v1::JobRequest job;
  *job.mutable_permanent() = request;
  return job;
}

v1::JobRequest AsJob(const v1::MultiplyRequest& request) {
  v1::JobRequest job;
  *job.mutable_multiply() = request;
  return job;
}

// One worker and room for one waiting job, both taken by permanents the backend holds: the next
// supported request finds the queue full.
class FullQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.limits = TestLimits();
    options.scheduler.workers = 1;
    options.scheduler.queue_depth = 1;
    absl::StatusOr<std::unique_ptr<MatrixServer>> server =
        MatrixServer::Start(std::make_unique<RefusingBackend>(&ran_), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ =
        std::make_unique<Client>(server_->address(), ClientOptions{.deadline = absl::Seconds(20)});
    running_ = MustSubmit(AsJob(OnesPermanent(2)));
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (ran_ == 0 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
    ASSERT_EQ(ran_, 1) << "the first permanent never started";
    waiting_ = MustSubmit(AsJob(OnesPermanent(2)));
    ASSERT_EQ(server_->scheduler().queued(), 1);
  }
  void TearDown() override {
    if (client_ == nullptr) return;
    for (const std::string& id : {waiting_, running_}) {
      if (!id.empty()) {
        EXPECT_TRUE(client_->Cancel(id).ok());
      }
    }
  }

  std::string MustSubmit(const v1::JobRequest& request) {
    absl::StatusOr<std::string> id = client_->Submit(request);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or("");
  }

  std::atomic<int> ran_{0};
  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
  std::string running_;
  std::string waiting_;
};

TEST_F(FullQueueTest, SupportedRequestFindsTheQueueFull) {
  const absl::StatusOr<v1::PermanentResponse> response = client_->Permanent(OnesPermanent(3));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted) << response.status();
}

TEST_F(FullQueueTest, UnsupportedSizeIsUnimplementedAtOnceWithTheBackendsMessage) {
  const absl::Time start = absl::Now();
  const absl::StatusOr<v1::PermanentResponse> response = client_->Permanent(OnesPermanent(4));
  EXPECT_LT(absl::Now() - start, kPromptly);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnimplemented) << response.status();
  EXPECT_THAT(response.status().message(), HasSubstr("this backend stops at n = 3"));
  EXPECT_EQ(server_->scheduler().queued(), 1);
  EXPECT_EQ(ran_, 1);
}

TEST_F(FullQueueTest, UnsupportedOperationIsInvalidArgumentAtOnce) {
  const absl::Time start = absl::Now();
  const absl::StatusOr<v1::MultiplyResponse> response = client_->Multiply(SmallProduct());
  EXPECT_LT(absl::Now() - start, kPromptly);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument) << response.status();
  EXPECT_THAT(response.status().message(), HasSubstr("this backend multiplies nothing"));
  EXPECT_EQ(ran_, 1);
}

TEST_F(FullQueueTest, SubmittedUnsupportedRequestsAreRefusedAtOnceToo) {
  const absl::Time start = absl::Now();
  const absl::StatusOr<std::string> product = client_->Submit(AsJob(SmallProduct()));
  const absl::StatusOr<std::string> permanent = client_->Submit(AsJob(OnesPermanent(4)));
  EXPECT_LT(absl::Now() - start, kPromptly);
  EXPECT_EQ(product.status().code(), absl::StatusCode::kInvalidArgument) << product.status();
  EXPECT_EQ(permanent.status().code(), absl::StatusCode::kUnimplemented) << permanent.status();
  EXPECT_EQ(server_->scheduler().queued(), 1);
  EXPECT_EQ(ran_, 1);
}

}  // namespace
}  // namespace matrixd::server::testing
