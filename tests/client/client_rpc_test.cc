// Client against an in-process fake MatrixService: status mapping, deadlines, message limits,
// health, and the client-side checks of matrixctl's operations.
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/commands.h"
#include "client/demo.h"
#include "gmock/gmock.h"
#include "grpc/grpc.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;

// Answers every RPC with the configured status, or with the canned response when OK, after an
// optional delay; remembers the last request it saw.
class FakeMatrixService final : public v1::MatrixService::Service {
 public:
  void SetStatus(grpc::Status status) {
    absl::MutexLock lock(&mutex_);
    status_ = std::move(status);
  }
  void SetDelay(absl::Duration delay) {
    absl::MutexLock lock(&mutex_);
    delay_ = delay;
  }
  void SetFactorizeResponse(v1::FactorizeResponse response) {
    absl::MutexLock lock(&mutex_);
    factorize_ = std::move(response);
  }
  void SetPermanentResponse(v1::PermanentResponse response) {
    absl::MutexLock lock(&mutex_);
    permanent_ = std::move(response);
  }
  std::string last_request() {
    absl::MutexLock lock(&mutex_);
    return last_request_;
  }

  grpc::Status Determinant(grpc::ServerContext*, const v1::DeterminantRequest* request,
                           v1::DeterminantResponse* response) override {
    response->set_residue(42);
    return Answer(*request);
  }
  grpc::Status Factorize(grpc::ServerContext*, const v1::FactorizeRequest* request,
                         v1::FactorizeResponse* response) override {
    {
      absl::MutexLock lock(&mutex_);
      *response = factorize_;
    }
    return Answer(*request);
  }
  grpc::Status Multiply(grpc::ServerContext*, const v1::MultiplyRequest* request,
                        v1::MultiplyResponse* response) override {
    response->set_block_products(7);
    return Answer(*request);
  }
  grpc::Status Permanent(grpc::ServerContext*, const v1::PermanentRequest* request,
                         v1::PermanentResponse* response) override {
    {
      absl::MutexLock lock(&mutex_);
      *response = permanent_;
    }
    return Answer(*request);
  }

 private:
  grpc::Status Answer(const google::protobuf::Message& request) {
    absl::Duration delay;
    {
      absl::MutexLock lock(&mutex_);
      last_request_ = request.SerializeAsString();
      delay = delay_;
    }
    absl::SleepFor(delay);
    absl::MutexLock lock(&mutex_);
    return status_;
  }

  absl::Mutex mutex_;
  grpc::Status status_ ABSL_GUARDED_BY(mutex_);
  absl::Duration delay_ ABSL_GUARDED_BY(mutex_);
  v1::FactorizeResponse factorize_ ABSL_GUARDED_BY(mutex_);
  v1::PermanentResponse permanent_ ABSL_GUARDED_BY(mutex_);
  std::string last_request_ ABSL_GUARDED_BY(mutex_);
};

// Holds gRPC initialised for the whole binary. Otherwise destroying each test's server is the
// last release of the library, and grpc_shutdown() then joins an executor thread that may be
// waiting out a 10 s timer. Never shut down: the process exit reclaims everything.
class GrpcLibraryEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { grpc_init(); }
};
[[maybe_unused]] ::testing::Environment* const kGrpcLibraryEnvironment =
    ::testing::AddGlobalTestEnvironment(new GrpcLibraryEnvironment);

class ClientRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    // The demo sends 16 MiB requests; gRPC's default 4 MiB limit would reject them mid-stream.
    builder.SetMaxReceiveMessageSize(1 << 30);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

  FakeMatrixService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

v1::DeterminantRequest SmallDeterminantRequest() {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, std::vector<double>{1, 2, 3, 4});
  request.set_method(v1::DETERMINANT_METHOD_CONDENSATION);
  return request;
}

TEST_F(ClientRpcTest, SuccessfulCallReturnsTheResponseAndSendsTheRequestUnchanged) {
  Client client(target());
  const v1::DeterminantRequest request = SmallDeterminantRequest();
  absl::StatusOr<v1::DeterminantResponse> response = client.Determinant(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->residue(), 42u);
  EXPECT_EQ(service_.last_request(), request.SerializeAsString());
}

