#include "tests/multi_gpu/forked_ranks.h"

#include <unistd.h>

#include <chrono>
#include <string>

#include "gtest/gtest.h"

namespace matrixd::testing {
namespace {

TEST(ForkedRanks, EveryRankGetsRankZerosToken) {
  // Rank 0 makes a token unique to its own process; each rank exits 0 only if it received it.
  const int code = RunForkedRanks(
      4, []() -> absl::StatusOr<std::string> { return "token-" + std::to_string(getpid()); },
      [](int rank, const std::string& token) {
        if (rank == 0) return token == "token-" + std::to_string(getpid()) ? 0 : 10;
        return token.rfind("token-", 0) == 0 && token != "token-" + std::to_string(getpid()) ? 0
                                                                                             : 11;
      });
  EXPECT_EQ(code, 0);
}

TEST(ForkedRanks, ReturnsTheFailingRanksExitCode) {
  const int code = RunForkedRanks(
      3, []() -> absl::StatusOr<std::string> { return "t"; },
      [](int rank, const std::string&) { return rank == 2 ? 7 : 0; });
  EXPECT_EQ(code, 7);
}

TEST(ForkedRanks, AFailedRankEndsTheRanksWaitingForIt) {
  // Rank 1 stands for a rank stuck in a collective that rank 0 will never join.
  const auto start = std::chrono::steady_clock::now();
  const int code = RunForkedRanks(
      2, []() -> absl::StatusOr<std::string> { return "t"; },
      [](int rank, const std::string&) {
        if (rank == 1) {
          sleep(60);
          return 0;
        }
        return 3;
      });
  EXPECT_EQ(code, 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(ForkedRanks, NoTokenFailsEveryRank) {
  const int code = RunForkedRanks(
      2, []() -> absl::StatusOr<std::string> { return absl::UnavailableError("no network"); },
      [](int, const std::string&) { return 0; });
  EXPECT_NE(code, 0);
}

}  // namespace
}  // namespace matrixd::testing
