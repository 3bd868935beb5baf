// Device-memory admission over two devices through the whole server: a backend that reports two
// devices of 1000 bytes each (the CPU backend underneath does the arithmetic) and states 100 bytes
// per row of a product's left operand. Checks that jobs are placed on the device with room, that
// the backend is told where (JobControl::device_index), and the per-device metrics.
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "core/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/server/metrics_test_support.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

const char* const kDevices[] = {"fake device 0", "fake device 1"};

class TwoDeviceBackend final : public Backend {
 public:
  std::string_view name() const override { return "fake"; }
  std::string device() const override { return "two fake devices"; }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    return cpu_->Determinant(a, options, control);
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    return cpu_->Factorize(a, options, rhs, control);
  }
  // Records the device each product was placed on; 8-row products hold until released.
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    {
      absl::MutexLock lock(&mutex_);
      placed_.push_back(control != nullptr ? control->device_index() : JobControl::kAnyDevice);
    }
    if (a.rows == 8) release_.WaitForNotificationWithTimeout(absl::Seconds(10));
    return cpu_->Multiply(a, b, options, control);
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    return cpu_->Permanent(a, options, control);
  }

  uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& /*b*/,
                               const MultiplyOptions& /*options*/) const override {
    return static_cast<uint64_t>(a.rows) * 100;
  }
  std::vector<DeviceMemoryUsage> DeviceMemory() const override {
    return {{.device = kDevices[0], .total = 2000, .limit = 1000},
            {.device = kDevices[1], .total = 2000, .limit = 1000}};
  }

  std::vector<int> placed() const {
    absl::MutexLock lock(&mutex_);
    return placed_;
  }
  int started() const {
    absl::MutexLock lock(&mutex_);
    return static_cast<int>(placed_.size());
  }

  absl::Notification release_;

 private:
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.threads = 1});
  mutable absl::Mutex mutex_;
  std::vector<int> placed_ ABSL_GUARDED_BY(mutex_);
};

v1::MultiplyRequest SquareProduct(int n) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(n, n, std::vector<double>(n * n, 1.0));
  *request.mutable_b() = MakeMatrix<double>(n, n, std::vector<double>(n * n, 2.0));
  return request;
}

TEST(MultiDeviceAdmission, PlacesJobsOnTheDeviceWithRoomAndTellsTheBackend) {
  auto owned = std::make_unique<TwoDeviceBackend>();
  TwoDeviceBackend& backend = *owned;
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.limits = TestLimits();
  options.scheduler.workers = 4;
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      MatrixServer::Start(std::move(owned), options);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_NE((*server)->memory_admission(1), nullptr);
  EXPECT_EQ((*server)->memory_admission(2), nullptr);
  const auto admitted = [&](int device) {
    return SampleValue((*server)->metrics().Serialize(), "matrixd_device_memory_bytes",
                       {{"device", kDevices[device]}, {"state", "admitted"}});
  };

  Client client((*server)->address());
  std::vector<absl::StatusOr<v1::MultiplyResponse>> held(2, absl::UnknownError("not run"));
  absl::StatusOr<v1::MultiplyResponse> waiter = absl::UnknownError("not run");
  std::vector<std::thread> threads;
  struct Cleanup {
    TwoDeviceBackend& backend;
    std::vector<std::thread>& threads;
    ~Cleanup() {
      if (!backend.release_.HasBeenNotified()) backend.release_.Notify();
      for (std::thread& thread : threads) {
        if (thread.joinable()) thread.join();
      }
    }
  } cleanup{backend, threads};

  // Two 800-byte products: neither fits next to the other on one device.
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] { held[i] = client.Multiply(SquareProduct(8)); });
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (backend.started() < 2 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(backend.started(), 2);
  const std::vector<int> placed = backend.placed();
  EXPECT_EQ(std::set<int>(placed.begin(), placed.end()), (std::set<int>{0, 1}));
  EXPECT_EQ(admitted(0), 800.0);
  EXPECT_EQ(admitted(1), 800.0);

  // 300 bytes fit on neither device now: the job waits with workers free.
  absl::Notification waiter_done;
  threads.emplace_back([&] {
    waiter = client.Multiply(SquareProduct(3));
    waiter_done.Notify();
  });
  EXPECT_FALSE(waiter_done.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  EXPECT_EQ((*server)->scheduler().queued(), 1);

  backend.release_.Notify();
  for (std::thread& thread : threads) thread.join();
  for (const auto& response : held) EXPECT_TRUE(response.ok()) << response.status();
  ASSERT_TRUE(waiter.ok()) << waiter.status();
  EXPECT_EQ(backend.placed().size(), 3u);
  EXPECT_GE(backend.placed().back(), 0);
  EXPECT_EQ(admitted(0), 0.0);
  EXPECT_EQ(admitted(1), 0.0);
  EXPECT_EQ((*server)->memory_admission(0)->reserved(), 0u);
  EXPECT_EQ((*server)->memory_admission(1)->reserved(), 0u);
}

}  // namespace
}  // namespace matrixd::server::testing
