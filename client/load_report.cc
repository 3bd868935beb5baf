#include "client/load_report.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/matrix_values.h"

namespace matrixd {
namespace {

std::string Line(absl::string_view name, absl::string_view value) {
  return absl::StrFormat("%-12s %s\n", name, value);
}

std::string Milliseconds(absl::Duration d) {
  return absl::StrFormat("%.3f", absl::ToDoubleMilliseconds(d));
}

}  // namespace

void LoadTally::Record(const absl::Status& status, int64_t matrices, absl::Duration latency,
                       absl::Time finished_at) {
  ++requests;
  if (status.ok()) {
    ++ok_requests;
    ok_matrices += matrices;
    ok_latencies.push_back(latency);
    return;
  }
  LoadErrors& errors_of_code = errors[status.code()];
  ++errors_of_code.count;
  if (finished_at < errors_of_code.first_at) {
    errors_of_code.first_at = finished_at;
    errors_of_code.first_message = std::string(status.message());
  }
}

void LoadTally::Merge(const LoadTally& other) {
  requests += other.requests;
  ok_requests += other.ok_requests;
  ok_matrices += other.ok_matrices;
  ok_latencies.insert(ok_latencies.end(), other.ok_latencies.begin(), other.ok_latencies.end());
  for (const auto& [code, theirs] : other.errors) {
    LoadErrors& ours = errors[code];
    ours.count += theirs.count;
    if (theirs.first_at < ours.first_at) {
      ours.first_at = theirs.first_at;
      ours.first_message = theirs.first_message;
    }
  }
}

absl::Duration NearestRankPercentile(absl::Span<const absl::Duration> sorted, double q) {
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t index = rank < 1.0 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

std::string FormatLoadReport(const LoadReport& report) {
  const LoadOptions& options = report.options;
  const LoadTally& tally = report.tally;
  const double seconds = absl::ToDoubleSeconds(report.wall);
  auto rate = [&](int64_t count) {
    return seconds > 0 ? absl::StrFormat("%.1f", static_cast<double>(count) / seconds)
                       : std::string("-");
  };
  std::string out = Line(
      "load", absl::StrCat(LoadOpName(options.op), " ", options.n, "x", options.n, " ",
                           DTypeFlagName(options.dtype), ", batch ", options.batch,
                           ", concurrency ", options.concurrency, " over ", options.connections,
                           options.connections == 1 ? " connection" : " connections", " (",
                           LoadApiName(options.api), " calls), method ", options.method, ", ",
                           report.distinct_requests, " distinct requests"));
  absl::StrAppend(&out, Line("requests", absl::StrCat(tally.requests)),
                  Line("ok", absl::StrCat(tally.ok_requests)),
                  Line("failed", absl::StrCat(tally.requests - tally.ok_requests)),
                  Line("matrices", absl::StrCat(tally.ok_matrices)),
                  Line("wall_s", absl::StrFormat("%.3f", seconds)),
                  Line("requests/s", rate(tally.requests)),
                  Line("matrices/s", rate(tally.ok_matrices)));
  std::vector<absl::Duration> sorted = tally.ok_latencies;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [name, q] :
       {std::pair<const char*, double>{"p50_ms", 0.50}, {"p90_ms", 0.90}, {"p99_ms", 0.99}}) {
    absl::StrAppend(
        &out, Line(name, sorted.empty() ? "-" : Milliseconds(NearestRankPercentile(sorted, q))));
  }
  for (const auto& [code, errors] : tally.errors) {
    absl::StrAppend(
        &out, absl::StrFormat("error        %s %d first: %s\n", absl::StatusCodeToString(code),
                              errors.count, errors.first_message));
  }
  return out;
}

}  // namespace matrixd