// matrixctl load destroys its clients once the last callback has run; if a call's state still
// held the channel then, the channel's last reference went on gRPC's callback thread, which
// cannot shut down gRPC's callback queue from itself (a crash at exit, once in ~40 loads).
TEST_F(ClientRpcTest, StartedJobRequestLetsGoOfTheChannelBeforeItsCallbackRuns) {
  Client client(target());
  const std::weak_ptr<grpc::Channel> channel = client.channel();
  const long client_holders = channel.use_count();  // the client and its stub
  v1::JobRequest request;
  *request.mutable_determinant() = SmallDeterminantRequest();
  for (const grpc::StatusCode code : {grpc::StatusCode::OK, grpc::StatusCode::INVALID_ARGUMENT}) {
    service_.SetStatus(grpc::Status(code, "field matrix"));
    absl::Notification finished;
    absl::Status status = absl::UnknownError("callback not run");
    long holders = -1;
    client.StartJobRequest(request, [&](absl::Status call_status) {
      holders = channel.use_count();
      status = std::move(call_status);
      finished.Notify();
    });
    ASSERT_TRUE(finished.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_EQ(static_cast<int>(status.code()), static_cast<int>(code)) << status;
    EXPECT_EQ(holders, client_holders)
        << "only the client may hold the channel when the callback runs";
  }
}

TEST_F(ClientRpcTest, EveryRpcMapsTheServerStatusCodeAndMessage) {
  Client client(target());
  service_.SetStatus(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "matrix is 2 x 3"));
  const std::vector<absl::Status> statuses = {
      client.Determinant(SmallDeterminantRequest()).status(),
      client.Factorize(v1::FactorizeRequest()).status(),
      client.Multiply(v1::MultiplyRequest()).status(),
      client.Permanent(v1::PermanentRequest()).status(),
  };
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(status.message(), "matrix is 2 x 3");
  }
}

TEST_F(ClientRpcTest, StatusCodesKeepTheirMeaning) {
  Client client(target());
  for (grpc::StatusCode code :
       {grpc::StatusCode::INVALID_ARGUMENT, grpc::StatusCode::RESOURCE_EXHAUSTED,
        grpc::StatusCode::UNIMPLEMENTED, grpc::StatusCode::INTERNAL}) {
    service_.SetStatus(grpc::Status(code, "why"));
    EXPECT_EQ(static_cast<int>(client.Determinant(SmallDeterminantRequest()).status().code()),
              static_cast<int>(code));
  }
  EXPECT_EQ(client.Determinant(SmallDeterminantRequest()).status().code(),
            absl::StatusCode::kInternal);
}

