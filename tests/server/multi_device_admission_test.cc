// Device-memory admission over two fake devices of 1000 bytes each through the whole server
// (tests/server/fake_device_backend.h). Checks that jobs are placed on the device with room, that
// the backend is told where (JobControl::device_index), the per-device metrics, and that a job
// over several devices holds its memory on each of them.
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

v1::MultiplyRequest SquareProduct(int n) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(n, n, std::vector<double>(n * n, 1.0));
  *request.mutable_b() = MakeMatrix<double>(n, n, std::vector<double>(n * n, 2.0));
  return request;
}

// A server over `backend` on a free loopback port with 4 workers, more than the jobs a test runs
// at once: a job that waits waits for device memory, not for a worker.
absl::StatusOr<std::unique_ptr<MatrixServer>> StartServer(
    std::unique_ptr<FakeDeviceBackend> backend) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.limits = TestLimits();
  options.scheduler.workers = 4;
  return MatrixServer::Start(std::move(backend), options);
}

// Lets the backend's held jobs finish and joins the client threads at the end of a test, also
// when an ASSERT ends it early.
struct ReleaseAndJoin {
  FakeDeviceBackend& backend;
  std::vector<std::thread>& threads;
  ~ReleaseAndJoin() {
    backend.Release();
    for (std::thread& thread : threads) {
      if (thread.joinable()) thread.join();
    }
  }
};

// Starts the 300-byte product SquareProduct(3) on a new thread of `threads`, its result into
// `*response`, and expects it to stay queued (no device has room for it).
void ExpectProductWaits(Client& client, MatrixServer& server, std::vector<std::thread>& threads,
                        absl::StatusOr<v1::MultiplyResponse>* response) {
  // Shared with the thread: it notifies after the backend lets the held jobs go, which is after
  // this function returns.
  auto done = std::make_shared<absl::Notification>();
  threads.emplace_back([&client, response, done] {
    *response = client.Multiply(SquareProduct(3));
    done->Notify();
  });
  EXPECT_FALSE(done->WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  EXPECT_EQ(server.scheduler().queued(), 1);
}

TEST(MultiDeviceAdmission, PlacesJobsOnTheDeviceWithRoomAndTellsTheBackend) {
  auto owned = std::make_unique<FakeDeviceBackend>(2);
  FakeDeviceBackend& backend = *owned;
  absl::StatusOr<std::unique_ptr<MatrixServer>> server = StartServer(std::move(owned));
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_NE((*server)->memory_admission(1), nullptr);
  EXPECT_EQ((*server)->memory_admission(2), nullptr);
  const auto admitted = [&](int device) {
    return SampleValue((*server)->metrics().Serialize(), "matrixd_device_memory_bytes",
                       {{"device", FakeDeviceBackend::DeviceName(device)}, {"state", "admitted"}});
  };

  Client client((*server)->address());
  std::vector<absl::StatusOr<v1::MultiplyResponse>> held(2, absl::UnknownError("not run"));
  absl::StatusOr<v1::MultiplyResponse> waiter = absl::UnknownError("not run");
  std::vector<std::thread> threads;
  const ReleaseAndJoin cleanup{backend, threads};

  // Two 800-byte products: neither fits next to the other on one device.
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] { held[i] = client.Multiply(SquareProduct(8)); });
  }
  ASSERT_TRUE(backend.AwaitStarted(2));
  const std::vector<int> placed = backend.placed();
  EXPECT_EQ(std::set<int>(placed.begin(), placed.end()), (std::set<int>{0, 1}));
  EXPECT_EQ(admitted(0), 800.0);
  EXPECT_EQ(admitted(1), 800.0);

  // 300 bytes fit on neither device now: the job waits with workers free.
  ExpectProductWaits(client, **server, threads, &waiter);

  backend.Release();
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

