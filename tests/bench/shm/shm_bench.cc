// matrixd_shm_bench: the system shared-memory targets of issue 9, measured through a running
// server on the same host, as a same-host user sees them: the round trip of a float64
// determinant whose matrix is already in a registered shared-memory region, against the same
// matrix sent inline over gRPC (or, past the message limit, uploaded and named by handle); and a
// batched LU of small matrices read from shared memory with the factors written back into it,
// against the same batch inline. Prints markdown tables; every row from this run. The answers of
// both paths are compared bit for bit and the comparison printed.
//
//   matrixd_shm_bench --server=127.0.0.1:50051 [--det_sizes=8192,16384] [--repeats=5]
//       [--batch=100000] [--batch_n=32] [--tables=det,batched]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/client.h"
#include "client/shared_memory_region.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "matrixd to measure (on this host)");
ABSL_FLAG(std::vector<std::string>, tables, (std::vector<std::string>{"det", "batched"}),
          "tables to run: det, batched");
ABSL_FLAG(std::vector<std::string>, det_sizes, (std::vector<std::string>{"8192"}),
          "det table: the orders n of the float64 matrices");
ABSL_FLAG(int, repeats, 5, "timed calls per path (after one untimed warm-up); medians printed");
ABSL_FLAG(int64_t, batch, 100000, "batched table: matrices per batched LU");
ABSL_FLAG(int64_t, batch_n, 32, "batched table: order of each matrix");
ABSL_FLAG(bool, inline_baseline, true, "also time the inline (gRPC) path of each table");

