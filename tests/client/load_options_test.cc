#include "client/load_options.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;

TEST(LoadOptions, DefaultsAreValid) { EXPECT_TRUE(ValidateLoadOptions(LoadOptions{}).ok()); }

TEST(LoadOptions, OpNamesRoundTrip) {
  for (LoadOp op : {LoadOp::kDeterminant, LoadOp::kLu, LoadOp::kGemm, LoadOp::kPermanent}) {
    absl::StatusOr<LoadOp> parsed = ParseLoadOp(LoadOpName(op));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, op);
  }
}

TEST(LoadOptions, UnknownOpIsRejectedNamingTheChoices) {
  absl::StatusOr<LoadOp> op = ParseLoadOp("qr");
  EXPECT_EQ(op.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(op.status().message(), HasSubstr("det, lu, gemm or permanent"));
}

TEST(LoadOptions, ApiNamesRoundTripAndUnknownIsRejected) {
  for (LoadApi api : {LoadApi::kCallback, LoadApi::kBlocking, LoadApi::kQueue}) {
    absl::StatusOr<LoadApi> parsed = ParseLoadApi(LoadApiName(api));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, api);
  }
  absl::StatusOr<LoadApi> bad = ParseLoadApi("async");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("--load_api 'async': want callback, blocking or queue"));
}

TEST(LoadOptions, SizeMustBePositive) {
  LoadOptions options;
  options.n = 0;
  EXPECT_THAT(ValidateLoadOptions(options).message(), HasSubstr("--n is 0"));
}

TEST(LoadOptions, ZeroRequestsNeedADuration) {
  LoadOptions options;
  options.requests = 0;
  EXPECT_THAT(ValidateLoadOptions(options).message(), HasSubstr("needs --duration"));
  options.duration = absl::Seconds(2);
  EXPECT_TRUE(ValidateLoadOptions(options).ok());
}

TEST(LoadOptions, NegativeCountsAreRejected) {
  LoadOptions requests;
  requests.requests = -1;
  EXPECT_FALSE(ValidateLoadOptions(requests).ok());
  LoadOptions duration;
  duration.duration = absl::Seconds(-1);
  EXPECT_FALSE(ValidateLoadOptions(duration).ok());
  LoadOptions batch;
  batch.op = LoadOp::kLu;
  batch.batch = 0;
  EXPECT_FALSE(ValidateLoadOptions(batch).ok());
}

TEST(LoadOptions, ConcurrencyIsBounded) {
  LoadOptions options;
  options.concurrency = 0;
  EXPECT_THAT(ValidateLoadOptions(options).message(), HasSubstr("--concurrency is 0"));
  options.concurrency = 100000;
  EXPECT_FALSE(ValidateLoadOptions(options).ok());
}

TEST(LoadOptions, ConnectionsAreBetweenOneAndTheConcurrency) {
  LoadOptions options;
  options.concurrency = 8;
  options.connections = 8;
  EXPECT_TRUE(ValidateLoadOptions(options).ok());
  options.connections = 0;
  EXPECT_THAT(ValidateLoadOptions(options).message(), HasSubstr("--connections is 0"));
  options.connections = 9;
  EXPECT_THAT(ValidateLoadOptions(options).message(), HasSubstr("want 1 to --concurrency (8)"));
}

TEST(LoadOptions, OnlyLuHasABatchedForm) {
  LoadOptions options;
  options.batch = 64;
  options.op = LoadOp::kLu;
  EXPECT_TRUE(ValidateLoadOptions(options).ok());
  for (LoadOp op : {LoadOp::kDeterminant, LoadOp::kGemm, LoadOp::kPermanent}) {
    options.op = op;
    EXPECT_THAT(ValidateLoadOptions(options).message(), HasSubstr("only --op=lu"));
  }
}

TEST(LoadOptions, MethodMustSuitTheOp) {
  LoadOptions options;
  options.op = LoadOp::kDeterminant;
  options.method = "condensation";
  EXPECT_TRUE(ValidateLoadOptions(options).ok());
  options.method = "glynn";
  EXPECT_THAT(ValidateLoadOptions(options).message(), HasSubstr("det takes"));
  options.op = LoadOp::kPermanent;
  EXPECT_TRUE(ValidateLoadOptions(options).ok());
  options.op = LoadOp::kGemm;
  EXPECT_THAT(ValidateLoadOptions(options).message(), HasSubstr("takes auto only"));
}

TEST(LoadOptions, UnspecifiedDtypeIsRejected) {
  LoadOptions options;
  options.dtype = v1::DTYPE_UNSPECIFIED;
  EXPECT_FALSE(ValidateLoadOptions(options).ok());
}

TEST(LoadOptions, BatchedLuCountsEveryMatrixOtherOpsOne) {
  LoadOptions options;
  options.op = LoadOp::kLu;
  options.batch = 64;
  EXPECT_EQ(MatricesPerRequest(options), 64);
  options.op = LoadOp::kGemm;
  options.batch = 1;
  EXPECT_EQ(MatricesPerRequest(options), 1);
}

}  // namespace
}  // namespace matrixd
