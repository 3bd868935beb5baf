// The computing calls on either gRPC API (ServerOptions::computing_calls,
// server/async_job_calls.h), end to end on the CPU backend: the same answers, the same refusals
// naming the field, quota refusals counted, a deadline that cancels its job, the response-size
// limit, metrics per RPC, tokens, the other methods and health still served, and a clean shutdown
// with calls in flight. (Cancellation by the client and queued calls: callback_service_test.cc, on
// both APIs.)
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matrixd/v1/matrixd.grpc.pb.h"
#include "tests/server/metrics_test_support.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;
using ComputingCalls = ServerOptions::ComputingCalls;

// The values 1, 2, ... of a rows x cols matrix, scaled by `scale`.
v1::Matrix Counting(int64_t rows, int64_t cols, double scale = 1.0) {
  std::vector<double> values(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < values.size(); ++i) values[i] = scale * static_cast<double>(i + 1);
  return MakeMatrix<double>(rows, cols, values);
}

// A diagonally dominant n x n matrix: far from singular.
v1::Matrix Dominant(int64_t n) {
  std::vector<double> values(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      values[static_cast<size_t>(i * n + j)] =
          1.0 / static_cast<double>(i + 2 * j + 1) + (i == j ? static_cast<double>(n) : 0.0);
    }
  }
  return MakeMatrix<double>(n, n, values);
}

ServerOptions OptionsFor(ComputingCalls api) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.limits = TestLimits();
  options.limits.max_permanent_n = 30;
  options.limits.max_elements = 1 << 18;
  options.max_message_bytes = 1 << 20;
  options.scheduler.workers = 1;
  options.computing_calls = api;
  options.cq_threads = 2;
  return options;
}

std::unique_ptr<MatrixServer> Started(const ServerOptions& options) {
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      MatrixServer::Start(MakeCpuBackend({.threads = 1}), options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::string ApiName(const ::testing::TestParamInfo<ComputingCalls>& info) {
  return info.param == ComputingCalls::kAsync ? "Async" : "Callback";
}

class AsyncJobCallsTest : public ::testing::TestWithParam<ComputingCalls> {
 protected:
  void SetUp() override { Restart(OptionsFor(GetParam())); }

  void Restart(const ServerOptions& options) {
    client_.reset();
    server_ = Started(options);
    ASSERT_NE(server_, nullptr);
    client_ =
        std::make_unique<Client>(server_->address(), ClientOptions{.deadline = absl::Seconds(20)});
  }

  std::optional<double> Sample(absl::string_view name, const LabelSet& labels) {
    return SampleValue(server_->metrics().Serialize(), name, labels);
  }

  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_P(AsyncJobCallsTest, ComputingCallsAnswer) {
  v1::DeterminantRequest det;
  *det.mutable_matrix() = MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0});
  absl::StatusOr<v1::DeterminantResponse> d = client_->Determinant(det);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NEAR(d->value(), 5.0, 1e-14);

  v1::FactorizeRequest lu;
  *lu.mutable_matrix() = MakeMatrix<double>(2, 2, {1.0, 2.0, 4.0, 3.0});
  lu.set_kind(v1::FACTORIZATION_KIND_LU);
  absl::StatusOr<v1::FactorizeResponse> f = client_->Factorize(lu);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  absl::StatusOr<std::vector<double>> factors = ReadMatrix<double>(f->lu());
  ASSERT_TRUE(factors.ok()) << factors.status();
  // Partial pivoting puts row 2 first: U = [4 3; 0 1.25], L21 = 0.25.
  EXPECT_THAT(*factors, ::testing::ElementsAre(4.0, 3.0, 0.25, 1.25));
  EXPECT_FALSE(f->singular());

  v1::MultiplyRequest product;
  *product.mutable_a() = Counting(2, 3);
  *product.mutable_b() = Counting(3, 2);
  absl::StatusOr<v1::MultiplyResponse> m = client_->Multiply(product);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<std::vector<double>> c = ReadMatrix<double>(m->c());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, ::testing::ElementsAre(22.0, 28.0, 49.0, 64.0));

  v1::PermanentRequest perm;
  *perm.mutable_matrix() = MakeMatrix<double>(2, 2, {1.0, 2.0, 3.0, 4.0});
  absl::StatusOr<v1::PermanentResponse> p = client_->Permanent(perm);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->value(), 10.0, 1e-12);
}

