#include "server/memory_limit.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace matrixd::server {
namespace {

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--device_memory_limit=\"", text, "\": ", why, " (want e.g. 90% or 60GiB)"));
}

// Bytes per unit, 0 for an unknown unit.
double UnitBytes(absl::string_view unit) {
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"", 1.0},       {"b", 1.0},      {"k", 1e3},     {"kb", 1e3},     {"m", 1e6},
      {"mb", 1e6},     {"g", 1e9},      {"gb", 1e9},    {"t", 1e12},     {"tb", 1e12},
      {"ki", 1024.0},  {"kib", 1024.0}, {"mi", 0x1p20}, {"mib", 0x1p20}, {"gi", 0x1p30},
      {"gib", 0x1p30}, {"ti", 0x1p40},  {"tib", 0x1p40}};
  const std::string lower = absl::AsciiStrToLower(unit);
  for (const auto& [name, bytes] : kUnits) {
    if (lower == name) return bytes;
  }
  return 0.0;
}

}  // namespace

absl::StatusOr<DeviceMemoryLimit> ParseDeviceMemoryLimit(absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty()) return Invalid(text, "empty");
  size_t number_end = 0;
  while (number_end < trimmed.size() &&
         (std::isdigit(static_cast<unsigned char>(trimmed[number_end])) ||
          trimmed[number_end] == '.')) {
    ++number_end;
  }
  double number = 0.0;
  if (number_end == 0 || !absl::SimpleAtod(trimmed.substr(0, number_end), &number) ||
      !std::isfinite(number)) {
    return Invalid(text, "does not start with a number");
  }
  const absl::string_view unit = absl::StripAsciiWhitespace(trimmed.substr(number_end));
  DeviceMemoryLimit limit;
  if (unit == "%") {
    if (!(number > 0.0 && number <= 100.0)) return Invalid(text, "a share must be in (0, 100]%");
    limit.fraction = number / 100.0;
    return limit;
  }
  const double unit_bytes = UnitBytes(unit);
  if (unit_bytes == 0.0) return Invalid(text, absl::StrCat("unknown unit \"", unit, "\""));
  const double bytes = std::floor(number * unit_bytes);
  if (bytes < 1.0) return Invalid(text, "the limit must be at least one byte");
  if (bytes > 0x1p63) return Invalid(text, "larger than 2^63 bytes");
  limit.bytes = static_cast<uint64_t>(bytes);
  return limit;
}

}  // namespace matrixd::server
