// Graceful drain (MatrixServer::Drain, what matrixd does on SIGTERM), end to end on loopback: a job
// running when the drain starts finishes OK for its client (a call and a Submit job alike), new
// work is refused with UNAVAILABLE "draining" while health says NOT_SERVING, a job still running
// at the drain timeout is stopped with a status naming the timeout, resident matrices are
// released, and the server then stops.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::grpc::health::v1::Health;
using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::HasSubstr;

// Upper bound for "at once" on CI's two busy cores.
constexpr absl::Duration kPromptly = absl::Seconds(1);

// The CPU backend, except that the permanent of a 1 x 1 matrix [s] takes s seconds (checking for
// cancellation every millisecond) before it answers s: a job of known length.
class SleepyBackend final : public Backend {
 public:
  std::string_view name() const override { return "sleepy"; }
  std::string device() const override { return "sleepy cpu"; }
  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    return cpu_->Determinant(a, options, control);
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    return cpu_->Factorize(a, options, rhs, control);
  }
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override {
    return cpu_->Solve(factorization, rhs, options, control);
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    return cpu_->Multiply(a, b, options, control);
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    if (a.rows == 1 && a.dtype == DType::kFloat64) {
      const absl::Time until =
          absl::Now() + absl::Seconds(*reinterpret_cast<const double*>(a.data));
      while (absl::Now() < until) {
        if (IsCancelled(control)) return absl::CancelledError("stopped while sleeping");
        absl::SleepFor(absl::Milliseconds(1));
      }
    }
    return cpu_->Permanent(a, options, control);
  }
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateResident(int64_t rows, int64_t cols,
                                                                   DType dtype,
                                                                   int device_index) override {
    return cpu_->AllocateResident(rows, cols, dtype, device_index);
  }

 private:
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.threads = 1});
};

v1::PermanentRequest SleepFor(double seconds) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(1, 1, {seconds});
  return request;
}

HealthCheckResponse::ServingStatus HealthOf(const std::string& address,
                                            const std::string& service) {
  auto stub = Health::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.status();
}

class DrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartTestServer(std::make_unique<SleepyBackend>());
    ASSERT_NE(server_, nullptr);
    client_ =
        std::make_unique<Client>(server_->address(), ClientOptions{.deadline = absl::Seconds(30)});
  }
  void TearDown() override {
    if (drain_.joinable()) drain_.join();
  }

  // Starts the drain on its own thread once `jobs` jobs run, as main() does on SIGTERM.
  void DrainWhenRunning(int jobs, absl::Duration timeout) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (server_->scheduler().running() < jobs && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(2));
    }
    ASSERT_EQ(server_->scheduler().running(), jobs);
    drain_ = std::thread([this, timeout] { report_ = server_->Drain(timeout); });
    // Drain marks NOT_SERVING first; from then on the server drains.
    while (HealthOf(server_->address(), "") != HealthCheckResponse::NOT_SERVING) {
      absl::SleepFor(absl::Milliseconds(2));
    }
  }

  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
  std::thread drain_;
  DrainReport report_;
};

TEST_F(DrainTest, RunningCallFinishesOkForItsClient) {
  absl::StatusOr<v1::PermanentResponse> response;
  std::thread call([&] { response = client_->Permanent(SleepFor(1.5)); });
  DrainWhenRunning(1, absl::Seconds(20));
  call.join();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->value(), 1.5);
  drain_.join();
  EXPECT_EQ(report_.jobs_at_start, 1);
  EXPECT_TRUE(report_.jobs_finished);
  EXPECT_EQ(report_.jobs_stopped, 0);
  // It waited for the job, not for the drain timeout.
  EXPECT_LT(report_.elapsed, absl::Seconds(1.5) + MatrixServer::kFinalGrace + kPromptly);
  server_->Wait();
}

TEST_F(DrainTest, SubmitJobFinishesAndItsWatchGetsTheResult) {
  v1::JobRequest request;
  *request.mutable_permanent() = SleepFor(1.0);
  absl::StatusOr<std::string> id = client_->Submit(request);
  ASSERT_TRUE(id.ok()) << id.status();
  DrainWhenRunning(1, absl::Seconds(20));
  // Watch is a new call, made during the drain: it still answers.
  absl::StatusOr<v1::JobUpdate> last = client_->Watch(*id);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(last->permanent().value(), 1.0);
  drain_.join();
  EXPECT_TRUE(report_.jobs_finished);
}