TEST_P(AsyncJobCallsTest, UnixDomainSocketServesSameHostClients) {
  const std::string path = ::testing::TempDir() + "matrixd-" + std::to_string(getpid()) + ".sock";
  std::remove(path.c_str());
  ServerOptions options = OptionsFor(GetParam());
  options.listen_address = "unix:" + path;
  Restart(options);
  EXPECT_EQ(server_->address(), "unix:" + path);
  v1::DeterminantRequest det;
  *det.mutable_matrix() = MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0});
  absl::StatusOr<v1::DeterminantResponse> d = client_->Determinant(det);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NEAR(d->value(), 5.0, 1e-14);
  absl::StatusOr<bool> healthy = client_->Healthy();
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_TRUE(*healthy);
  client_.reset();
  server_.reset();
  std::remove(path.c_str());
}

TEST_P(AsyncJobCallsTest, InvalidRequestIsInvalidArgumentNamingTheField) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = Counting(2, 3);
  const absl::Status status = client_->Determinant(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("matrix"));
}

TEST_P(AsyncJobCallsTest, PassedDeadlineIsDeadlineExceededAndCancelsTheJob) {
  auto stub = v1::MatrixService::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  v1::PermanentRequest request;  // many seconds of work: it ends only by being cancelled
  *request.mutable_matrix() = MakeMatrix<double>(30, 30, std::vector<double>(900, 0.5));
  v1::PermanentResponse response;
  EXPECT_EQ(stub->Permanent(&context, request, &response).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (Sample("matrixd_jobs_total", {{"op", "permanent"}, {"status", "DEADLINE_EXCEEDED"}})
                 .value_or(0) != 1.0 &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(server_->scheduler().running(), 0);
  EXPECT_EQ(Sample("matrixd_jobs_total", {{"op", "permanent"}, {"status", "DEADLINE_EXCEEDED"}}),
            1.0);
}

TEST_P(AsyncJobCallsTest, ResponseOverTheMessageLimitIsResourceExhausted) {
  v1::MultiplyRequest request;  // a 128 x 1100 float64 product: 1.1 MB, over the 1 MiB limit
  *request.mutable_a() = Counting(128, 1);
  *request.mutable_b() = Counting(1, 1100, 0.5);
  const absl::Status status = client_->Multiply(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("--max_message_bytes"));
}

TEST_P(AsyncJobCallsTest, QuotaRefusalIsCountedForTheClient) {
  ServerOptions options = OptionsFor(GetParam());
  options.authenticator =
      std::make_shared<ClientAuthenticator>(options.limits, ClientQuota{.max_matrix_elements = 16});
  Restart(options);
  v1::DeterminantRequest request;
  *request.mutable_matrix() = Counting(5, 5);
  const absl::Status status = client_->Determinant(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("max_matrix_elements"));
  EXPECT_EQ(Sample("matrixd_client_rejections_total",
                   {{"client", "anonymous"}, {"reason", "max_matrix_elements"}}),
            1.0);
}

TEST_P(AsyncJobCallsTest, TokensIdentifyTheCaller) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/async-job-calls-", getpid());
  std::ofstream(path) << "alice tok-alice\n";
  absl::StatusOr<std::unique_ptr<ClientAuthenticator>> authenticator =
      ClientAuthenticator::FromFile(path, TestLimits(), {});
  std::remove(path.c_str());
  ASSERT_TRUE(authenticator.ok()) << authenticator.status();
  ServerOptions options = OptionsFor(GetParam());
  options.authenticator = *std::move(authenticator);
  Restart(options);
  v1::DeterminantRequest request;
  *request.mutable_matrix() = Counting(1, 1, 7.0);
  EXPECT_EQ(client_->Determinant(request).status().code(), absl::StatusCode::kUnauthenticated);
  Client alice(server_->address(), {.deadline = absl::Seconds(20), .token = "tok-alice"});
  absl::StatusOr<v1::DeterminantResponse> response = alice.Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->value(), 7.0);
}

TEST_P(AsyncJobCallsTest, EveryRpcIsTimedByTheMetricsInterceptor) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = Counting(1, 1, 3.0);
  ASSERT_TRUE(client_->Determinant(request).ok());
  *request.mutable_matrix() = Counting(1, 2);
  ASSERT_FALSE(client_->Determinant(request).ok());
  ASSERT_TRUE(client_->Healthy().ok());
  for (const char* code : {"OK", "INVALID_ARGUMENT"}) {
    EXPECT_EQ(Sample("matrixd_rpc_duration_seconds_count",
                     {{"method", "matrixd.v1.MatrixService/Determinant"}, {"code", code}}),
              1.0)
        << code;
  }
}