namespace matrixd {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Deterministic uniform values in [-1, 1) (splitmix64), fast enough for gigabytes.
void FillRandom(std::span<double> values, uint64_t seed) {
  uint64_t state = seed;
  for (double& v : values) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v = static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
}

struct Sample {
  double round_trip = 0;  // client clock
  double server = 0;      // ComputeStats.seconds
};

// One untimed warm-up, then `repeats` calls; the medians. The first failure is returned.
absl::StatusOr<Sample> Median(int repeats, const std::function<absl::StatusOr<double>()>& call) {
  std::vector<double> round_trips;
  std::vector<double> servers;
  for (int k = 0; k <= repeats; ++k) {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<double> server = call();
    const double seconds = SecondsSince(start);
    if (!server.ok()) return server.status();
    if (k == 0) continue;
    round_trips.push_back(seconds);
    servers.push_back(*server);
  }
  std::sort(round_trips.begin(), round_trips.end());
  std::sort(servers.begin(), servers.end());
  return Sample{round_trips[round_trips.size() / 2], servers[servers.size() / 2]};
}

std::string Seconds(const absl::StatusOr<Sample>& sample, bool server = false) {
  if (!sample.ok()) return "failed";
  return absl::StrFormat("%.4f", server ? sample->server : sample->round_trip);
}

std::string Ratio(const absl::StatusOr<Sample>& a, const absl::StatusOr<Sample>& b) {
  if (!a.ok() || !b.ok() || b->round_trip <= 0) return "n/a";
  return absl::StrFormat("%.2f", a->round_trip / b->round_trip);
}

void PrintFailure(absl::string_view what, const absl::StatusOr<Sample>& sample) {
  if (!sample.ok())
    std::printf("  %s failed: %s\n", std::string(what).c_str(), sample.status().ToString().c_str());
}

std::string Region(absl::string_view what) { return absl::StrCat("bench-", what, "-", getpid()); }

void BenchDeterminant(Client& client, int64_t n, int repeats, bool inline_baseline) {
  const uint64_t bytes = static_cast<uint64_t>(n) * n * sizeof(double);
  const Clock::time_point made = Clock::now();
  absl::StatusOr<SharedMemoryRegion> region =
      SharedMemoryRegion::Create(&client, Region("det"), bytes, {.register_now = false});
  if (!region.ok()) {
    std::printf("| %lld | region: %s |\n", static_cast<long long>(n),
                region.status().ToString().c_str());
    return;
  }
  absl::StatusOr<SharedMatrixView> a = region->Allocate(n, n, v1::DTYPE_FLOAT64);
  if (!a.ok()) return;
  FillRandom(a->values<double>(), 100 + static_cast<uint64_t>(n));
  const double fill = SecondsSince(made);
  // Registration maps and page-locks the region on the server: once per region, not per call.
  const Clock::time_point registering = Clock::now();
  const absl::Status registered = region->Register();
  const double register_seconds = SecondsSince(registering);
  if (!registered.ok()) {
    std::printf("| %lld | register: %s |\n", static_cast<long long>(n),
                registered.ToString().c_str());
    return;
  }
  v1::DeterminantRequest request;
  request.set_method(v1::DETERMINANT_METHOD_LU);
  double shm_log_abs = 0;
  const absl::StatusOr<Sample> shm = Median(repeats, [&]() -> absl::StatusOr<double> {
    absl::StatusOr<v1::DeterminantResponse> r = client.Determinant(*a, request);
    if (!r.ok()) return r.status();
    shm_log_abs = r->log_abs();
    return r->stats().seconds();
  });

  // The gRPC path: inline when the request fits in one message, else streamed up and named by
  // handle (the upload counted in the round trip: the matrix is not on the server before).
  std::string how = "inline";
  double grpc_log_abs = 0;
  absl::StatusOr<Sample> grpc = absl::UnavailableError("not run (--noinline_baseline)");
  if (inline_baseline) {
    const bool fits = bytes + 1024 < (uint64_t{1} << 30);
    if (fits) {
      const v1::Matrix matrix = a->ToMatrix();
      grpc = Median(std::min(repeats, 3), [&]() -> absl::StatusOr<double> {
        absl::StatusOr<v1::DeterminantResponse> r = client.Determinant(matrix, request);
        if (!r.ok()) return r.status();
        grpc_log_abs = r->log_abs();
        return r->stats().seconds();
      });
    } else {
      how = "upload (4 streams) + det by handle";
      grpc = Median(std::min(repeats, 3), [&]() -> absl::StatusOr<double> {
        absl::StatusOr<RemoteMatrix> remote = client.Upload(
            HostMatrixView{.rows = n, .cols = n, .dtype = v1::DTYPE_FLOAT64, .bytes = a->bytes});
        if (!remote.ok()) return remote.status();
        absl::StatusOr<v1::DeterminantResponse> r = client.Determinant(*remote, request);
        if (!r.ok()) return r.status();
        grpc_log_abs = r->log_abs();
        return r->stats().seconds();
      });
    }
  }
  std::printf("| %lld | %s | %s | %s | %s | %s | %.3f | %.3f | %s |\n", static_cast<long long>(n),
              Seconds(shm).c_str(), Seconds(shm, true).c_str(), how.c_str(), Seconds(grpc).c_str(),
              Ratio(grpc, shm).c_str(), register_seconds, fill,
              !grpc.ok() ? "-"
              : shm_log_abs == grpc_log_abs
                  ? "yes"
                  : absl::StrFormat("NO (%.17g vs %.17g)", shm_log_abs, grpc_log_abs).c_str());
  PrintFailure("shared memory", shm);
  PrintFailure("gRPC", grpc);
}

void BenchBatchedLu(Client& client, int64_t batch, int64_t n, int repeats, bool inline_baseline) {
  const int64_t rows = batch * n;
  const uint64_t bytes = static_cast<uint64_t>(rows) * n * sizeof(double);
  const uint64_t pivot_bytes = static_cast<uint64_t>(rows) * sizeof(int64_t);
  absl::StatusOr<SharedMemoryRegion> region =
      SharedMemoryRegion::Create(&client, Region("batched"), 2 * bytes + pivot_bytes + 4096);
  if (!region.ok()) {
    std::printf("region: %s\n", region.status().ToString().c_str());
    return;
  }
  absl::StatusOr<SharedMatrixView> a = region->Allocate(rows, n, v1::DTYPE_FLOAT64);
  absl::StatusOr<SharedMatrixView> lu = region->Allocate(rows, n, v1::DTYPE_FLOAT64);
  // The pivots too: 3.2 million of them at 100000 x 32 cost more as a repeated field.
  absl::StatusOr<SharedMatrixView> permutation = region->Allocate(rows, 1, v1::DTYPE_INT64);
  if (!a.ok() || !lu.ok() || !permutation.ok()) return;
  FillRandom(a->values<double>(), 7);

  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_batch_count(batch);
  v1::FactorizeRequest shm_request = request;
  WriteResultInto(*shm_request.mutable_result_options(), "lu", *lu);
  WriteResultInto(*shm_request.mutable_result_options(), "permutation", *permutation);
  const absl::StatusOr<Sample> shm = Median(repeats, [&]() -> absl::StatusOr<double> {
    absl::StatusOr<v1::FactorizeResponse> r = client.Factorize(*a, shm_request);
    if (!r.ok()) return r.status();
    return r->stats().seconds();
  });
  absl::StatusOr<Sample> grpc = absl::UnavailableError("not run (--noinline_baseline)");
  std::string same = "-";
  if (inline_baseline) {
    const v1::Matrix matrix = a->ToMatrix();
    v1::Matrix inline_lu;
    grpc = Median(1, [&]() -> absl::StatusOr<double> {
      absl::StatusOr<v1::FactorizeResponse> r = client.Factorize(matrix, request);
      if (!r.ok()) return r.status();
      inline_lu = r->lu();
      return r->stats().seconds();
    });
    if (grpc.ok()) same = inline_lu.data() == lu->ToMatrix().data() ? "yes" : "NO";
  }
  auto rate = [&](const absl::StatusOr<Sample>& s) {
    return s.ok() ? absl::StrFormat("%.3f", static_cast<double>(batch) / s->round_trip / 1e6)
                  : std::string("n/a");
  };
  std::printf("| %lld x %lldx%lld | %s | %s | %s | %s | %s | %s |\n", static_cast<long long>(batch),
              static_cast<long long>(n), static_cast<long long>(n), Seconds(shm).c_str(),
              Seconds(shm, true).c_str(), rate(shm).c_str(), Seconds(grpc).c_str(),
              rate(grpc).c_str(), same.c_str());
  PrintFailure("shared memory", shm);
  PrintFailure("gRPC", grpc);
}

int Main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  ClientOptions options;
  options.deadline = absl::Minutes(10);
  Client client(absl::GetFlag(FLAGS_server), options);
  absl::StatusOr<bool> healthy = client.Healthy();
  if (!healthy.ok() || !*healthy) {
    std::fprintf(stderr, "matrixd_shm_bench: %s is not serving: %s\n",
                 absl::GetFlag(FLAGS_server).c_str(),
                 healthy.ok() ? "NOT_SERVING" : healthy.status().ToString().c_str());
    return 1;
  }
  const std::vector<std::string> tables = absl::GetFlag(FLAGS_tables);
  auto runs = [&](absl::string_view t) {
    return std::find(tables.begin(), tables.end(), t) != tables.end();
  };
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  const bool inline_baseline = absl::GetFlag(FLAGS_inline_baseline);
  if (runs("det")) {
    std::printf(
        "\n## Determinant (LU) of an n x n float64 matrix: in shared memory vs over gRPC\n\n"
        "round trips are client-clock medians of %d calls after a warm-up (gRPC: at most 3); "
        "server = ComputeStats.seconds; register = RegisterSystemSharedMemory (map + page-lock, "
        "once per region); fill = writing the matrix into the region\n\n"
        "| n | shm round trip (s) | shm server (s) | gRPC path | gRPC round trip (s) | gRPC/shm | "
        "register (s) | fill (s) | same log\\|det\\| |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        repeats);
    for (const std::string& size : absl::GetFlag(FLAGS_det_sizes)) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(size, &n) || n < 1) {
        std::fprintf(stderr, "--det_sizes: '%s' is not a size\n", size.c_str());
        return 2;
      }
      BenchDeterminant(client, n, repeats, inline_baseline);
      std::fflush(stdout);
    }
  }
  if (runs("batched")) {
    std::printf(
        "\n## Batched LU, float64: shared memory in and out vs inline over gRPC\n\n"
        "shm: %d calls after a warm-up, medians; gRPC: one call after a warm-up\n\n"
        "| batch | shm round trip (s) | shm server (s) | shm M matrices/s | gRPC round trip (s) | "
        "gRPC M matrices/s | same factors |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n",
        repeats);
    BenchBatchedLu(client, absl::GetFlag(FLAGS_batch), absl::GetFlag(FLAGS_batch_n), repeats,
                   inline_baseline);
  }
  return 0;
}

}  // namespace
}  // namespace matrixd

int main(int argc, char** argv) { return matrixd::Main(argc, argv); }
