// matrixctl load's runner (client/load_runner.h) against the real server on the CPU backend:
// every request answered and counted, batched LU counting matrices, failures counted by code
// without ending the run, and an unreachable server failing before the run; each with callback,
// blocking and completion-queue calls.
#include <string>

#include "absl/strings/str_cat.h"
#include "client/load_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

class LoadRunTest : public ServerTest, public ::testing::WithParamInterface<LoadApi> {
 protected:
  static absl::StatusOr<LoadReport> Run(LoadOptions options) {
    options.api = GetParam();
    return RunLoad(server().address(), {.deadline = absl::Seconds(20)}, options);
  }
};

INSTANTIATE_TEST_SUITE_P(Apis, LoadRunTest,
                         ::testing::Values(LoadApi::kCallback, LoadApi::kBlocking, LoadApi::kQueue),
                         [](const ::testing::TestParamInfo<LoadApi>& info) {
                           return std::string(LoadApiName(info.param));
                         });

TEST_P(LoadRunTest, EveryDeterminantIsAnsweredAndTimed) {
  LoadOptions options;
  options.n = 8;
  options.requests = 40;
  options.concurrency = 4;
  absl::StatusOr<LoadReport> report = Run(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tally.requests, 40);
  EXPECT_EQ(report->tally.ok_requests, 40);
  EXPECT_EQ(report->tally.ok_latencies.size(), 40u);
  EXPECT_TRUE(report->tally.errors.empty());
  EXPECT_GT(report->wall, absl::ZeroDuration());
}

TEST_P(LoadRunTest, BatchedLuCountsEveryMatrix) {
  LoadOptions options;
  options.op = LoadOp::kLu;
  options.n = 8;
  options.batch = 16;
  options.requests = 10;
  options.concurrency = 3;
  absl::StatusOr<LoadReport> report = Run(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tally.ok_requests, 10);
  EXPECT_EQ(report->tally.ok_matrices, 160);
  EXPECT_THAT(FormatLoadReport(*report), HasSubstr("matrices     160\n"));
}

TEST_P(LoadRunTest, RejectedRequestsAreCountedByCodeAndTheRunGoesOn) {
  LoadOptions options;
  options.op = LoadOp::kLu;
  options.dtype = v1::DTYPE_UINT32;  // the server factorizes floating dtypes only
  options.n = 4;
  options.requests = 12;
  options.concurrency = 2;
  absl::StatusOr<LoadReport> report = Run(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tally.requests, 12);
  EXPECT_EQ(report->tally.ok_requests, 0);
  ASSERT_EQ(report->tally.errors.size(), 1u);
  const LoadErrors& errors = report->tally.errors.at(absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(errors.count, 12);
  EXPECT_FALSE(errors.first_message.empty());
}

TEST_P(LoadRunTest, DurationEndsARunWithoutACount) {
  LoadOptions options;
  options.n = 4;
  options.requests = 0;
  options.duration = absl::Milliseconds(300);
  options.concurrency = 2;
  absl::StatusOr<LoadReport> report = Run(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GT(report->tally.ok_requests, 0);
  EXPECT_LT(report->wall, absl::Seconds(10));
}

TEST_P(LoadRunTest, RequestsSpreadOverConnectionsAreAllAnswered) {
  LoadOptions options;
  options.op = LoadOp::kGemm;
  options.n = 6;
  options.requests = 50;
  options.concurrency = 8;
  options.connections = 3;
  absl::StatusOr<LoadReport> report = Run(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tally.ok_requests, 50);
  EXPECT_THAT(FormatLoadReport(*report),
              HasSubstr(absl::StrCat("over 3 connections (", LoadApiName(GetParam()), " calls)")));
}

// Requests over the client's message limit fail inside the call that starts them (the
// completion runs before the start returns): a long run of them is counted in full, without a
// completion starting the next request from inside the last (which would recurse). Queue calls
// serialize their requests before the run, so there the run itself is refused.
TEST_P(LoadRunTest, RequestsFailingAtTheirStartAreCountedWithoutRecursion) {
  LoadOptions options;
  options.n = 32;  // 8 KiB of entries, over the 1 KiB limit below
  options.requests = 200000;
  options.concurrency = 2;
  options.api = GetParam();
  absl::StatusOr<LoadReport> report = RunLoad(
      server().address(), {.deadline = absl::Seconds(20), .max_message_bytes = 1024}, options);
  if (GetParam() == LoadApi::kQueue) {
    EXPECT_EQ(report.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(report.status().message(), HasSubstr("max_message_bytes of 1024"));
    return;
  }
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tally.requests, 200000);
  EXPECT_EQ(report->tally.ok_requests, 0);
  ASSERT_EQ(report->tally.errors.size(), 1u);
  EXPECT_EQ(report->tally.errors.begin()->second.count, 200000);
}

TEST(LoadRun, UnreachableServerFailsBeforeTheRun) {
  LoadOptions options;
  options.concurrency = 1;
  absl::StatusOr<LoadReport> report =
      RunLoad("127.0.0.1:1", {.deadline = absl::Seconds(20)}, options);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(report.status().message(), HasSubstr("before the run"));
}

}  // namespace
}  // namespace matrixd::server::testing
