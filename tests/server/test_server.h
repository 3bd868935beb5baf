// End-to-end test support: the real MatrixServer on a free loopback port with the CPU backend, and
// a matrixd::Client talking to it. One server per test suite keeps the binary fast.
#ifndef MATRIXD_TESTS_SERVER_TEST_SERVER_H_
#define MATRIXD_TESTS_SERVER_TEST_SERVER_H_

#include <grpc/grpc.h>

#include <memory>

#include "client/client.h"
#include "core/cpu/cpu_backend.h"
#include "core/validation.h"
#include "gtest/gtest.h"
#include "server/server.h"

namespace matrixd::server::testing {

// Keeps the gRPC library initialised for the whole test binary. Otherwise, whenever the last
// server or channel of a test is destroyed, grpc_shutdown() runs and may wait up to 10 s for the
// transport's last sockets to wind down.
class GrpcLibraryEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { grpc_init(); }
  // No grpc_shutdown(): the process is about to exit, and it could wait the same 10 s.
};
inline ::testing::Environment* const kGrpcLibraryEnvironment =
    ::testing::AddGlobalTestEnvironment(new GrpcLibraryEnvironment);

// Small limits, so that "over the limit" requests stay cheap: a broken check must fail a test,
// not hang it.
inline Limits TestLimits() { return {.max_elements = int64_t{1} << 16, .max_permanent_n = 12}; }

inline std::unique_ptr<MatrixServer> StartTestServer(std::unique_ptr<Backend> backend) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.limits = TestLimits();
  options.max_message_bytes = 64 << 20;
  auto server = MatrixServer::Start(std::move(backend), options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartTestServer(MakeCpuBackend({.threads = 2})).release();
    ASSERT_NE(server_, nullptr);
    client_ = new Client(server_->address(), {.deadline = absl::Seconds(20)});
  }
  static void TearDownTestSuite() {
    delete client_;
    client_ = nullptr;
    delete server_;
    server_ = nullptr;
  }

  static MatrixServer& server() { return *server_; }
  static Client& client() { return *client_; }

  // After a rejected request: the server is still healthy and still computes.
  static void ExpectStillServing() {
    absl::StatusOr<bool> healthy = client_->Healthy();
    ASSERT_TRUE(healthy.ok()) << healthy.status();
    EXPECT_TRUE(*healthy);
    v1::DeterminantRequest request;
    *request.mutable_matrix() = MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0});
    absl::StatusOr<v1::DeterminantResponse> response = client_->Determinant(request);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_NEAR(response->value(), 5.0, 1e-14);
  }

 private:
  static inline MatrixServer* server_ = nullptr;
  static inline Client* client_ = nullptr;
};

}  // namespace matrixd::server::testing

#endif  // MATRIXD_TESTS_SERVER_TEST_SERVER_H_
