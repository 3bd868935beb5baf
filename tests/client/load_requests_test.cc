#include "client/load_requests.h"

#include <vector>

#include "gtest/gtest.h"

namespace matrixd {
namespace {

TEST(MakeLoadRequests, SingleLuIsAPlainFactorization) {
  LoadOptions options;
  options.op = LoadOp::kLu;
  options.n = 8;
  options.requests = 3;
  absl::StatusOr<std::vector<v1::JobRequest>> requests = MakeLoadRequests(options);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 3u);
  const v1::FactorizeRequest& lu = (*requests)[0].factorize();
  EXPECT_EQ(lu.kind(), v1::FACTORIZATION_KIND_LU);
  EXPECT_EQ(lu.batch_count(), 0);
  EXPECT_EQ(lu.matrix().rows(), 8);
  EXPECT_EQ(lu.matrix().cols(), 8);
}

TEST(MakeLoadRequests, BatchedLuStacksTheMatrices) {
  LoadOptions options;
  options.op = LoadOp::kLu;
  options.n = 4;
  options.batch = 16;
  options.requests = 2;
  absl::StatusOr<std::vector<v1::JobRequest>> requests = MakeLoadRequests(options);
  ASSERT_TRUE(requests.ok()) << requests.status();
  const v1::FactorizeRequest& lu = (*requests)[1].factorize();
  EXPECT_EQ(lu.batch_count(), 16);
  EXPECT_EQ(lu.matrix().rows(), 64);
  EXPECT_EQ(lu.matrix().cols(), 4);
  EXPECT_EQ(lu.matrix().data().size(), 64u * 4 * 8);
}

TEST(MakeLoadRequests, EachOpFillsItsRequest) {
  LoadOptions options;
  options.n = 5;
  options.requests = 1;
  options.op = LoadOp::kGemm;
  absl::StatusOr<std::vector<v1::JobRequest>> gemm = MakeLoadRequests(options);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  EXPECT_EQ((*gemm)[0].multiply().a().rows(), 5);
  EXPECT_NE((*gemm)[0].multiply().a().data(), (*gemm)[0].multiply().b().data());
  options.op = LoadOp::kPermanent;
  options.method = "glynn";
  absl::StatusOr<std::vector<v1::JobRequest>> permanent = MakeLoadRequests(options);
  ASSERT_TRUE(permanent.ok()) << permanent.status();
  EXPECT_EQ((*permanent)[0].permanent().method(), v1::PERMANENT_METHOD_GLYNN);
  options.op = LoadOp::kDeterminant;
  options.method = "condensation";
  absl::StatusOr<std::vector<v1::JobRequest>> determinant = MakeLoadRequests(options);
  ASSERT_TRUE(determinant.ok()) << determinant.status();
  EXPECT_EQ((*determinant)[0].determinant().method(), v1::DETERMINANT_METHOD_CONDENSATION);
}

TEST(MakeLoadRequests, SameSeedSameRequestsAndTheyDiffer) {
  LoadOptions options;
  options.requests = 2;
  absl::StatusOr<std::vector<v1::JobRequest>> first = MakeLoadRequests(options);
  absl::StatusOr<std::vector<v1::JobRequest>> again = MakeLoadRequests(options);
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ((*first)[0].SerializeAsString(), (*again)[0].SerializeAsString());
  EXPECT_NE((*first)[0].SerializeAsString(), (*first)[1].SerializeAsString());
}

TEST(LoadRequestPoolSize, IsCappedByCountAndBytes) {
  LoadOptions options;
  options.requests = 3;
  EXPECT_EQ(LoadRequestPoolSize(options), 3);
  options.requests = 100000;
  EXPECT_EQ(LoadRequestPoolSize(options), kMaxDistinctLoadRequests);
  options.requests = 0;
  options.duration = absl::Seconds(1);
  EXPECT_EQ(LoadRequestPoolSize(options), kMaxDistinctLoadRequests);
  options.n = 4096;  // 128 MiB per float64 matrix: two fit in the pool's bytes
  EXPECT_EQ(LoadRequestPoolSize(options), 2);
  options.op = LoadOp::kGemm;  // A and B: one request
  EXPECT_EQ(LoadRequestPoolSize(options), 1);
  options.n = 100000;  // over the cap alone: still one request
  EXPECT_EQ(LoadRequestPoolSize(options), 1);
}

TEST(MakeLoadRequests, BadOptionsAreInvalidArgument) {
  LoadOptions options;
  options.batch = 4;  // det has no batched form
  EXPECT_EQ(MakeLoadRequests(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SendLoadRequest, EmptyRequestIsInvalidArgument) {
  Client client("127.0.0.1:1");
  EXPECT_EQ(SendLoadRequest(client, v1::JobRequest()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace matrixd
