// --max_matrix_elements bounds the matrices that CreateMatrix, Upload and Generate make, as it
// bounds the operands of computing calls: a larger one is refused at once with INVALID_ARGUMENT
// naming rows x cols and the limit, and nothing is allocated; one at the limit is made.
// (TestLimits: 65536 elements, so 256 x 256 is at the limit.)
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/matrix_values.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kLimit = int64_t{1} << 16;

class ResidentLimitsTest : public ServerTest {
 protected:
  void SetUp() override { ASSERT_EQ(TestLimits().max_elements, kLimit); }

  // A refused call allocated nothing: the listing is empty and no bytes are held.
  static void ExpectNothingResident() {
    absl::StatusOr<v1::ListMatricesResponse> listed = client().ListMatrices();
    ASSERT_TRUE(listed.ok()) << listed.status();
    EXPECT_EQ(listed->matrices_size(), 0) << listed->DebugString();
    EXPECT_EQ(listed->resident_bytes(), 0u);
  }

  static v1::Matrix Zeros(int64_t rows, int64_t cols) {
    return MakeMatrix<double>(rows, cols, std::vector<double>(static_cast<size_t>(rows * cols)));
  }

  // Upload through CreateMatrix and parallel parts (the path for large matrices).
  static UploadOptions ThroughCreateMatrix() {
    return {.parallel_streams = 2, .parallel_min_bytes = 0};
  }
  // Upload as one stream (its first message names the shape).
  static UploadOptions AsOneStream() { return {.parallel_streams = 1}; }

  static v1::GenerateRequest Random(int64_t rows, int64_t cols) {
    v1::GenerateRequest request;
    request.set_rows(rows);
    request.set_cols(cols);
    request.set_dtype(v1::DTYPE_FLOAT64);
    request.set_generator(v1::GENERATOR_RANDOM);
    return request;
  }
};

TEST_F(ResidentLimitsTest, CreateMatrixOverTheLimitIsInvalidArgumentNamingIt) {
  const absl::Status status = client().Upload(Zeros(257, 256), ThroughCreateMatrix()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("CreateMatrix has rows x cols = 257 x 256 = 65792 elements"),
                    HasSubstr(absl::StrCat("max_matrix_elements = ", kLimit))));
  ExpectNothingResident();
}

TEST_F(ResidentLimitsTest, UploadOverTheLimitIsInvalidArgumentNamingIt) {
  const absl::Status status = client().Upload(Zeros(1, kLimit + 1), AsOneStream()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("upload's first message has rows x cols = 1 x 65537"),
                    HasSubstr(absl::StrCat("max_matrix_elements = ", kLimit))));
  ExpectNothingResident();
  ExpectStillServing();
}

TEST_F(ResidentLimitsTest, GenerateOverTheLimitIsInvalidArgumentNamingIt) {
  const absl::Status status = client().Generate(Random(300, 300)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("Generate has rows x cols = 300 x 300 = 90000 elements"),
                    HasSubstr(absl::StrCat("max_matrix_elements = ", kLimit))));
  ExpectNothingResident();
}

// Far more than memory admits: the limit answers, not the allocator (RESOURCE_EXHAUSTED).
TEST_F(ResidentLimitsTest, HugeShapeIsRefusedByTheLimitNotByMemory) {
  const absl::Status status =
      client().Generate(Random(int64_t{1} << 30, int64_t{1} << 30)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("max_matrix_elements"));
  ExpectNothingResident();
}

TEST_F(ResidentLimitsTest, MatricesAtTheLimitAreMade) {
  const v1::Matrix at_limit = Zeros(256, 256);
  for (const UploadOptions& options : {ThroughCreateMatrix(), AsOneStream()}) {
    absl::StatusOr<RemoteMatrix> remote = client().Upload(at_limit, options);
    ASSERT_TRUE(remote.ok()) << remote.status();
    absl::StatusOr<v1::Matrix> back = client().Download(remote->handle());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->data(), at_limit.data());
  }
  absl::StatusOr<v1::ResidentMatrix> made = client().Generate(Random(1, kLimit));
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->rows(), 1);
  EXPECT_EQ(made->cols(), kLimit);
  ASSERT_TRUE(client().Release(made->handle()).ok());
}

}  // namespace
}  // namespace matrixd::server::testing
