#include "client/load_report.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<absl::Duration> OneToHundredMilliseconds() {
  std::vector<absl::Duration> sorted;
  for (int k = 1; k <= 100; ++k) sorted.push_back(absl::Milliseconds(k));
  return sorted;
}

TEST(NearestRankPercentile, HundredSamplesGiveTheRankedSample) {
  const std::vector<absl::Duration> sorted = OneToHundredMilliseconds();
  EXPECT_EQ(NearestRankPercentile(sorted, 0.50), absl::Milliseconds(50));
  EXPECT_EQ(NearestRankPercentile(sorted, 0.90), absl::Milliseconds(90));
  EXPECT_EQ(NearestRankPercentile(sorted, 0.99), absl::Milliseconds(99));
  EXPECT_EQ(NearestRankPercentile(sorted, 1.0), absl::Milliseconds(100));
}

TEST(NearestRankPercentile, RoundsTheRankUp) {
  const std::vector<absl::Duration> sorted = {absl::Milliseconds(1), absl::Milliseconds(2),
                                              absl::Milliseconds(3)};
  EXPECT_EQ(NearestRankPercentile(sorted, 0.50), absl::Milliseconds(2));  // ceil(1.5) = 2
  EXPECT_EQ(NearestRankPercentile(sorted, 0.99), absl::Milliseconds(3));
}

TEST(NearestRankPercentile, OneSampleIsEveryPercentile) {
  const std::vector<absl::Duration> sorted = {absl::Seconds(7)};
  EXPECT_EQ(NearestRankPercentile(sorted, 0.01), absl::Seconds(7));
  EXPECT_EQ(NearestRankPercentile(sorted, 0.99), absl::Seconds(7));
}

TEST(LoadTally, CountsOkMatricesAndErrorsByCode) {
  LoadTally tally;
  const absl::Time t = absl::UnixEpoch();
  tally.Record(absl::OkStatus(), 64, absl::Milliseconds(3), t);
  tally.Record(absl::InvalidArgumentError("bad dtype"), 64, absl::Milliseconds(1), t);
  tally.Record(absl::InvalidArgumentError("later"), 64, absl::Milliseconds(1),
               t + absl::Seconds(1));
  tally.Record(absl::ResourceExhaustedError("queue full"), 64, absl::Milliseconds(1), t);
  EXPECT_EQ(tally.requests, 4);
  EXPECT_EQ(tally.ok_requests, 1);
  EXPECT_EQ(tally.ok_matrices, 64);
  EXPECT_EQ(tally.ok_latencies.size(), 1u);
  EXPECT_EQ(tally.errors[absl::StatusCode::kInvalidArgument].count, 2);
  EXPECT_EQ(tally.errors[absl::StatusCode::kInvalidArgument].first_message, "bad dtype");
  EXPECT_EQ(tally.errors[absl::StatusCode::kResourceExhausted].count, 1);
}

TEST(LoadTally, MergeAddsCountsAndKeepsTheEarliestMessage) {
  const absl::Time t = absl::UnixEpoch();
  LoadTally first;
  first.Record(absl::UnavailableError("late"), 1, absl::Milliseconds(1), t + absl::Seconds(5));
  first.Record(absl::OkStatus(), 1, absl::Milliseconds(2), t);
  LoadTally second;
  second.Record(absl::UnavailableError("early"), 1, absl::Milliseconds(1), t);
  second.Record(absl::OkStatus(), 1, absl::Milliseconds(4), t);
  first.Merge(second);
  EXPECT_EQ(first.requests, 4);
  EXPECT_EQ(first.ok_requests, 2);
  EXPECT_EQ(first.ok_latencies.size(), 2u);
  EXPECT_EQ(first.errors[absl::StatusCode::kUnavailable].count, 2);
  EXPECT_EQ(first.errors[absl::StatusCode::kUnavailable].first_message, "early");
}

TEST(FormatLoadReport, PrintsRatesPercentilesAndEachErrorCode) {
  LoadReport report;
  report.options.op = LoadOp::kLu;
  report.options.batch = 10;
  report.wall = absl::Seconds(2);
  report.distinct_requests = 4;
  for (int k = 1; k <= 100; ++k) {
    report.tally.Record(absl::OkStatus(), 10, absl::Milliseconds(k), absl::UnixEpoch());
  }
  report.tally.Record(absl::InvalidArgumentError("matrix.dtype uint32"), 10, absl::ZeroDuration(),
                      absl::UnixEpoch());
  const std::string text = FormatLoadReport(report);
  EXPECT_THAT(text, HasSubstr("requests     101\n"));
  EXPECT_THAT(text, HasSubstr("failed       1\n"));
  EXPECT_THAT(text, HasSubstr("matrices     1000\n"));
  EXPECT_THAT(text, HasSubstr("requests/s   50.5\n"));
  EXPECT_THAT(text, HasSubstr("matrices/s   500.0\n"));
  EXPECT_THAT(text, HasSubstr("p50_ms       50.000\n"));
  EXPECT_THAT(text, HasSubstr("p99_ms       99.000\n"));
  EXPECT_THAT(text, HasSubstr("error        INVALID_ARGUMENT 1 first: matrix.dtype uint32\n"));
}

TEST(FormatLoadReport, NoSuccessfulRequestHasNoPercentiles) {
  LoadReport report;
  report.wall = absl::Seconds(1);
  report.tally.Record(absl::UnavailableError("down"), 1, absl::ZeroDuration(), absl::UnixEpoch());
  const std::string text = FormatLoadReport(report);
  EXPECT_THAT(text, HasSubstr("p50_ms       -\n"));
  EXPECT_THAT(text, Not(HasSubstr("error        OK")));
}

}  // namespace
}  // namespace matrixd
