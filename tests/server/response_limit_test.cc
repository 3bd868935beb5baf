// A result larger than the server's message limit: refused with a status that says how to get it
// (keep_result and Download) and nothing kept behind; kept without inline it goes through.
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

class ResponseLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.max_message_bytes = 1 << 20;
    absl::StatusOr<std::unique_ptr<MatrixServer>> started =
        MatrixServer::Start(MakeCpuBackend({.threads = 1}), options);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    client_ = std::make_unique<Client>(server_->address(), ClientOptions{});
  }

  // An outer product whose 256 x 512 float64 result (1 MiB) is over the 1 MiB limit while its
  // operands are small.
  static v1::MultiplyRequest OuterProduct() {
    v1::MultiplyRequest request;
    *request.mutable_a() = MakeMatrix<double>(256, 1, std::vector<double>(256, 2.0));
    *request.mutable_b() = MakeMatrix<double>(1, 512, std::vector<double>(512, 3.0));
    return request;
  }

  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ResponseLimitTest, InlineResultOverTheLimitPointsToKeepResultAndDownload) {
  absl::StatusOr<v1::MultiplyResponse> response = client_->Multiply(OuterProduct());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(response.status().message(), HasSubstr("--max_message_bytes"));
  EXPECT_THAT(response.status().message(), HasSubstr("keep_result"));
  EXPECT_THAT(response.status().message(), HasSubstr("Download"));
}

TEST_F(ResponseLimitTest, KeptAlsoInlineResultOverTheLimitLeavesNothingResident) {
  v1::MultiplyRequest request = OuterProduct();
  request.mutable_result_options()->set_keep_result(true);
  request.mutable_result_options()->set_also_inline(true);
  EXPECT_EQ(client_->Multiply(request).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(server_->resident().List().empty());
  EXPECT_EQ(server_->resident().resident_bytes(), 0u);
}

TEST_F(ResponseLimitTest, KeptResultOverTheLimitIsKeptAndItsHandleReturned) {
  v1::MultiplyRequest request = OuterProduct();
  request.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::MultiplyResponse> response = client_->Multiply(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(response->has_c());
  ASSERT_EQ(response->kept().count("c"), 1u);
  EXPECT_EQ(response->kept().at("c").rows(), 256);
  EXPECT_EQ(response->kept().at("c").cols(), 512);
  EXPECT_EQ(server_->resident().List().size(), 1u);
}

TEST_F(ResponseLimitTest, DownloadCutsChunksBelowTheServersMessageLimit) {
  v1::MultiplyRequest request = OuterProduct();
  request.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::MultiplyResponse> kept = client_->Multiply(request);
  ASSERT_TRUE(kept.ok()) << kept.status();
  // The client asks for the default 4 MiB chunks; the server's limit is 1 MiB.
  absl::StatusOr<v1::Matrix> c = client_->Download(kept->kept().at("c").handle());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->data().size(), 256u * 512u * sizeof(double));
  const auto* values = reinterpret_cast<const double*>(c->data().data());
  EXPECT_EQ(values[0], 6.0);
  EXPECT_EQ(values[256 * 512 - 1], 6.0);
}

}  // namespace
}  // namespace matrixd::server::testing