TEST_F(DrainTest, NewWorkDuringDrainIsUnavailableDraining) {
  std::thread call([&] { static_cast<void>(client_->Permanent(SleepFor(1.5))); });
  DrainWhenRunning(1, absl::Seconds(20));

  v1::DeterminantRequest determinant;
  *determinant.mutable_matrix() = MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0});
  absl::Status refused = client_->Determinant(determinant).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_THAT(std::string(refused.message()), HasSubstr("draining"));

  // Refused before validation: a bad request hears the same.
  v1::DeterminantRequest empty;
  refused = client_->Determinant(empty).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;

  v1::JobRequest job;
  *job.mutable_permanent() = SleepFor(0);
  refused = client_->Submit(job).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_THAT(std::string(refused.message()), HasSubstr("draining"));

  auto stub = v1::MatrixService::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::CreateMatrixRequest create;
  create.set_rows(2);
  create.set_cols(2);
  create.set_dtype(v1::DTYPE_FLOAT64);
  v1::ResidentMatrix created;
  const grpc::Status create_status = stub->CreateMatrix(&context, create, &created);
  EXPECT_EQ(create_status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(create_status.error_message(), HasSubstr("draining"));
  call.join();
}

TEST_F(DrainTest, HealthIsNotServingDuringDrain) {
  std::thread call([&] { static_cast<void>(client_->Permanent(SleepFor(1.5))); });
  DrainWhenRunning(1, absl::Seconds(20));
  // The job still runs: the server is draining, not gone, and says so.
  EXPECT_EQ(server_->scheduler().running(), 1);
  EXPECT_EQ(HealthOf(server_->address(), ""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(HealthOf(server_->address(), kMatrixServiceName), HealthCheckResponse::NOT_SERVING);
  absl::StatusOr<bool> healthy = client_->Healthy();
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_FALSE(*healthy);
  call.join();
}

TEST_F(DrainTest, JobsLeftAtTheTimeoutAreStoppedWithAClearStatus) {
  // Two workers: two calls run and a Submit job waits behind them.
  absl::StatusOr<v1::PermanentResponse> running[2];
  std::thread first([&] { running[0] = client_->Permanent(SleepFor(20)); });
  std::thread second([&] { running[1] = client_->Permanent(SleepFor(20)); });
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (server_->scheduler().running() < 2 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  v1::JobRequest request;
  *request.mutable_permanent() = SleepFor(20);
  absl::StatusOr<std::string> id = client_->Submit(request);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_EQ(server_->scheduler().queued(), 1);

  DrainWhenRunning(2, absl::Milliseconds(300));
  first.join();
  second.join();
  for (const absl::StatusOr<v1::PermanentResponse>& response : running) {
    EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
    EXPECT_THAT(std::string(response.status().message()), HasSubstr("drain timeout"));
  }
  drain_.join();
  EXPECT_EQ(report_.jobs_at_start, 3);
  EXPECT_FALSE(report_.jobs_finished);
  EXPECT_EQ(report_.jobs_stopped, 3);
  EXPECT_LT(report_.elapsed, absl::Milliseconds(300) + MatrixServer::kFinalGrace + kPromptly);
  absl::StatusOr<std::shared_ptr<Job>> job = server_->scheduler().Find(*id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string((*job)->status().message()), HasSubstr("drain timeout"));
  server_->Wait();
}

TEST_F(DrainTest, ResidentMatricesAreReleased) {
  auto stub = v1::MatrixService::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::CreateMatrixRequest create;
  create.set_rows(4);
  create.set_cols(4);
  create.set_dtype(v1::DTYPE_FLOAT64);
  v1::ResidentMatrix created;
  const grpc::Status status = stub->CreateMatrix(&context, create, &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(server_->resident().resident_bytes(), 4 * 4 * sizeof(double));

  const DrainReport report = server_->Drain(absl::Seconds(5));
  EXPECT_EQ(report.resident_released, 1);
  EXPECT_EQ(report.resident_bytes_released, 4 * 4 * sizeof(double));
  EXPECT_EQ(server_->resident().resident_bytes(), 0u);
}

TEST_F(DrainTest, IdleServerStopsPromptlyAndOnlyOnce) {
  const absl::Time start = absl::Now();
  const DrainReport report = server_->Drain(absl::Seconds(30));
  server_->Wait();
  EXPECT_LT(absl::Now() - start, kPromptly);
  EXPECT_EQ(report.jobs_at_start, 0);
  EXPECT_TRUE(report.jobs_finished);
  // A second drain (the destructor's) returns at once.
  EXPECT_EQ(server_->Drain(absl::Seconds(30)).elapsed, absl::ZeroDuration());
  server_.reset();
}

}  // namespace
}  // namespace matrixd::server::testing