TEST_P(AsyncJobCallsTest, OtherMethodsAndHealthStayServedAndUnknownOnesUnimplemented) {
  EXPECT_TRUE(client_->Healthy().value_or(false));
  v1::JobRequest job;
  *job.mutable_determinant()->mutable_matrix() = Counting(1, 1, 4.0);
  absl::StatusOr<std::string> id = client_->Submit(job);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::JobUpdate> last = client_->Watch(*id);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->state(), v1::JOB_STATE_SUCCEEDED);

  grpc::GenericStub generic(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  grpc::Slice nothing("");
  const grpc::ByteBuffer empty(&nothing, 1);
  grpc::ByteBuffer reply;
  absl::Notification done;
  grpc::Status status;
  generic.UnaryCall(&context, "/matrixd.v1.MatrixService/NoSuchMethod", {}, &empty, &reply,
                    [&](grpc::Status s) {
                      status = std::move(s);
                      done.Notify();
                    });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST_P(AsyncJobCallsTest, ShutdownWithCallsInFlightEndsThemAll) {
  auto stub = v1::MatrixService::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  constexpr int kCalls = 20;
  struct Call {
    grpc::ClientContext context;
    v1::PermanentRequest request;
    v1::PermanentResponse response;
    grpc::Status status;
    absl::Notification done;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::atomic<int> ended{0};
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::make_unique<Call>());
    Call* call = calls.back().get();
    // The first runs for many seconds and holds the only worker; the others run inline or queue.
    const int n = i == 0 ? 30 : 3;
    *call->request.mutable_matrix() =
        MakeMatrix<double>(n, n, std::vector<double>(static_cast<size_t>(n * n), 0.5));
    stub->async()->Permanent(&call->context, &call->request, &call->response,
                             [call, &ended](grpc::Status status) {
                               call->status = std::move(status);
                               ++ended;
                               call->done.Notify();
                             });
    if (i == 0) {
      const absl::Time give_up = absl::Now() + absl::Seconds(10);
      while (server_->scheduler().running() == 0 && absl::Now() < give_up) {
        absl::SleepFor(absl::Milliseconds(2));
      }
    }
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (ended.load() + server_->scheduler().queued() < kCalls - 1 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  const DrainReport report = server_->Drain(absl::Milliseconds(100));
  server_->Wait();
  EXPECT_GE(report.jobs_stopped, 1);  // the long one, and small ones queued behind it
  for (const std::unique_ptr<Call>& call : calls) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  }
  EXPECT_EQ(calls[0]->status.error_code(), grpc::StatusCode::UNAVAILABLE);
  for (int i = 1; i < kCalls; ++i) {
    if (calls[i]->status.ok()) {
      EXPECT_NEAR(calls[i]->response.value(), 6 * 0.125, 1e-12) << i;  // 3! products of 0.5^3
    } else {
      EXPECT_EQ(calls[i]->status.error_code(), grpc::StatusCode::UNAVAILABLE) << i;
    }
  }
  client_.reset();
  server_.reset();  // the queues and their threads go without a leak (see the sanitizer build)
}

TEST_P(AsyncJobCallsTest, CompletionQueuesAsConfigured) {
  EXPECT_EQ(server_->cq_threads(), GetParam() == ComputingCalls::kAsync ? 2 : 0);
  ServerOptions options = OptionsFor(GetParam());
  options.cq_threads = -1;
  EXPECT_EQ(MatrixServer::Start(MakeCpuBackend({.threads = 1}), options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(BothApis, AsyncJobCallsTest,
                         ::testing::Values(ComputingCalls::kCallback, ComputingCalls::kAsync),
                         ApiName);

// The two APIs give the same numbers for the same requests.
TEST(AsyncJobCalls, AnswersMatchTheCallbackApis) {
  std::unique_ptr<MatrixServer> callback = Started(OptionsFor(ComputingCalls::kCallback));
  std::unique_ptr<MatrixServer> async = Started(OptionsFor(ComputingCalls::kAsync));
  ASSERT_NE(callback, nullptr);
  ASSERT_NE(async, nullptr);
  Client a(callback->address(), {.deadline = absl::Seconds(20)});
  Client b(async->address(), {.deadline = absl::Seconds(20)});
  for (int n : {1, 4, 8}) {
    v1::DeterminantRequest det;
    *det.mutable_matrix() = Dominant(n);
    absl::StatusOr<v1::DeterminantResponse> da = a.Determinant(det), db = b.Determinant(det);
    ASSERT_TRUE(da.ok() && db.ok()) << da.status() << db.status();
    EXPECT_EQ(da->value(), db->value()) << n;
    v1::FactorizeRequest lu;
    *lu.mutable_matrix() = det.matrix();
    lu.set_kind(v1::FACTORIZATION_KIND_LU);
    absl::StatusOr<v1::FactorizeResponse> fa = a.Factorize(lu), fb = b.Factorize(lu);
    ASSERT_TRUE(fa.ok() && fb.ok()) << fa.status() << fb.status();
    EXPECT_EQ(fa->lu().data(), fb->lu().data()) << n;
    EXPECT_THAT(fa->permutation(), ::testing::ElementsAreArray(fb->permutation()));
  }
}

}  // namespace
}  // namespace matrixd::server::testing
