// The server around the service: port selection, health (overall and per service, NOT_SERVING on
// shutdown), reflection, and surviving a backend that throws or runs until cancelled.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
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
using ::testing::StartsWith;

HealthCheckResponse::ServingStatus HealthOf(const std::string& address, const std::string& service,
                                            grpc::StatusCode* code = nullptr) {
  auto stub = Health::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (code != nullptr) *code = status.error_code();
  return response.status();
}

class ServerLifecycleTest : public ServerTest {};

TEST_F(ServerLifecycleTest, PortZeroPicksAFreePortAndReportsIt) {
  EXPECT_GT(server().port(), 0);
  EXPECT_EQ(server().address(), "127.0.0.1:" + std::to_string(server().port()));
}

TEST_F(ServerLifecycleTest, HealthyAfterStart) {
  absl::StatusOr<bool> healthy = client().Healthy();
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_TRUE(*healthy);
}

TEST_F(ServerLifecycleTest, MatrixServiceIsServing) {
  EXPECT_EQ(HealthOf(server().address(), kMatrixServiceName), HealthCheckResponse::SERVING);
}

TEST_F(ServerLifecycleTest, UnknownServiceIsNotFound) {
  grpc::StatusCode code = grpc::StatusCode::OK;
  HealthOf(server().address(), "no.such.Service", &code);
  EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND);
}

// The services that the server at `address` lists through reflection, as the raw bytes of its
// ListServiceResponse ("" when the call fails, with a test failure).
std::string ListedServices(const std::string& address) {
  // grpc.reflection.v1alpha has no installed C++ stubs, so speak it through the generic stub:
  // ServerReflectionRequest{list_services: ""} is field 7, length-delimited, empty.
  grpc::CompletionQueue cq;
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto call = stub.PrepareCall(
      &context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  auto await = [&cq](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(tag), want);
    return ok;
  };
  std::string bytes;
  call->StartCall(reinterpret_cast<void*>(1));
  if (await(1)) {
    const char request_bytes[] = {0x3a, 0x00};
    grpc::Slice slice(request_bytes, sizeof(request_bytes));
    grpc::ByteBuffer request(&slice, 1);
    call->WriteLast(request, grpc::WriteOptions(), reinterpret_cast<void*>(2));
    await(2);
    grpc::ByteBuffer response;
    call->Read(&response, reinterpret_cast<void*>(3));
    const bool read = await(3);
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(4));
    await(4);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<grpc::Slice> slices;
    if (read && response.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
  }
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  return bytes;
}

// How many times `name` appears in `listed`.
int Occurrences(const std::string& listed, const std::string& name) {
  int count = 0;
  for (size_t at = listed.find(name); at != std::string::npos; at = listed.find(name, at + 1)) {
    ++count;
  }
  return count;
}

TEST_F(ServerLifecycleTest, ReflectionListsMatrixServiceOnce) {
  EXPECT_EQ(Occurrences(ListedServices(server().address()), "matrixd.v1.MatrixService"), 1);
}

TEST(ServerStartTest, ComputingCallsOnCompletionQueuesKeepHealthAndReflection) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.computing_calls = ServerOptions::ComputingCalls::kAsync;
  options.cq_threads = 1;
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      MatrixServer::Start(MakeCpuBackend({.threads = 1}), options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(HealthOf((*server)->address(), kMatrixServiceName), HealthCheckResponse::SERVING);
  // One service object with both kinds of methods: listed once.
  EXPECT_EQ(Occurrences(ListedServices((*server)->address()), "matrixd.v1.MatrixService"), 1);
}

TEST(ServerStartTest, AddressInUseIsUnavailable) {
  std::unique_ptr<MatrixServer> first = StartTestServer(MakeCpuBackend({.threads = 1}));
  ASSERT_NE(first, nullptr);
  ServerOptions options;
  options.listen_address = first->address();
  absl::StatusOr<std::unique_ptr<MatrixServer>> second =
      MatrixServer::Start(MakeCpuBackend({.threads = 1}), options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr(first->address()));
}

