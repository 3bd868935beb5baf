// Device-memory admission through the whole server, on one fake device of 1000 bytes
// (tests/server/fake_device_backend.h). Checks refusal, waiting and the metrics that show both.
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/server/fake_device_backend.h"
#include "tests/server/metrics_test_support.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

const std::string kDevice = FakeDeviceBackend::DeviceName(0);

v1::MultiplyRequest SquareProduct(int n) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(n, n, std::vector<double>(n * n, 1.0));
  *request.mutable_b() = MakeMatrix<double>(n, n, std::vector<double>(n * n, 2.0));
  return request;
}

class MemoryAdmissionServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = std::make_unique<FakeDeviceBackend>();
    backend_ = backend.get();
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.limits = TestLimits();
    options.scheduler.workers = 3;
    absl::StatusOr<std::unique_ptr<MatrixServer>> server =
        MatrixServer::Start(std::move(backend), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_NE(server_->memory_admission(), nullptr);
    EXPECT_EQ(server_->memory_admission()->capacity(), 1000u);
  }
  void TearDown() override {
    // A test that failed half-way must not leave a job blocked.
    if (backend_ != nullptr) backend_->Release();
  }

  std::optional<double> Admitted() {
    return SampleValue(server_->metrics().Serialize(), "matrixd_device_memory_bytes",
                       {{"device", kDevice}, {"state", "admitted"}});
  }

  FakeDeviceBackend* backend_ = nullptr;
  std::unique_ptr<MatrixServer> server_;
};

TEST_F(MemoryAdmissionServerTest, JobLargerThanTheLimitIsRefusedAtOnce) {
  Client client(server_->address());
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::MultiplyResponse> response = client.Multiply(SquareProduct(11));  // 1100 B
  EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted) << response.status();
  EXPECT_NE(response.status().message().find("--device_memory_limit"), std::string::npos);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(SampleValue(server_->metrics().Serialize(), "matrixd_jobs_total",
                        {{"op", "multiply"}, {"status", "RESOURCE_EXHAUSTED"}}),
            1.0);
  EXPECT_TRUE(client.Multiply(SquareProduct(10)).ok());  // exactly the limit fits
}

TEST_F(MemoryAdmissionServerTest, JobThatDoesNotFitWaitsForMemoryAndThenRuns) {
  Client client(server_->address());
  absl::StatusOr<v1::MultiplyResponse> holder;
  absl::StatusOr<v1::MultiplyResponse> waiter;
  std::thread first;
  std::thread second;
  // Whatever fails below, the held job is released and the threads are joined.
  struct Cleanup {
    FakeDeviceBackend* backend;
    std::thread* threads[2];
    ~Cleanup() {
      backend->Release();
      for (std::thread* thread : threads) {
        if (thread->joinable()) thread->join();
      }
    }
  } cleanup{backend_, {&first, &second}};
  first = std::thread([&] { holder = client.Multiply(SquareProduct(8)); });  // 800 B, held
  ASSERT_TRUE(backend_->AwaitStarted(1));
  EXPECT_EQ(Admitted(), 800.0);

  absl::Notification second_done;
  second = std::thread([&] {
    waiter = client.Multiply(SquareProduct(3));  // 300 B: does not fit next to 800
    second_done.Notify();
  });
  // Workers are free, so only admission holds it back.
  EXPECT_FALSE(second_done.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  EXPECT_EQ(server_->scheduler().queued(), 1);

  backend_->Release();
  first.join();
  second.join();
  ASSERT_TRUE(holder.ok()) << holder.status();
  ASSERT_TRUE(waiter.ok()) << waiter.status();
  absl::StatusOr<std::vector<double>> c = ReadMatrix<double>(waiter->c());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, std::vector<double>(9, 6.0));  // 3 terms of 1 x 2
  EXPECT_EQ(Admitted(), 0.0);
  EXPECT_EQ(server_->memory_admission()->reserved(), 0u);
}

}  // namespace
}  // namespace matrixd::server::testing