// A job on a resident matrix's device view runs on the device the matrix lives on: the other
// device could not read it (pool memory of one GPU, no peer access).
TEST(MultiDeviceAdmission, AJobOnAResidentMatrixRunsOnItsDevice) {
  auto owned = std::make_unique<FakeDeviceBackend>(2);
  FakeDeviceBackend& backend = *owned;
  absl::StatusOr<std::unique_ptr<MatrixServer>> server = StartServer(std::move(owned));
  ASSERT_TRUE(server.ok()) << server.status();
  Client client((*server)->address());
  std::vector<std::string> handles;
  std::vector<RemoteMatrix> kept_matrices;  // released when they go
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<RemoteMatrix> kept =
        client.Upload(MakeMatrix<double>(2, 2, std::vector<double>{2.0 + i, 0, 0, 1}));
    ASSERT_TRUE(kept.ok()) << kept.status();
    handles.push_back(kept->handle());
    kept_matrices.push_back(*std::move(kept));
  }
  // Uploaded one after the other: the i-th allocation is the i-th matrix.
  const std::vector<int> devices = backend.allocated_on();
  ASSERT_EQ(devices.size(), handles.size());
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < handles.size(); ++i) {
      v1::DeterminantRequest request;
      request.mutable_matrix_ref()->set_handle(handles[i]);
      absl::StatusOr<v1::DeterminantResponse> det = client.Determinant(request);
      ASSERT_TRUE(det.ok()) << det.status();
      EXPECT_DOUBLE_EQ(det->value(), 2.0 + static_cast<double>(i));
      EXPECT_EQ(backend.determinants_placed().back(), devices[i]) << handles[i];
    }
  }
}

// A product over both devices (devices = 2) reserves its 800 bytes on each: a 300-byte job then
// fits on neither and waits; once it ends, both devices are free again.
TEST(MultiDeviceAdmission, AJobOverSeveralDevicesHoldsItsMemoryOnEachOfThem) {
  auto owned = std::make_unique<FakeDeviceBackend>(2);
  FakeDeviceBackend& backend = *owned;
  absl::StatusOr<std::unique_ptr<MatrixServer>> server = StartServer(std::move(owned));
  ASSERT_TRUE(server.ok()) << server.status();
  Client client((*server)->address());
  absl::StatusOr<v1::MultiplyResponse> spread = absl::UnknownError("not run");
  absl::StatusOr<v1::MultiplyResponse> waiter = absl::UnknownError("not run");
  std::vector<std::thread> threads;
  const ReleaseAndJoin cleanup{backend, threads};

  threads.emplace_back([&] {
    v1::MultiplyRequest request = SquareProduct(8);
    request.set_devices(2);
    spread = client.Multiply(request);
  });
  ASSERT_TRUE(backend.AwaitStarted(1));
  EXPECT_EQ(backend.placed(), std::vector<int>{0});
  EXPECT_EQ((*server)->memory_admission(0)->reserved(), 800u);
  EXPECT_EQ((*server)->memory_admission(1)->reserved(), 800u);

  ExpectProductWaits(client, **server, threads, &waiter);

  backend.Release();
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(spread.ok()) << spread.status();
  // 8 x 8 ones times 8 x 8 twos: every entry 16.
  absl::StatusOr<std::vector<double>> c = ReadMatrix<double>(spread->c());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, std::vector<double>(64, 16.0));
  ASSERT_TRUE(waiter.ok()) << waiter.status();
  EXPECT_EQ((*server)->memory_admission(0)->reserved(), 0u);
  EXPECT_EQ((*server)->memory_admission(1)->reserved(), 0u);
}

TEST(MultiDeviceAdmission, AJobOverMoreDevicesThanTheServerHasIsRefused) {
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      StartServer(std::make_unique<FakeDeviceBackend>(2));
  ASSERT_TRUE(server.ok()) << server.status();
  Client client((*server)->address());
  v1::MultiplyRequest request = SquareProduct(3);
  request.set_devices(3);
  absl::StatusOr<v1::MultiplyResponse> response = client.Multiply(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(response.status().message().find("runs on 3 devices"), absl::string_view::npos)
      << response.status();
}

}  // namespace
}  // namespace matrixd::server::testing
