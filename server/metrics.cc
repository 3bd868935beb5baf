#include "server/metrics.h"

#include <prometheus/text_serializer.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace matrixd::server {
namespace {

using prometheus::Histogram;

// Bucket bounds 1, 2.5 and 5 times each power of ten from 10^low to 10^high seconds: a kernel may
// take microseconds or minutes (a permanent of n = 40), and quantiles need buckets at both ends.
// Dividing by an exact power of ten rounds once, so each bound is the double nearest its decimal
// (and the le labels read 0.25, not 0.25000000000000006).
Histogram::BucketBoundaries DecadeBuckets(int low, int high) {
  Histogram::BucketBoundaries bounds;
  for (int exponent = low; exponent <= high; ++exponent) {
    double power = 1.0;  // 10^|exponent|, exact up to 10^22
    for (int i = 0; i < (exponent < 0 ? -exponent : exponent); ++i) power *= 10.0;
    for (double step : {1.0, 2.5, 5.0}) {
      bounds.push_back(exponent < 0 ? step / power : step * power);
      if (exponent == high) break;  // end on 10^high
    }
  }
  return bounds;
}

const Histogram::BucketBoundaries& KernelBuckets() {
  static const auto* const bounds = new Histogram::BucketBoundaries(DecadeBuckets(-6, 3));
  return *bounds;
}
const Histogram::BucketBoundaries& WaitBuckets() {
  static const auto* const bounds = new Histogram::BucketBoundaries(DecadeBuckets(-5, 3));
  return *bounds;
}

const Histogram::BucketBoundaries& GroupSizeBuckets() {
  static const auto* const bounds =
      new Histogram::BucketBoundaries{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  return *bounds;
}

// absl::StatusCodeToString without a string built per call: the canonical codes are named once.
// The view lives until the next call on the same thread.
absl::string_view CodeName(absl::StatusCode code) {
  constexpr int kCanonicalCodes = 17;  // OK (0) to UNAUTHENTICATED (16)
  static const auto* const names = [] {
    auto* names = new std::array<std::string, kCanonicalCodes>;
    for (int i = 0; i < kCanonicalCodes; ++i) {
      (*names)[i] = absl::StatusCodeToString(static_cast<absl::StatusCode>(i));
    }
    return names;
  }();
  const int index = static_cast<int>(code);
  if (index >= 0 && index < kCanonicalCodes) return (*names)[index];
  thread_local std::string other;
  other = absl::StatusCodeToString(code);
  return other;
}

constexpr std::array<const char*, 4> kKernelLabels = {"op", "kernel", "dtype", "device"};

}  // namespace

Metrics::Metrics(absl::string_view version, absl::string_view backend)
    : registry_(std::make_shared<prometheus::Registry>()),
      build_info_(prometheus::BuildGauge()
                      .Name("matrixd_build_info")
                      .Help("Always 1; the labels say which matrixd build and backend serve.")
                      .Register(*registry_)),
      kernel_duration_(prometheus::BuildHistogram()
                           .Name("matrixd_kernel_duration_seconds")
                           .Help("Device time of one kernel or library call of a job (CUDA "
                                 "events on the job's stream; CPU: the whole operation).")
                           .Register(*registry_)),
      kernel_bytes_(prometheus::BuildCounter()
                        .Name("matrixd_kernel_bytes_total")
                        .Help("Bytes read and written in device memory by the kernels.")
                        .Register(*registry_)),
      kernel_flops_(prometheus::BuildCounter()
                        .Name("matrixd_kernel_flops_total")
                        .Help("Floating-point (or modular) operations done by the kernels.")
                        .Register(*registry_)),
      kernel_bandwidth_(prometheus::BuildGauge()
                            .Name("matrixd_kernel_effective_bandwidth_bytes_per_second")
                            .Help("Bytes over seconds of the latest record of each kernel.")
                            .Register(*registry_)),
      kernel_efficiency_(prometheus::BuildGauge()
                             .Name("matrixd_kernel_bandwidth_efficiency_ratio")
                             .Help("Effective bandwidth of the latest record of each kernel "
                                   "over the device's copy bandwidth.")
                             .Register(*registry_)),
      copy_bandwidth_(prometheus::BuildGauge()
                          .Name("matrixd_device_copy_bandwidth_bytes_per_second")
                          .Help("Bytes read plus written per second by a copy kernel timed at "
                                "start-up (CPU: memcpy).")
                          .Register(*registry_)),
      queue_depth_family_(prometheus::BuildGauge()
                              .Name("matrixd_queue_depth")
                              .Help("Jobs waiting to start.")
                              .Register(*registry_)),
      queue_wait_family_(prometheus::BuildHistogram()
                             .Name("matrixd_queue_wait_seconds")
                             .Help("Time from a job's submission to its start.")
                             .Register(*registry_)),
      jobs_(prometheus::BuildCounter()
                .Name("matrixd_jobs_total")
                .Help("Jobs that ended, by operation and final status code.")
                .Register(*registry_)),
      coalesced_groups_(prometheus::BuildCounter()
                            .Name("matrixd_coalesced_groups_total")
                            .Help("Groups of small jobs that ran as one batched backend call "
                                  "(--coalesce_window_us), by operation.")
                            .Register(*registry_)),
      coalesced_group_size_(prometheus::BuildHistogram()
                                .Name("matrixd_coalesced_group_size")
                                .Help("Jobs in each coalesced group, by operation.")
                                .Register(*registry_)),
      client_jobs_(prometheus::BuildCounter()
                       .Name("matrixd_client_jobs_total")
                       .Help("Jobs that ended or were refused, by client (--auth_tokens name) "
                             "and final status code.")
                       .Register(*registry_)),
      client_rejections_(prometheus::BuildCounter()
                             .Name("matrixd_client_rejections_total")
                             .Help("Calls refused before any work, by client and reason "
                                   "(unauthenticated, or the quota exceeded).")
                             .Register(*registry_)),
      accuracy_answers_(prometheus::BuildCounter()
                            .Name("matrixd_accuracy_answers_total")
                            .Help("Answers that carried an error bound, by operation and "
                                  "whether they were flagged ill-conditioned.")
                            .Register(*registry_)),
      product_checks_(prometheus::BuildCounter()
                          .Name("matrixd_product_checks_total")
                          .Help("Products checked by Freivalds' check (Multiply with verify), by "
                                "whether they passed.")
                          .Register(*registry_)),
      rpc_duration_(prometheus::BuildHistogram()
                        .Name("matrixd_rpc_duration_seconds")
                        .Help("Time from an RPC's arrival to its status, by method and code.")
                        .Register(*registry_)),
      device_memory_(prometheus::BuildGauge()
                         .Name("matrixd_device_memory_bytes")
                         .Help("Device memory by state: total (the card), limit (the pool's "
                               "cap), used (allocated), reserved (held by the pool), admitted "
                               "(reserved by running jobs through admission).")
                         .Register(*registry_)),
      transfer_bytes_(prometheus::BuildCounter()
                          .Name("matrixd_transfer_bytes_total")
                          .Help("Matrix bytes moved between clients and the server, by direction "
                                "(in, out) and path (inline in a request or response, stream "
                                "for Upload and Download).")
                          .Register(*registry_)),
      transfer_seconds_(prometheus::BuildCounter()
                            .Name("matrixd_transfer_seconds_total")
                            .Help("Time the streamed transfers took, by direction and path: "
                                  "rate(bytes) / rate(seconds) is their throughput.")
                            .Register(*registry_)),
      resident_matrices_(prometheus::BuildGauge()
                             .Name("matrixd_resident_matrices")
                             .Help("Resident matrices, by the device they belong to.")
                             .Register(*registry_)),
      resident_bytes_(prometheus::BuildGauge()
                          .Name("matrixd_resident_bytes")
                          .Help("Bytes of resident matrices by device and state: on the device "
                                "(or in host memory for the CPU backend), or spilled to host "
                                "memory under device-memory pressure.")
                          .Register(*registry_)),
      resident_moves_(prometheus::BuildCounter()
                          .Name("matrixd_resident_moves_total")
                          .Help("Resident matrices moved to host memory (spill) and back "
                                "(restore).")
                          .Register(*registry_)),
      resident_limit_(prometheus::BuildGauge()
                          .Name("matrixd_resident_memory_limit_bytes")
                          .Help("The cap on the bytes of all resident matrices together, spilled "
                                "or not (--resident_memory_limit).")
                          .Register(*registry_)),
      queue_depth_(queue_depth_family_.Add({})),
      queue_wait_(queue_wait_family_.Add({}, WaitBuckets())),
      job_counts_(jobs_, {"op", "status"}),
      coalesced_group_counts_(coalesced_groups_, {"op"}),
      coalesced_group_sizes_(coalesced_group_size_, {"op"}, &GroupSizeBuckets()),
      client_job_counts_(client_jobs_, {"client", "status"}),
      accuracy_counts_(accuracy_answers_, {"op", "ill_conditioned"}),
      product_check_counts_(product_checks_, {"passed"}),
      kernel_durations_(kernel_duration_, kKernelLabels, &KernelBuckets()),
      kernel_byte_counts_(kernel_bytes_, kKernelLabels),
      kernel_flop_counts_(kernel_flops_, kKernelLabels),
      kernel_bandwidths_(kernel_bandwidth_, kKernelLabels),
      kernel_efficiencies_(kernel_efficiency_, kKernelLabels),
      rpc_durations_(rpc_duration_, {"method", "code"}, &WaitBuckets()),
      transfer_byte_counts_(transfer_bytes_, {"direction", "path"}),
      transfer_second_counts_(transfer_seconds_, {"direction", "path"}) {
  for (const char* direction : {"in", "out"}) {
    for (const char* path : {"inline", "stream"}) {
      transfer_byte_counts_.Get({direction, path});
      transfer_second_counts_.Get({direction, path});
    }
  }
  resident_moves_.Add({{"move", "spill"}});
  resident_moves_.Add({{"move", "restore"}});
  build_info_.Add({{"version", std::string(version)}, {"backend", std::string(backend)}}).Set(1.0);
  // The usual outcomes start at 0, so that rate() sees the first job of each: a series that
  // appears with its first increment has no earlier sample to take a rate from.
  for (const char* op : {"determinant", "factorize", "multiply", "permanent", "solve"}) {
    for (const absl::StatusCode code :
         {absl::StatusCode::kOk, absl::StatusCode::kCancelled, absl::StatusCode::kDeadlineExceeded,
          absl::StatusCode::kResourceExhausted, absl::StatusCode::kInvalidArgument,
          absl::StatusCode::kFailedPrecondition, absl::StatusCode::kOutOfRange,
          absl::StatusCode::kInternal, absl::StatusCode::kUnavailable}) {
      job_counts_.Get({op, CodeName(code)});
    }
    for (const char* flag : {"true", "false"}) accuracy_counts_.Get({op, flag});
  }
  product_check_counts_.Get({"true"});
  product_check_counts_.Get({"false"});
}

void Metrics::RecordQueueDepth(int64_t depth) { queue_depth_.Set(static_cast<double>(depth)); }

void Metrics::RecordQueueWait(absl::Duration wait) {
  queue_wait_.Observe(absl::ToDoubleSeconds(wait));
}

void Metrics::RecordClientJob(absl::string_view client, absl::StatusCode code) {
  client_job_counts_.Get({client.empty() ? "anonymous" : client, CodeName(code)}).Increment();
}

void Metrics::RecordClientRejection(absl::string_view client, absl::string_view reason) {
  client_rejections_
      .Add({{"client", client.empty() ? "anonymous" : std::string(client)},
            {"reason", std::string(reason)}})
      .Increment();
}

void Metrics::RecordJob(absl::string_view op, absl::StatusCode code) {
  job_counts_.Get({op, CodeName(code)}).Increment();
}

void Metrics::RecordCoalescedGroup(absl::string_view op, int size) {
  coalesced_group_counts_.Get({op}).Increment();
  coalesced_group_sizes_.Get({op}).Observe(size);
}

void Metrics::RecordAccuracy(absl::string_view op, bool ill_conditioned) {
  accuracy_counts_.Get({op, ill_conditioned ? "true" : "false"}).Increment();
}

void Metrics::RecordProductCheck(bool passed) {
  product_check_counts_.Get({passed ? "true" : "false"}).Increment();
}

void Metrics::RecordKernels(absl::string_view op, DType dtype, const ComputeStats& stats) {
  double copy_bandwidth = 0.0;
  {
    absl::ReaderMutexLock lock(&mutex_);
    const auto it = copy_bandwidth_by_device_.find(stats.device);
    if (it != copy_bandwidth_by_device_.end()) copy_bandwidth = it->second;
  }
  auto record_one = [&](absl::string_view kernel, double seconds, uint64_t bytes, double flops) {
    const LabelledChildren<prometheus::Counter, 4>::Values labels = {op, kernel, DTypeName(dtype),
                                                                     stats.device};
    kernel_byte_counts_.Get(labels).Increment(static_cast<double>(bytes));
    kernel_flop_counts_.Get(labels).Increment(flops > 0.0 ? flops : 0.0);
    if (seconds <= 0.0) return;
    kernel_durations_.Get(labels).Observe(seconds);
    // A record that moves no bytes (a wait, as "freivalds_wait") has no bandwidth to show.
    if (bytes == 0) return;
    const double bandwidth = static_cast<double>(bytes) / seconds;
    kernel_bandwidths_.Get(labels).Set(bandwidth);
    if (copy_bandwidth > 0.0) kernel_efficiencies_.Get(labels).Set(bandwidth / copy_bandwidth);
  };
  if (stats.kernels.empty()) {
    record_one(kWholeOperationKernel, stats.seconds, stats.bytes_moved, stats.flops);
  }
  for (const KernelRecord& record : stats.kernels) {
    record_one(record.kernel, record.seconds, record.bytes, record.flops);
  }
}

void Metrics::RecordRpc(absl::string_view method, absl::StatusCode code, absl::Duration duration) {
  rpc_durations_.Get({method, CodeName(code)}).Observe(absl::ToDoubleSeconds(duration));
}

absl::string_view Metrics::RpcMethodName(absl::string_view method) {
  {
    absl::ReaderMutexLock lock(&method_mutex_);
    const auto it = rpc_methods_.find(method);
    if (it != rpc_methods_.end()) return *it;
  }
  absl::MutexLock lock(&method_mutex_);
  return *rpc_methods_.emplace(method).first;
}

void Metrics::SetCopyBandwidth(absl::string_view device, double bytes_per_second) {
  {
    absl::MutexLock lock(&mutex_);
    copy_bandwidth_by_device_[device] = bytes_per_second;
  }
  copy_bandwidth_.Add({{"device", std::string(device)}}).Set(bytes_per_second);
}

void Metrics::RecordTransfer(absl::string_view direction, absl::string_view path, uint64_t bytes,
                             absl::Duration duration) {
  transfer_byte_counts_.Get({direction, path}).Increment(static_cast<double>(bytes));
  if (duration > absl::ZeroDuration()) {
    transfer_second_counts_.Get({direction, path}).Increment(absl::ToDoubleSeconds(duration));
  }
}

void Metrics::SetResident(const std::vector<ResidentUsage>& usages, uint64_t spills,
                          uint64_t restores) {
  for (const ResidentUsage& usage : usages) {
    resident_matrices_.Add({{"device", usage.device}}).Set(usage.matrices);
    resident_bytes_.Add({{"device", usage.device}, {"state", "device"}})
        .Set(static_cast<double>(usage.bytes));
    resident_bytes_.Add({{"device", usage.device}, {"state", "spilled"}})
        .Set(static_cast<double>(usage.spilled_bytes));
  }
  // Devices whose last matrix went away keep their series, at 0.
  absl::MutexLock lock(&mutex_);
  for (const std::string& device : resident_devices_) {
    if (std::none_of(usages.begin(), usages.end(),
                     [&](const ResidentUsage& u) { return u.device == device; })) {
      resident_matrices_.Add({{"device", device}}).Set(0);
      resident_bytes_.Add({{"device", device}, {"state", "device"}}).Set(0);
      resident_bytes_.Add({{"device", device}, {"state", "spilled"}}).Set(0);
    }
  }
  for (const ResidentUsage& usage : usages) resident_devices_.insert(usage.device);
  prometheus::Counter& spill = resident_moves_.Add({{"move", "spill"}});
  prometheus::Counter& restore = resident_moves_.Add({{"move", "restore"}});
  spill.Increment(static_cast<double>(spills) - spill.Value());
  restore.Increment(static_cast<double>(restores) - restore.Value());
}

void Metrics::SetResidentLimit(uint64_t bytes) {
  resident_limit_.Add({}).Set(static_cast<double>(bytes));
}

void Metrics::SetDeviceMemory(const DeviceMemoryUsage& usage, uint64_t admitted) {
  const std::pair<const char*, uint64_t> states[] = {{"total", usage.total},
                                                     {"limit", usage.limit},
                                                     {"used", usage.used},
                                                     {"reserved", usage.reserved},
                                                     {"admitted", admitted}};
  for (const auto& [state, bytes] : states) {
    device_memory_.Add({{"device", usage.device}, {"state", state}})
        .Set(static_cast<double>(bytes));
  }
}

void Metrics::SetScrapeHook(std::function<void(Metrics&)> hook) {
  absl::MutexLock lock(&hook_mutex_);
  scrape_hook_ = std::move(hook);
}

std::string Metrics::Serialize() {
  {
    absl::MutexLock lock(&hook_mutex_);
    if (scrape_hook_) scrape_hook_(*this);
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace matrixd::server
