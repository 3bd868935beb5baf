// Fixtures for end-to-end tests on CUDA servers: a server on a free loopback port with operands up
// to 2^22 elements and 64 MiB messages, and a client to it (CudaServerTest), started over every GPU
// when there are 2 or more (MultiGpuServerTest, which skips otherwise).
#ifndef MATRIXD_TESTS_SERVER_MULTI_GPU_SERVER_H_
#define MATRIXD_TESTS_SERVER_MULTI_GPU_SERVER_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "client/client.h"
#include "core/make_backend.h"
#include "gtest/gtest.h"
#include "server/server.h"

namespace matrixd::server::testing {

// A CUDA server on a free loopback port with operands up to 2^22 elements and 64 MiB messages,
// and a client to it; the fixtures below start it on the backend they make.
class CudaServerTest : public ::testing::Test {
 protected:
  void StartServer(std::unique_ptr<Backend> cuda) {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.limits = {.max_elements = int64_t{1} << 22, .max_permanent_n = 12};
    options.max_message_bytes = 64 << 20;
    absl::StatusOr<std::unique_ptr<MatrixServer>> server =
        MatrixServer::Start(std::move(cuda), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ =
        std::make_unique<Client>(server_->address(), ClientOptions{.deadline = absl::Seconds(120)});
  }

  // The resident bytes of the server's matrices.
  uint64_t ResidentBytes() {
    absl::StatusOr<v1::ListMatricesResponse> listed = client_->ListMatrices();
    EXPECT_TRUE(listed.ok()) << listed.status();
    uint64_t bytes = 0;
    if (listed.ok()) {
      for (const v1::ResidentMatrix& m : listed->matrices()) bytes += m.bytes();
    }
    return bytes;
  }

  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
};

// Over several GPUs: skips without a CUDA backend of 2 GPUs or more.
class MultiGpuServerTest : public CudaServerTest {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
    if (!cuda.ok()) GTEST_SKIP() << "no CUDA backend: " << cuda.status();
    gpus_ = static_cast<int>((*cuda)->DeviceMemory().size());
    if (gpus_ < 2) GTEST_SKIP() << "fewer than 2 CUDA devices: distributed case skipped";
    StartServer(*std::move(cuda));
  }

  int gpus_ = 0;
};

}  // namespace matrixd::server::testing

#endif  // MATRIXD_TESTS_SERVER_MULTI_GPU_SERVER_H_
