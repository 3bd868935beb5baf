#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/async_job_calls.h"
#include "server/metrics_backend.h"
#include "server/metrics_interceptor.h"

#ifndef MATRIXD_VERSION
#define MATRIXD_VERSION "unknown"
#endif

namespace matrixd::server {
namespace {

// "host:port" -> "host"; keeps IPv6 brackets ("[::]:0" -> "[::]").
absl::string_view HostOf(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || address.find(']', colon) != absl::string_view::npos) {
    return address;
  }
  return address.substr(0, colon);
}

// gRPC's unix-domain socket addresses ("unix:PATH", "unix-abstract:NAME"): no port to report.
bool IsUnixDomain(absl::string_view address) {
  return absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:");
}

// One admission per device the backend reports, each capped at that device's limit; none for a
// backend without device memory.
std::vector<std::unique_ptr<MemoryAdmission>> MakeMemoryAdmissions(const Backend& backend) {
  std::vector<std::unique_ptr<MemoryAdmission>> admissions;
  for (const DeviceMemoryUsage& device : backend.DeviceMemory()) {
    admissions.push_back(std::make_unique<MemoryAdmission>(device.limit));
  }
  return admissions;
}

std::vector<MemoryAdmission*> AdmissionPointers(
    const std::vector<std::unique_ptr<MemoryAdmission>>& admissions) {
  std::vector<MemoryAdmission*> devices;
  for (const auto& admission : admissions) devices.push_back(admission.get());
  return devices;
}

std::unique_ptr<MemoryJobAdmission> MakeJobAdmission(
    const std::vector<std::unique_ptr<MemoryAdmission>>& admissions) {
  if (admissions.empty()) return nullptr;
  return std::make_unique<MemoryJobAdmission>(AdmissionPointers(admissions));
}

SchedulerOptions WithDefaultHooks(SchedulerOptions options, SchedulerObserver* observer,
                                  JobAdmission* admission) {
  if (options.observer == nullptr) options.observer = observer;
  if (options.admission == nullptr) options.admission = admission;
  return options;
}

}  // namespace

absl::Status DrainingError() {
  return absl::UnavailableError(
      "matrixd is draining (shutting down) and takes no new work; send it to another replica");
}

MatrixServer::MatrixServer(std::unique_ptr<Backend> backend, const ServerOptions& options)
    : metrics_(std::make_unique<Metrics>(MATRIXD_VERSION, std::string(backend->name()))),
      backend_(std::make_unique<MeteredBackend>(std::move(backend), *metrics_)),
      memory_admissions_(MakeMemoryAdmissions(*backend_)),
      job_admission_(MakeJobAdmission(memory_admissions_)),
      resident_(std::make_unique<ResidentRegistry>(*backend_, AdmissionPointers(memory_admissions_),
                                                   options.resident)),
      shared_memory_(std::make_unique<SharedMemoryRegistry>(
          [backend = backend_.get()](const void* data, size_t bytes) {
            return backend->PinHostMemory(data, bytes);
          },
          256,
          [backend = backend_.get()](std::span<const std::byte> raw_handle, int device_id,
                                     uint64_t byte_size) {
            return backend->OpenCudaIpc(raw_handle, device_id, byte_size);
          })),
      scheduler_observer_(std::make_unique<MetricsSchedulerObserver>(*metrics_)),
      scheduler_(std::make_unique<Scheduler>(
          WithDefaultHooks(options.scheduler, scheduler_observer_.get(), job_admission_.get()))),
      authenticator_(options.authenticator),
      service_(*backend_, *scheduler_, options.limits, resident_.get(), metrics_.get()) {
  service_.set_shared_memory(shared_memory_.get());
  if (authenticator_ != nullptr) service_.set_authenticator(authenticator_.get());
  if (job_admission_ != nullptr) {
    job_admission_->set_reclaimer([resident = resident_.get()](int device, uint64_t bytes) {
      return resident->SpillForRoom(device, bytes);
    });
  }
  metrics_->SetResidentLimit(resident_->limit_bytes());
  // Pool counters are read at each scrape rather than pushed after each job.
  metrics_->SetScrapeHook([backend = backend_.get(), admissions = &memory_admissions_,
                           resident = resident_.get()](Metrics& metrics) {
    metrics.SetResident(resident->Usage(), resident->spills(), resident->restores());
    const std::vector<DeviceMemoryUsage> devices = backend->DeviceMemory();
    for (size_t i = 0; i < devices.size(); ++i) {
      metrics.SetDeviceMemory(devices[i],
                              i < admissions->size() ? (*admissions)[i]->reserved() : 0);
    }
  });
}