TEST_F(ClientRpcTest, SlowServerExceedsTheDeadline) {
  service_.SetDelay(absl::Milliseconds(150));
  ClientOptions options;
  options.deadline = absl::Milliseconds(30);
  Client client(target(), options);
  const absl::Time start = absl::Now();
  EXPECT_EQ(client.Determinant(SmallDeterminantRequest()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(120));
}

TEST_F(ClientRpcTest, SetDeadlineAppliesToLaterCalls) {
  service_.SetDelay(absl::Milliseconds(150));
  Client client(target());
  client.set_deadline(absl::Milliseconds(20));
  EXPECT_EQ(client.Permanent(v1::PermanentRequest()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_F(ClientRpcTest, RequestOverTheMessageLimitIsResourceExhausted) {
  ClientOptions options;
  options.max_message_bytes = 1024;
  Client client(target(), options);
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(20, 20, std::vector<double>(400, 1.0));
  EXPECT_EQ(client.Determinant(request).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(ClientRpcTest, HealthyFollowsTheServingStatus) {
  Client client(target());
  absl::StatusOr<bool> healthy = client.Healthy();
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_TRUE(*healthy);
  server_->GetHealthCheckService()->SetServingStatus(false);
  healthy = client.Healthy();
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_FALSE(*healthy);
}

TEST(ClientUnreachable, NothingListeningIsUnavailable) {
  ClientOptions options;
  options.deadline = absl::Seconds(20);
  Client client("127.0.0.1:1", options);  // port 1: nothing listens there
  EXPECT_EQ(client.Healthy().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(client.Multiply(v1::MultiplyRequest()).status().code(), absl::StatusCode::kUnavailable);
}

// A = [[2, 1], [1, 3]], b = [3, 5]: x = [0.8, 1.4]. Partial pivoting keeps row 0, so
// L = [[1, 0], [0.5, 1]] and U = [[2, 1], [0, 2.5]].
v1::FactorizeRequest LuSolveRequest() {
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, std::vector<double>{2, 1, 1, 3});
  *request.mutable_rhs() = MakeMatrix<double>(2, 1, std::vector<double>{3, 5});
  return request;
}

v1::FactorizeResponse LuSolveResponse(std::vector<double> solution) {
  v1::FactorizeResponse response;
  response.set_kind(v1::FACTORIZATION_KIND_LU);
  *response.mutable_lu() = MakeMatrix<double>(2, 2, std::vector<double>{2, 1, 0.5, 2.5});
  response.add_permutation(0);
  response.add_permutation(1);
  *response.mutable_solution() = MakeMatrix<double>(2, 1, solution);
  return response;
}

TEST_F(ClientRpcTest, RunFactorizeMeasuresAnExactSolutionAsExact) {
  service_.SetFactorizeResponse(LuSolveResponse({0.8, 1.4}));
  Client client(target());
  std::ostringstream out;
  absl::StatusOr<FactorizeReport> report = RunFactorize(client, LuSolveRequest(), out);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->factor_error.has_value());
  EXPECT_EQ(*report->factor_error, 0.0);
  ASSERT_TRUE(report->solution_residual.has_value());
  EXPECT_LT(*report->solution_residual, 1e-15);
  EXPECT_THAT(out.str(), HasSubstr("solution residual"));
  EXPECT_THAT(out.str(), HasSubstr("round trip"));
}

TEST_F(ClientRpcTest, RunFactorizeMeasuresAWrongSolution) {
  // A [1, 1] = [3, 4], so ||Ax - b|| / ||b|| = 1 / sqrt(34).
  service_.SetFactorizeResponse(LuSolveResponse({1, 1}));
  Client client(target());
  std::ostringstream out;
  absl::StatusOr<FactorizeReport> report = RunFactorize(client, LuSolveRequest(), out);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NEAR(*report->solution_residual, 1 / std::sqrt(34.0), 1e-15);
}

TEST_F(ClientRpcTest, RunFactorizeChecksTheFactorsAgainstThePermutedMatrix) {
  // Claim the rows were swapped without swapping the factors: P A != L U.
  v1::FactorizeResponse response = LuSolveResponse({0.8, 1.4});
  response.set_permutation(0, 1);
  response.set_permutation(1, 0);
  service_.SetFactorizeResponse(response);
  Client client(target());
  std::ostringstream out;
  absl::StatusOr<FactorizeReport> report = RunFactorize(client, LuSolveRequest(), out);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GT(*report->factor_error, 0.1);
}

TEST_F(ClientRpcTest, RunFactorizeRejectsAMalformedServerAnswer) {
  v1::FactorizeResponse response = LuSolveResponse({0.8, 1.4});
  response.mutable_lu()->mutable_data()->resize(8);
  service_.SetFactorizeResponse(response);
  Client client(target());
  std::ostringstream out;
  EXPECT_EQ(RunFactorize(client, LuSolveRequest(), out).status().code(),
            absl::StatusCode::kInternal);
}

TEST_F(ClientRpcTest, RunPermanentPrintsTheExactValueAndTheStats) {
  v1::PermanentResponse response;
  response.set_value(479001600);
  response.set_exact("479001600");
  response.set_method_used(v1::PERMANENT_METHOD_GLYNN);
  response.mutable_stats()->set_backend("cpu");
  response.mutable_stats()->set_seconds(0.5);
  response.mutable_stats()->set_flops(2e9);
  service_.SetPermanentResponse(response);
  Client client(target());
  std::ostringstream out;
  ASSERT_TRUE(RunPermanent(client, v1::PermanentRequest(), out).ok());
  EXPECT_THAT(out.str(), HasSubstr("exact  = 479001600"));
  EXPECT_THAT(out.str(), HasSubstr("method = glynn"));
  EXPECT_THAT(out.str(), HasSubstr("4.00 GFLOP/s"));
}

TEST_F(ClientRpcTest, DemoFailsWithTheServersCodeWhenEveryStepIsRejected) {
  service_.SetStatus(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "not here"));
  Client client(target());
  std::ostringstream out;
  const absl::Status status = RunDemo(client, out, 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("11 demo step(s) failed"));
  EXPECT_THAT(out.str(), HasSubstr("demo: 0 of 11 steps passed"));
}

TEST_F(ClientRpcTest, DemoFailsWhenAnAnswerIsWrong) {
  // Every RPC "succeeds" with an empty response: each step's checks must notice.
  Client client(target());
  std::ostringstream out;
  const absl::Status status = RunDemo(client, out, 1);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(out.str(), HasSubstr("[WRONG]"));
  EXPECT_THAT(out.str(), HasSubstr("demo: 0 of 11 steps passed"));
}

}  // namespace
}  // namespace matrixd
