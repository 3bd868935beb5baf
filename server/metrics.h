// matrixd's Prometheus metrics (docs/operations.md lists them): one prometheus-cpp registry and
// small Record*/Set* calls for the code that feeds it: the scheduler (queue depth and wait, jobs),
// the RPC interceptor (durations by method and code), the job runner (kernel records) and the
// device probes (copy bandwidth, pool usage). Serialize() renders the text format for GET /metrics.
// Thread-safe; no call blocks on I/O.
#ifndef MATRIXD_SERVER_METRICS_H_
#define MATRIXD_SERVER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "server/labelled_children.h"
#include "server/resident_registry.h"

namespace matrixd::server {

// The values of the `op` label.
inline constexpr char kOpDeterminant[] = "determinant";
inline constexpr char kOpFactorize[] = "factorize";
inline constexpr char kOpMultiply[] = "multiply";
inline constexpr char kOpPermanent[] = "permanent";
inline constexpr char kOpSolve[] = "solve";

// The kernel label of the one record RecordKernels makes from a result's totals when the backend
// timed no kernel separately.
inline constexpr char kWholeOperationKernel[] = "operation";

class Metrics {
 public:
  // Registers every family and sets matrixd_build_info{version, backend} to 1.
  Metrics(absl::string_view version, absl::string_view backend);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // ---- The scheduler ----
  // The number of jobs waiting to start, now (matrixd_queue_depth).
  void RecordQueueDepth(int64_t depth);
  // How long one job waited between its submission and its start (matrixd_queue_wait_seconds).
  void RecordQueueWait(absl::Duration wait);
  // One job that ended, with its final code (matrixd_jobs_total{op, status}; status is the
  // canonical code name: "OK", "CANCELLED", "RESOURCE_EXHAUSTED", ...). `op` is one of kOp*.
  void RecordJob(absl::string_view op, absl::StatusCode code);
  // `size` jobs of `op` started as one coalesced group (server/coalescing.h):
  // matrixd_coalesced_groups_total{op} and matrixd_coalesced_group_size{op}.
  void RecordCoalescedGroup(absl::string_view op, int size);

  // ---- Clients (--auth_tokens) ----
  // One job of `client` that ended (or was refused at submission) with `code`
  // (matrixd_client_jobs_total{client, status}); client "" is counted as "anonymous".
  void RecordClientJob(absl::string_view client, absl::StatusCode code);
  // One call refused before any work, by why: "unauthenticated" (client "unknown"), or the quota
  // it was over, e.g. "max_jobs" (matrixd_client_rejections_total{client, reason}).
  void RecordClientRejection(absl::string_view client, absl::string_view reason);

  // ---- The job runner ----
  // The kernel records of one successful job on input of `dtype`: every entry of stats.kernels
  // (or, when that is empty, one record named kWholeOperationKernel from stats.seconds,
  // bytes_moved and flops) into matrixd_kernel_{duration_seconds, bytes_total, flops_total,
  // effective_bandwidth_bytes_per_second, bandwidth_efficiency_ratio}, labelled with
  // stats.device. Records with seconds <= 0 count bytes and flops but set no bandwidth.
  void RecordKernels(absl::string_view op, DType dtype, const ComputeStats& stats);

  // One answer that carried an accuracy estimate (core/accuracy.h), by whether it was flagged
  // ill-conditioned (matrixd_accuracy_answers_total{op, ill_conditioned="true"|"false"}).
  void RecordAccuracy(absl::string_view op, bool ill_conditioned);

  // One product checked by Freivalds' check (core/freivalds.h), by its verdict
  // (matrixd_product_checks_total{passed="true"|"false"}); the check's time is its kernel record
  // "freivalds".
  void RecordProductCheck(bool passed);

  // The above from one result: the job's code, and its kernels and accuracy when it succeeded.
  template <typename Result>
  void RecordOutcome(absl::string_view op, DType dtype, const absl::StatusOr<Result>& result) {
    RecordJob(op, result.status().code());
    if (!result.ok()) return;
    RecordKernels(op, dtype, result->stats);
    if constexpr (requires { result->accuracy.has_value(); }) {
      if (result->accuracy.has_value()) RecordAccuracy(op, result->accuracy->ill_conditioned);
    }
    if constexpr (requires { result->check.has_value(); }) {
      if (result->check.has_value()) RecordProductCheck(result->check->passed);
    }
  }

  // ---- The gRPC layer ----
  // One finished RPC: `method` as "package.Service/Method", `code` its gRPC status code
  // (matrixd_rpc_duration_seconds{method, code}).
  void RecordRpc(absl::string_view method, absl::StatusCode code, absl::Duration duration);
  // A copy of `method` that lives as long as this, made once per distinct name: what an RPC's
  // interceptor keeps instead of a string of its own.
  absl::string_view RpcMethodName(absl::string_view method);

  // ---- Devices ----
  // The copy bandwidth measured on `device` (matrixd_device_copy_bandwidth_bytes_per_second);
  // later kernel records on that device also set their bandwidth efficiency ratio to it.
  void SetCopyBandwidth(absl::string_view device, double bytes_per_second);
  // matrixd_device_memory_bytes{device, state} for state total, limit, used, reserved, and
  // admitted (what running jobs reserved through admission; pass 0 without admission).
  void SetDeviceMemory(const DeviceMemoryUsage& usage, uint64_t admitted);

