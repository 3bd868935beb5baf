#include "tests/bench/bench_format.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace matrixd::bench {
namespace {

bool Measured(double x) { return !std::isnan(x); }

std::string Format(const char* format, double x) {
  char text[48];
  std::snprintf(text, sizeof(text), format, x);
  return text;
}

}  // namespace

void PrintHeader(const std::string& title, const std::string& columns,
                 const std::vector<std::string>& notes) {
  std::printf("\n== %s ==\n", title.c_str());
  for (const std::string& note : notes) std::printf("  %s\n", note.c_str());
  std::printf("%s\n", columns.c_str());
}

std::string Seconds(double s) { return Measured(s) ? Format("%.4f", s) : "-"; }

std::string Milliseconds(double s) { return Measured(s) ? Format("%.3f", s * 1e3) : "-"; }

std::string Microseconds(double s) { return Measured(s) ? Format("%.1f", s * 1e6) : "-"; }
std::string Significant(double x) { return Measured(x) ? Format("%.3g", x) : "-"; }

std::string Rate(double flops, double s, double unit) {
  return Measured(s) && s > 0 ? Format("%.1f", flops / s / unit) : "-";
}

std::string MillionsPerSecond(double count, double s) {
  return Measured(s) && s > 0 ? Format("%.3g", count / s / 1e6) : "-";
}

std::string Ratio(double x, double y) {
  return Measured(x) && Measured(y) && y > 0 ? Format("%.2f", x / y) : "-";
}

std::string Percent(double x, double y) {
  return Measured(x) && Measured(y) && y > 0 ? Format("%.0f%%", 100.0 * x / y) : "-";
}

std::string PercentTenths(double x, double y) {
  return Measured(x) && Measured(y) && y > 0 ? Format("%.1f%%", 100.0 * x / y) : "-";
}

void RowsBySize(const std::vector<int>& sizes, const std::function<absl::Status(int)>& row) {
  for (const int n : sizes) {
    const absl::Status status = row(n);
    if (!status.ok()) std::printf("%-6d failed: %s\n", n, std::string(status.ToString()).c_str());
  }
}

std::string OrError(const absl::StatusOr<double>& value,
                    const std::function<std::string(double)>& f) {
  return value.ok() ? f(*value) : std::string(value.status().ToString());
}

}  // namespace matrixd::bench