TEST(ServerStartTest, ShutdownTurnsHealthWatchersToNotServing) {
  std::unique_ptr<MatrixServer> server = StartTestServer(MakeCpuBackend({.threads = 1}));
  ASSERT_NE(server, nullptr);
  auto stub =
      Health::NewStub(grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  HealthCheckRequest request;
  request.set_service(kMatrixServiceName);
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> watch = stub->Watch(&context, request);
  HealthCheckResponse response;
  ASSERT_TRUE(watch->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  std::thread shutdown([&server] { server->Drain(absl::Milliseconds(300)); });
  ASSERT_TRUE(watch->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  shutdown.join();
  context.TryCancel();
  while (watch->Read(&response)) {
  }
  watch->Finish().IgnoreError();
  server->Wait();
}

TEST(ServerStartTest, MessagesAboveGrpcDefaultOfFourMegabytesPassBothWays) {
  // Default options: 1 GiB messages. 800 x 800 float64 is 5 MB.
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      MatrixServer::Start(MakeCpuBackend({.threads = 2}), options);
  ASSERT_TRUE(server.ok()) << server.status();
  Client client((*server)->address());
  constexpr int kN = 800;
  std::vector<double> ones(kN, 1.0);
  std::vector<double> big(kN * kN);
  for (int i = 0; i < kN * kN; ++i) big[i] = i % 7;

  v1::MultiplyRequest large_request;  // 5 MB in, 6 KB out
  *large_request.mutable_a() = MakeMatrix<double>(kN, kN, big);
  *large_request.mutable_b() = MakeMatrix<double>(kN, 1, ones);
  absl::StatusOr<v1::MultiplyResponse> row_sums = client.Multiply(large_request);
  ASSERT_TRUE(row_sums.ok()) << row_sums.status();
  absl::StatusOr<std::vector<double>> sums = ReadMatrix<double>(row_sums->c());
  ASSERT_TRUE(sums.ok()) << sums.status();
  for (int i = 0; i < kN; i += 97) {
    double want = 0.0;
    for (int j = 0; j < kN; ++j) want += big[i * kN + j];
    EXPECT_EQ((*sums)[i], want) << "row " << i;
  }

  v1::MultiplyRequest outer_request;  // 13 KB in, 5 MB out
  *outer_request.mutable_a() = MakeMatrix<double>(kN, 1, ones);
  *outer_request.mutable_b() = MakeMatrix<double>(1, kN, ones);
  absl::StatusOr<v1::MultiplyResponse> outer = client.Multiply(outer_request);
  ASSERT_TRUE(outer.ok()) << outer.status();
  EXPECT_EQ(outer->c().rows(), kN);
  EXPECT_EQ(outer->c().cols(), kN);
  EXPECT_EQ(outer->c().data().size(), size_t{kN} * kN * sizeof(double));
}

// A backend that misbehaves on purpose: each operation throws, fails or blocks.
class MisbehavingBackend final : public Backend {
 public:
  explicit MisbehavingBackend(std::atomic<bool>* saw_cancel) : saw_cancel_(saw_cancel) {}
  std::string_view name() const override { return "fake"; }
  std::string device() const override { return "fake device"; }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView&, const DeterminantOptions&,
                                                JobControl*) override {
    throw std::bad_alloc();
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView&, const FactorizeOptions&,
                                            const MatrixView*, JobControl*) override {
    return absl::DataLossError("factors went missing");
  }
  absl::StatusOr<SolveResult> Solve(const FactorizationView&, const MatrixView&,
                                    const SolveOptions&, JobControl*) override {
    return absl::DataLossError("solution went missing");
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView&, const MatrixView&,
                                          const MultiplyOptions&, JobControl*) override {
    throw std::runtime_error("kernel exploded");
  }
  // Runs until cancelled (at most 10 s, so that a broken watcher fails rather than hangs).
  absl::StatusOr<PermanentResult> Permanent(const MatrixView&, const PermanentOptions&,
                                            JobControl* control) override {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!IsCancelled(control) && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
    if (IsCancelled(control)) {
      saw_cancel_->store(true);
      return absl::CancelledError("cancelled");
    }
    return absl::DeadlineExceededError("never cancelled");
  }

 private:
  std::atomic<bool>* saw_cancel_;
};

class MisbehavingBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartTestServer(std::make_unique<MisbehavingBackend>(&saw_cancel_));
    ASSERT_NE(server_, nullptr);
    client_ =
        std::make_unique<Client>(server_->address(), ClientOptions{.deadline = absl::Seconds(20)});
  }

  // The service still answers: health, and a request that fails validation fails as usual.
  void ExpectStillServing() {
    absl::StatusOr<bool> healthy = client_->Healthy();
    ASSERT_TRUE(healthy.ok()) << healthy.status();
    EXPECT_TRUE(*healthy);
    v1::DeterminantRequest request;
    *request.mutable_matrix() = MakeMatrix<double>(1, 2, {1, 2});
    EXPECT_EQ(client_->Determinant(request).status().code(), absl::StatusCode::kInvalidArgument);
  }

  static v1::Matrix One() { return MakeMatrix<double>(1, 1, {1.0}); }

  std::atomic<bool> saw_cancel_{false};
  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(MisbehavingBackendTest, BadAllocBecomesResourceExhausted) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = One();
  absl::StatusOr<v1::DeterminantResponse> response = client_->Determinant(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted) << response.status();
  ExpectStillServing();
}

TEST_F(MisbehavingBackendTest, OtherExceptionBecomesInternalWithItsMessage) {
  v1::MultiplyRequest request;
  *request.mutable_a() = One();
  *request.mutable_b() = One();
  absl::StatusOr<v1::MultiplyResponse> response = client_->Multiply(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInternal) << response.status();
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("kernel exploded"));
  ExpectStillServing();
}

TEST_F(MisbehavingBackendTest, BackendStatusPassesThroughWithCodeAndMessage) {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = One();
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  absl::StatusOr<v1::FactorizeResponse> response = client_->Factorize(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDataLoss) << response.status();
  EXPECT_EQ(response.status().message(), "factors went missing");
  ExpectStillServing();
}

TEST_F(MisbehavingBackendTest, ClientDeadlineCancelsTheRunningOperation) {
  client_->set_deadline(absl::Milliseconds(200));
  v1::PermanentRequest request;
  *request.mutable_matrix() = One();
  absl::StatusOr<v1::PermanentResponse> response = client_->Permanent(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
  // The server notices within a poll interval or two.
  const absl::Time give_up = absl::Now() + absl::Seconds(5);
  while (!saw_cancel_.load() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_TRUE(saw_cancel_.load());
  client_->set_deadline(absl::Seconds(20));
  ExpectStillServing();
}

}  // namespace
}  // namespace matrixd::server::testing