absl::StatusOr<std::unique_ptr<MatrixServer>> MatrixServer::Start(std::unique_ptr<Backend> backend,
                                                                  const ServerOptions& options) {
  if (backend == nullptr) return absl::InvalidArgumentError("no backend given");
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes is ", options.max_message_bytes, "; want > 0"));
  }
  if (options.cq_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cq_threads is ", options.cq_threads,
                                                   "; want >= 0 (0: the hardware threads)"));
  }
  if (absl::Status valid = ValidateSchedulerOptions(options.scheduler); !valid.ok()) return valid;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  // Both are process-wide switches read by the ServerBuilder; setting them again is harmless.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  std::unique_ptr<MatrixServer> server(new MatrixServer(std::move(backend), options));
  if (!options.metrics_address.empty()) {
    // The yardstick of the bandwidth efficiency ratios, once, before any job runs. A device
    // that cannot be measured only leaves its ratios out.
    absl::StatusOr<std::vector<DeviceCopyBandwidth>> copies =
        server->backend_->MeasureCopyBandwidth();
    if (copies.ok()) {
      for (const DeviceCopyBandwidth& copy : *copies) {
        server->metrics_->SetCopyBandwidth(copy.device, copy.bytes_per_second);
      }
    }
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> http =
        MetricsHttpServer::Start(options.metrics_address, server->metrics_.get());
    if (!http.ok()) return http.status();
    server->metrics_http_ = *std::move(http);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, *credentials, &server->port_);
  // Without this a second server on a busy port would silently share it (SO_REUSEPORT).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Large matrices come in large messages: 4 MiB HTTP/2 frames instead of 16 KiB ones carry a
  // streamed upload about 20% faster on the H100 host (docs/benchmarks.md, 2026-11-25).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 4 << 20);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  server->service_.set_max_response_bytes(options.max_message_bytes);
  if (options.computing_calls == ServerOptions::ComputingCalls::kAsync) {
    server->service_.ServeOnCompletionQueues(kAsyncJobCallMethods);
    server->async_calls_ =
        std::make_unique<AsyncJobCalls>(server->service_, builder, options.cq_threads);
  }
  builder.RegisterService(&server->service_);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<RpcMetricsInterceptorFactory>(server->metrics_.get()));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on \"", options.listen_address, "\""));
  }
  server->address_ = IsUnixDomain(options.listen_address)
                         ? options.listen_address
                         : absl::StrCat(HostOf(options.listen_address), ":", server->port_);
  if (server->async_calls_ != nullptr) server->async_calls_->Start();

  grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService();
  health->SetServingStatus(true);  // the overall status, service ""
  health->SetServingStatus(kMatrixServiceName, true);
  return server;
}

MemoryAdmission* MatrixServer::memory_admission(int device) {
  if (device < 0 || device >= static_cast<int>(memory_admissions_.size())) return nullptr;
  return memory_admissions_[device].get();
}

int MatrixServer::cq_threads() const {
  return async_calls_ == nullptr ? 0 : async_calls_->threads();
}

MatrixServer::~MatrixServer() {
  Drain(kDestructorDrain);
  Wait();
}

DrainReport MatrixServer::Drain(absl::Duration timeout) {
  {
    absl::MutexLock lock(&drain_mutex_);
    if (draining_ || server_ == nullptr) return {};
    draining_ = true;
  }
  const absl::Time start = absl::Now();
  DrainReport report;
  // Probes and load balancers see NOT_SERVING first; the server keeps listening so that new calls
  // hear why they are refused and clients can still collect their jobs' results.
  server_->GetHealthCheckService()->SetServingStatus(false);
  scheduler_->StopAccepting(DrainingError());
  report.jobs_at_start = scheduler_->queued() + scheduler_->running();
  report.jobs_finished = scheduler_->WaitUntilIdle(start + timeout);
  if (!report.jobs_finished) {
    report.jobs_stopped = scheduler_->StopAll(absl::UnavailableError(absl::StrCat(
        "matrixd stopped this job: the server is shutting down and its drain timeout of ",
        absl::FormatDuration(timeout), " (--drain_timeout) passed before the job finished")));
    scheduler_->WaitUntilIdle(absl::Now() + kStopGrace);
  }
  server_->GetHealthCheckService()->Shutdown();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + kFinalGrace));
  if (async_calls_ != nullptr) async_calls_->Shutdown();
  report.elapsed = absl::Now() - start;
  shared_memory_->UnregisterAll();
  // Every call has ended, so no lease holds a matrix: releasing frees the memory now.
  for (const ResidentInfo& info : resident_->List()) {
    absl::StatusOr<uint64_t> freed = resident_->Release(info.handle, info.owner);
    if (!freed.ok()) continue;  // expired meanwhile
    ++report.resident_released;
    report.resident_bytes_released += *freed;
  }
  return report;
}

absl::StatusOr<int> MatrixServer::ReloadTokens() {
  if (authenticator_ == nullptr) return 0;
  return authenticator_->Reload();
}

void MatrixServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace matrixd::server
