// The cells of matrixd_bench's tables: fixed formats so that runs can be compared line by line,
// and "-" for what was not measured.
#ifndef MATRIXD_TESTS_BENCH_BENCH_FORMAT_H_
#define MATRIXD_TESTS_BENCH_BENCH_FORMAT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace matrixd::bench {

// "\n== title ==", then each note indented on a line of its own (what a column means, the
// target), then the column line.
void PrintHeader(const std::string& title, const std::string& columns,
                 const std::vector<std::string>& notes = {});

// Seconds with four decimals.
std::string Seconds(double s);
// Seconds as milliseconds with three decimals.
std::string Milliseconds(double s);
// Seconds as microseconds with one decimal.
std::string Microseconds(double s);
// Three significant digits (for times from microseconds to hours, and rates).
std::string Significant(double x);
// flops / s / unit, one decimal.
std::string Rate(double flops, double s, double unit);
// Millions of matrices per second, three significant digits.
std::string MillionsPerSecond(double count, double s);
// x / y, two decimals.
std::string Ratio(double x, double y);
// 100 x / y, no decimals, with a percent sign.
std::string Percent(double x, double y);
// 100 x / y, one decimal, with a percent sign (x may be negative).
std::string PercentTenths(double x, double y);

// row(n) for each n of `sizes`; a row that fails prints "n  failed: status" in its place.
void RowsBySize(const std::vector<int>& sizes, const std::function<absl::Status(int)>& row);

// f(value), or the status when there is no value.
std::string OrError(const absl::StatusOr<double>& value,
                    const std::function<std::string(double)>& f);

}  // namespace matrixd::bench

#endif  // MATRIXD_TESTS_BENCH_BENCH_FORMAT_H_
