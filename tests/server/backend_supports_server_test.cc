// The server asks Backend::Supports before queueing: a permanent above the backend's largest
// order (yet within --max_permanent_n) is answered UNIMPLEMENTED at once, never run.
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace matrixd::server::testing
