#include "core/status_macros.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

absl::Status Fail(absl::string_view why) { return absl::InvalidArgumentError(why); }
absl::StatusOr<std::unique_ptr<int>> Make(int value, bool ok) {
  if (!ok) return absl::NotFoundError("no value");
  return std::make_unique<int>(value);
}

absl::Status TwoSteps(bool first_ok, int* reached) {
  MATRIXD_RETURN_IF_ERROR(first_ok ? absl::OkStatus() : Fail("first"));
  *reached = 1;
  MATRIXD_RETURN_IF_ERROR(Fail("second"));
  *reached = 2;
  return absl::OkStatus();
}

TEST(StatusMacros, ReturnIfErrorReturnsTheFirstFailureUnchanged) {
  int reached = 0;
  EXPECT_EQ(TwoSteps(false, &reached), absl::InvalidArgumentError("first"));
  EXPECT_EQ(reached, 0);
  EXPECT_EQ(TwoSteps(true, &reached), absl::InvalidArgumentError("second"));
  EXPECT_EQ(reached, 1);
}

// Two declarations in one scope: the temporaries must have distinct names. Move-only values.
absl::StatusOr<int> Sum(bool first_ok, bool second_ok) {
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<int> a, Make(2, first_ok));
  MATRIXD_ASSIGN_OR_RETURN(const std::unique_ptr<int> b, Make(3, second_ok));
  return *a + *b;
}

TEST(StatusMacros, AssignOrReturnDeclaresTheValueOrReturnsTheStatus) {
  EXPECT_EQ(Sum(true, true).value(), 5);
  EXPECT_EQ(Sum(false, true).status(), absl::NotFoundError("no value"));
  EXPECT_EQ(Sum(true, false).status(), absl::NotFoundError("no value"));
}

absl::Status AssignExisting(bool ok, std::string* out) {
  MATRIXD_ASSIGN_OR_RETURN(*out, ok ? absl::StatusOr<std::string>("set")
                                    : absl::StatusOr<std::string>(absl::AbortedError("x")));
  return absl::OkStatus();
}

TEST(StatusMacros, AssignOrReturnAssignsToAnExistingVariable) {
  std::string value = "before";
  EXPECT_EQ(AssignExisting(false, &value).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(value, "before");
  EXPECT_TRUE(AssignExisting(true, &value).ok());
  EXPECT_EQ(value, "set");
}

}  // namespace
}  // namespace matrixd
