// matrixd_soak: a bounded mixed load against a running server (tests/soak/mixed_load.h) that
// checks every result, counts statuses by code and watches the server process's memory.
//   matrixd_soak --server=127.0.0.1:PORT --server_pid=PID --seconds=20 --warmup_seconds=6
// Prints one "name value" line per figure and exits 1 when a result was wrong, a status other
// than OK, DEADLINE_EXCEEDED or CANCELLED came back, nothing was checked, a resident matrix was
// left on the server, or the server's RSS grew by more than --rss_slack_mib after the warm-up.
// The full procedure (short run in ctest, long run by hand) is in docs/reliability.md.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "tests/soak/mixed_load.h"
#include "tests/soak/process_memory.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "host:port of the matrixd under test");
ABSL_FLAG(int64_t, server_pid, 0, "the server's process id, for its RSS; 0 = no memory watch");
ABSL_FLAG(double, seconds, 20, "length of the whole run, warm-up included");
ABSL_FLAG(double, warmup_seconds, 6,
          "load before the first RSS reading; must exceed the server's --job_ttl so that the "
          "finished jobs it remembers have reached their steady number");
ABSL_FLAG(int, clients, 4, "threads sending checked requests (one more drops streams)");
ABSL_FLAG(int64_t, max_n, 64, "largest dimension of a determinant, LU or product operand");
ABSL_FLAG(int64_t, max_permanent_n, 12, "largest permanent");
ABSL_FLAG(double, rss_slack_mib, 24, "how much the server's RSS may grow after the warm-up");
ABSL_FLAG(uint64_t, seed, 1, "seed of the requests and of the ways they are sent");

namespace matrixd::soak {
namespace {

double Mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

bool AllowedCode(absl::StatusCode code) {
  return code == absl::StatusCode::kDeadlineExceeded || code == absl::StatusCode::kCancelled;
}

std::optional<int64_t> ServerRss(int64_t pid) {
  if (pid == 0) return std::nullopt;
  absl::StatusOr<int64_t> rss = ResidentSetBytes(pid);
  if (!rss.ok()) {
    std::cerr << "matrixd_soak: " << rss.status() << "\n";
    return std::nullopt;
  }
  return *rss;
}

int Main() {
  MixedLoadOptions options;
  options.target = absl::GetFlag(FLAGS_server);
  options.clients = absl::GetFlag(FLAGS_clients);
  options.sizes = {.max_n = absl::GetFlag(FLAGS_max_n),
                   .max_permanent_n = absl::GetFlag(FLAGS_max_permanent_n)};
  options.seed = absl::GetFlag(FLAGS_seed);
  const int64_t pid = absl::GetFlag(FLAGS_server_pid);
  const absl::Duration total = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  const absl::Duration warmup = absl::Seconds(absl::GetFlag(FLAGS_warmup_seconds));
  if (options.clients < 1 || options.sizes.max_n < 1 || options.sizes.max_permanent_n < 1 ||
      warmup >= total) {
    std::cerr << "matrixd_soak: want --clients, --max_n, --max_permanent_n >= 1 and "
                 "--warmup_seconds < --seconds\n";
    return 2;
  }

  Client client(options.target, {.deadline = absl::Seconds(10)});
  absl::StatusOr<bool> healthy = client.Healthy();
  if (!healthy.ok() || !*healthy) {
    std::cerr << "matrixd_soak: server " << options.target
              << " is not serving: " << healthy.status() << "\n";
    return 1;
  }

  // Warm-up and measured run are two loads of the same mix: the RSS is read when no request is
  // in flight, after each.
  const absl::Time start = absl::Now();
  const std::optional<int64_t> rss_start = ServerRss(pid);
  SoakTally tally = RunMixedLoad(options, start + warmup);
  const std::optional<int64_t> rss_before = ServerRss(pid);
  const int64_t warmup_requests = tally.calls.requests;
  options.seed += 1;
  tally.Merge(RunMixedLoad(options, start + total));
  const absl::Duration wall = absl::Now() - start;
  const std::optional<int64_t> rss_after = ServerRss(pid);
  absl::StatusOr<v1::ListMatricesResponse> resident = client.ListMatrices();

  std::string report;
  absl::StrAppendFormat(&report, "wall_s             %.1f\n", absl::ToDoubleSeconds(wall));
  absl::StrAppendFormat(&report, "clients            %d + 1 dropping streams\n", options.clients);
  absl::StrAppendFormat(&report, "requests           %d (%d in the warm-up)\n",
                        tally.calls.requests, warmup_requests);
  absl::StrAppendFormat(&report, "requests/s         %.1f\n",
                        static_cast<double>(tally.calls.requests) / absl::ToDoubleSeconds(wall));
  absl::StrAppendFormat(&report, "checked            %d\n", tally.checked);
  absl::StrAppendFormat(&report, "wrong              %d\n", tally.wrong);
  absl::StrAppendFormat(&report, "status OK          %d\n", tally.calls.ok_requests);
  bool bad_status = false;
  for (const auto& [code, errors] : tally.calls.errors) {
    bad_status |= !AllowedCode(code);
    absl::StrAppendFormat(&report, "status %-18s %d first: %s\n", absl::StatusCodeToString(code),
                          errors.count, errors.first_message);
  }
  absl::StrAppendFormat(&report, "dropped_streams    %d uploads, %d watches\n",
                        tally.dropped_uploads, tally.dropped_watches);
  for (const auto& [way, count] : tally.by_way) {
    absl::StrAppendFormat(&report, "way %-30s %d\n", way, count);
  }
  if (rss_start && rss_before && rss_after) {
    absl::StrAppendFormat(&report,
                          "server_rss_mib     start %.1f, after warm-up %.1f, end %.1f "
                          "(growth %+.1f, slack %.1f)\n",
                          Mib(*rss_start), Mib(*rss_before), Mib(*rss_after),
                          Mib(*rss_after - *rss_before), absl::GetFlag(FLAGS_rss_slack_mib));
  }
  const int left = resident.ok() ? resident->matrices_size() : -1;
  absl::StrAppendFormat(&report, "resident_left      %d\n", left);
  std::cout << report;

  bool failed = false;
  auto fail = [&failed](const std::string& why) {
    std::cout << "FAIL " << why << "\n";
    failed = true;
  };
  if (tally.wrong > 0)
    fail(absl::StrCat(tally.wrong, " wrong results; first: ", tally.first_wrong));
  if (tally.checked == 0) fail("no result was checked");
  if (bad_status) fail("a status other than OK, DEADLINE_EXCEEDED or CANCELLED");
  if (left != 0) {
    fail(resident.ok() ? absl::StrCat(left, " resident matrices left on the server")
                       : absl::StrCat("ListMatrices: ", resident.status().ToString()));
  }
  if (pid != 0) {
    if (!rss_before || !rss_after) {
      fail("the server's RSS could not be read");
    } else if (Mib(*rss_after - *rss_before) > absl::GetFlag(FLAGS_rss_slack_mib)) {
      fail("the server's RSS grew beyond the slack after the warm-up");
    }
  }
  std::cout << (failed ? "FAILED" : "PASS") << "\n";
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace matrixd::soak

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return matrixd::soak::Main();
}