  // ---- Resident matrices and transfers ----
  // Matrix bytes of one transfer: direction "in" or "out", path "inline" or "stream"
  // (matrixd_transfer_bytes_total), and its duration when known (matrixd_transfer_seconds_total;
  // pass zero for inline transfers, whose wire time the server does not see).
  void RecordTransfer(absl::string_view direction, absl::string_view path, uint64_t bytes,
                      absl::Duration duration);
  // matrixd_resident_matrices{device}, matrixd_resident_bytes{device, state=device|spilled}, and
  // matrixd_resident_moves_total{move=spill|restore} from the registry's running totals.
  void SetResident(const std::vector<ResidentUsage>& usages, uint64_t spills, uint64_t restores);
  // matrixd_resident_memory_limit_bytes: the cap on all resident bytes (--resident_memory_limit),
  // against which matrixd_resident_bytes of every device and state counts.
  void SetResidentLimit(uint64_t bytes);

  // Runs `hook` at the start of every Serialize(), so gauges that are read rather than pushed
  // (device memory) are fresh at each scrape. Replaces the previous hook.
  void SetScrapeHook(std::function<void(Metrics&)> hook);

  // Every metric in Prometheus's text exposition format 0.0.4.
  std::string Serialize();

  prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& build_info_;
  prometheus::Family<prometheus::Histogram>& kernel_duration_;
  prometheus::Family<prometheus::Counter>& kernel_bytes_;
  prometheus::Family<prometheus::Counter>& kernel_flops_;
  prometheus::Family<prometheus::Gauge>& kernel_bandwidth_;
  prometheus::Family<prometheus::Gauge>& kernel_efficiency_;
  prometheus::Family<prometheus::Gauge>& copy_bandwidth_;
  prometheus::Family<prometheus::Gauge>& queue_depth_family_;
  prometheus::Family<prometheus::Histogram>& queue_wait_family_;
  prometheus::Family<prometheus::Counter>& jobs_;
  prometheus::Family<prometheus::Counter>& coalesced_groups_;
  prometheus::Family<prometheus::Histogram>& coalesced_group_size_;
  prometheus::Family<prometheus::Counter>& client_jobs_;
  prometheus::Family<prometheus::Counter>& client_rejections_;
  prometheus::Family<prometheus::Counter>& accuracy_answers_;
  prometheus::Family<prometheus::Counter>& product_checks_;
  prometheus::Family<prometheus::Histogram>& rpc_duration_;
  prometheus::Family<prometheus::Gauge>& device_memory_;
  prometheus::Family<prometheus::Counter>& transfer_bytes_;
  prometheus::Family<prometheus::Counter>& transfer_seconds_;
  prometheus::Family<prometheus::Gauge>& resident_matrices_;
  prometheus::Family<prometheus::Gauge>& resident_bytes_;
  prometheus::Family<prometheus::Counter>& resident_moves_;
  prometheus::Family<prometheus::Gauge>& resident_limit_;
  prometheus::Gauge& queue_depth_;
  prometheus::Histogram& queue_wait_;
  // The request path's series, by label values (in the order of each family's labels above).
  LabelledChildren<prometheus::Counter, 2> job_counts_;               // op, status
  LabelledChildren<prometheus::Counter, 1> coalesced_group_counts_;   // op
  LabelledChildren<prometheus::Histogram, 1> coalesced_group_sizes_;  // op
  LabelledChildren<prometheus::Counter, 2> client_job_counts_;        // client, status
  LabelledChildren<prometheus::Counter, 2> accuracy_counts_;          // op, ill_conditioned
  LabelledChildren<prometheus::Counter, 1> product_check_counts_;     // passed
  // op, kernel, dtype, device
  LabelledChildren<prometheus::Histogram, 4> kernel_durations_;
  LabelledChildren<prometheus::Counter, 4> kernel_byte_counts_;
  LabelledChildren<prometheus::Counter, 4> kernel_flop_counts_;
  LabelledChildren<prometheus::Gauge, 4> kernel_bandwidths_;
  LabelledChildren<prometheus::Gauge, 4> kernel_efficiencies_;
  LabelledChildren<prometheus::Histogram, 2> rpc_durations_;         // method, code
  LabelledChildren<prometheus::Counter, 2> transfer_byte_counts_;    // direction, path
  LabelledChildren<prometheus::Counter, 2> transfer_second_counts_;  // direction, path

  absl::Mutex mutex_;  // read on every job (copy_bandwidth_by_device_), written rarely
  absl::flat_hash_map<std::string, double> copy_bandwidth_by_device_ ABSL_GUARDED_BY(mutex_);
  absl::flat_hash_set<std::string> resident_devices_ ABSL_GUARDED_BY(mutex_);
  absl::Mutex method_mutex_;
  absl::node_hash_set<std::string> rpc_methods_ ABSL_GUARDED_BY(method_mutex_);
  absl::Mutex hook_mutex_;  // held while the hook runs: one scrape at a time refreshes gauges
  std::function<void(Metrics&)> scrape_hook_ ABSL_GUARDED_BY(hook_mutex_);
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_METRICS_H_
