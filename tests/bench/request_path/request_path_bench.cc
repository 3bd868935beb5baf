// The server's own bookkeeping per small request (issue 13), timed alone on one thread: the
// metrics a det n = 8 call records (RPC, job, client, kernel, accuracy, transfers, queue) and the
// provenance stamp of its response (versions and result CRC). Prints ns per request of each.
// Usage: matrixd_request_path_bench [iterations]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cpu/cpu_backend.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/metrics.h"
#include "server/provenance.h"

namespace matrixd::server {
namespace {

template <typename Body>
double NanosecondsPerCall(int iterations, Body body) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) body();
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / iterations;
}

int Run(int iterations) {
  Metrics metrics("bench", "cpu");
  ComputeStats stats;
  stats.device = "cpu (2 threads)";
  stats.seconds = 2e-6;
  stats.bytes_moved = 512;
  stats.flops = 400;
  const double metrics_ns = NanosecondsPerCall(iterations, [&] {
    metrics.RecordQueueDepth(1);
    metrics.RecordQueueWait(absl::Microseconds(3));
    metrics.RecordQueueDepth(0);
    metrics.RecordKernels(kOpDeterminant, DType::kFloat64, stats);
    metrics.RecordAccuracy(kOpDeterminant, false);
    metrics.RecordJob(kOpDeterminant, absl::StatusCode::kOk);
    metrics.RecordClientJob("", absl::StatusCode::kOk);
    metrics.RecordTransfer("in", "inline", 560, absl::ZeroDuration());
    metrics.RecordTransfer("out", "inline", 120, absl::ZeroDuration());
    metrics.RecordRpc("matrixd.v1.MatrixService/Determinant", absl::StatusCode::kOk,
                      absl::Microseconds(40));
  });

  const std::unique_ptr<Backend> backend = MakeCpuBackend();
  v1::DeterminantResponse response;
  const double provenance_ns = NanosecondsPerCall(iterations, [&] {
    response.Clear();
    response.set_log_abs(1.5);
    response.set_sign(1.0);
    response.mutable_stats()->set_device("cpu (2 threads)");
    StampProvenance(*backend, DType::kFloat64, response, response.mutable_stats());
  });
  std::printf("metrics_ns_per_request %.0f\nprovenance_ns_per_request %.0f\n", metrics_ns,
              provenance_ns);
  return 0;
}

}  // namespace
}  // namespace matrixd::server

int main(int argc, char** argv) {
  // As server/main.cc: the server binary runs without Abseil's Mutex deadlock detection.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return matrixd::server::Run(argc > 1 ? std::atoi(argv[1]) : 200000);
}
