// ParseDeviceMemoryLimit: the --device_memory_limit syntax.
#include "server/memory_limit.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace matrixd::server {
namespace {

uint64_t BytesOf(absl::string_view text) {
  absl::StatusOr<DeviceMemoryLimit> limit = ParseDeviceMemoryLimit(text);
  EXPECT_TRUE(limit.ok()) << text << ": " << limit.status();
  return limit.ok() ? limit->bytes : 0;
}

TEST(DeviceMemoryLimitFlag, PercentSetsTheFractionOfEachDevice) {
  absl::StatusOr<DeviceMemoryLimit> limit = ParseDeviceMemoryLimit("90%");
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->bytes, 0u);
  EXPECT_DOUBLE_EQ(limit->fraction, 0.9);
  EXPECT_DOUBLE_EQ(ParseDeviceMemoryLimit("100%")->fraction, 1.0);
  EXPECT_DOUBLE_EQ(ParseDeviceMemoryLimit("12.5 %")->fraction, 0.125);
}

TEST(DeviceMemoryLimitFlag, SizesTakeDecimalAndBinaryUnits) {
  EXPECT_EQ(BytesOf("1500000000"), 1'500'000'000u);
  EXPECT_EQ(BytesOf("512B"), 512u);
  EXPECT_EQ(BytesOf("64G"), 64'000'000'000u);
  EXPECT_EQ(BytesOf("64GB"), 64'000'000'000u);
  EXPECT_EQ(BytesOf("60GiB"), 60ull << 30);
  EXPECT_EQ(BytesOf("60gi"), 60ull << 30);
  EXPECT_EQ(BytesOf("1.5TiB"), 3ull << 39);
  EXPECT_EQ(BytesOf("2Ki"), 2048u);
  EXPECT_EQ(BytesOf(" 3 MiB "), 3ull << 20);
  EXPECT_EQ(BytesOf("8000000T"), 8'000'000'000'000'000'000ull);
}

TEST(DeviceMemoryLimitFlag, RejectsMalformedZeroAndHugeValues) {
  for (const char* text : {"", "%", "GiB", "0", "0%", "101%", "-5G", "5 apples", "1e3", "0.1B",
                           "1.2.3G", "99999999T", "nan", "90%%"}) {
    EXPECT_EQ(ParseDeviceMemoryLimit(text).status().code(), absl::StatusCode::kInvalidArgument)
        << "\"" << text << "\"";
  }
}

}  // namespace
}  // namespace matrixd::server
