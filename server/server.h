// MatrixServer: a running gRPC server with matrixd.v1.MatrixService on one backend, the standard
// health service (grpc.health.v1) and server reflection.
#ifndef MATRIXD_SERVER_SERVER_H_
#define MATRIXD_SERVER_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/validation.h"
#include "server/client_auth.h"
#include "server/matrix_service.h"
#include "server/memory_admission.h"
#include "server/memory_job_admission.h"
#include "server/metrics.h"
#include "server/metrics_http.h"
#include "server/metrics_observer.h"
#include "server/resident_registry.h"
#include "server/scheduler.h"
#include "server/shared_memory_registry.h"
#include "server/tls_credentials.h"

namespace matrixd::server {

class AsyncJobCalls;  // server/async_job_calls.h

// Security: see ServerOptions::tls and ::authenticator, and docs/operations.md "Security".

// The name the health service reports for the MatrixService.
inline constexpr char kMatrixServiceName[] = "matrixd.v1.MatrixService";

struct ServerOptions {
  // host:port; port 0 picks a free port (see MatrixServer::port()). Or a unix-domain socket,
  // "unix:PATH" (or "unix-abstract:NAME"), for clients on the same host.
  std::string listen_address = "0.0.0.0:50051";
  Limits limits;
  // Largest request and response; gRPC's default of 4 MB is too small for matrices.
  int max_message_bytes = 1 << 30;
  // The job queue every request goes through (workers, queue depth, lanes, job TTL). Left null,
  // its observer feeds metrics() and its admission is device memory (first device's limit).
  SchedulerOptions scheduler;
  // Resident matrices: the limit of all of them together and their idle TTL.
  ResidentRegistry::Options resident;
  // host:port for GET /metrics (port 0 picks a free one); empty: no metrics endpoint (metrics()
  // still counts).
  std::string metrics_address;
  // Plaintext, TLS or mutual TLS on the gRPC port (server/tls_credentials.h).
  TlsOptions tls = {};
  // Who calls come from and their quotas (server/client_auth.h); null: every call is the
  // anonymous client without a quota.
  std::shared_ptr<ClientAuthenticator> authenticator = nullptr;
  // Which gRPC API serves the computing calls (Determinant, Factorize, Solve, Multiply,
  // Permanent): kAsync, completion queues each polled by a thread of its own
  // (server/async_job_calls.h); or kCallback, gRPC's callback API and its shared threads, like
  // every other call. Their answers are the same.
  enum class ComputingCalls { kCallback, kAsync };
  ComputingCalls computing_calls = ComputingCalls::kAsync;
  // With kAsync: the completion queues and their threads; 0: one per hardware thread.
  int cq_threads = 0;
};

// What MatrixServer::Drain saw.
struct DrainReport {
  int jobs_at_start = 0;      // queued and running when the drain began
  bool jobs_finished = true;  // every job ended before the drain timeout
  int jobs_stopped = 0;       // jobs still queued or running at the timeout, stopped
  int resident_released = 0;  // resident matrices released at the end
  uint64_t resident_bytes_released = 0;
  absl::Duration elapsed;  // from the start of the drain to the gRPC server's stop
};

// The status of calls refused because the server drains: UNAVAILABLE, "draining".
absl::Status DrainingError();

class MatrixServer {
 public:
  // Builds and starts the server, then marks it SERVING (overall and for kMatrixServiceName).
  // UNAVAILABLE when it cannot listen on the address; INVALID_ARGUMENT for a bad option.
  static absl::StatusOr<std::unique_ptr<MatrixServer>> Start(std::unique_ptr<Backend> backend,
                                                             const ServerOptions& options);

  // Drains for at most kDestructorDrain and waits.
  ~MatrixServer();
  MatrixServer(const MatrixServer&) = delete;
  MatrixServer& operator=(const MatrixServer&) = delete;

  // The port it listens on (the chosen one when the address asked for port 0); gRPC's 1 for a
  // unix-domain socket.
  int port() const { return port_; }
  // The listen address with the actual port, e.g. "127.0.0.1:43117"; a unix-domain address as
  // given ("unix:/run/matrixd.sock").
  const std::string& address() const { return address_; }
  const Backend& backend() const { return *backend_; }
  Scheduler& scheduler() { return *scheduler_; }
  Metrics& metrics() { return *metrics_; }
  // The metrics endpoint; null without ServerOptions::metrics_address.
  const MetricsHttpServer* metrics_http() const { return metrics_http_.get(); }
  // Device-memory admission of the backend's device `device` (Backend::DeviceMemory() order);
  // null for a backend without device memory or an index out of range.
  MemoryAdmission* memory_admission(int device = 0);
  ResidentRegistry& resident() { return *resident_; }
  // The completion queues (and their threads) that serve the computing calls; 0 when they are on
  // the callback API (ServerOptions::computing_calls).
  int cq_threads() const;

  // Graceful drain, then stop. Marks every service NOT_SERVING at once; from then on calls that
  // would start work (the computing calls, Submit, Upload, CreateMatrix) get DrainingError(),
  // while health, Watch, GetJob, Cancel, Download, ListMatrices and Release still answer, so that
  // clients can collect what they started. Queued and running jobs (calls and Submit jobs alike)
  // may finish until `timeout`; those left then end UNAVAILABLE naming the timeout. Then the gRPC
  // server stops (calls still open get kFinalGrace to end) and every resident matrix is released.
  // Blocks until then. Thread-safe; a second call returns at once with an empty report.
  DrainReport Drain(absl::Duration timeout);
  // Blocks until the server has shut down.
  void Wait();
  // Reads the token file again (SIGHUP): ClientAuthenticator::Reload. Returns the number of
  // clients; on an error the previous tokens stay in use.
  absl::StatusOr<int> ReloadTokens();

  // How long calls still open when the last job has ended (responses being sent, Watch streams
  // ending, health watchers) get before the gRPC server cancels them.
  static constexpr absl::Duration kFinalGrace = absl::Seconds(1);
  // After the drain timeout, how long stopped jobs get to return before the server stops anyway.
  static constexpr absl::Duration kStopGrace = absl::Seconds(5);
  static constexpr absl::Duration kDestructorDrain = absl::Seconds(2);

 private:
  MatrixServer(std::unique_ptr<Backend> backend, const ServerOptions& options);

  std::unique_ptr<Metrics> metrics_;  // first: everything below may record into it
  std::unique_ptr<Backend> backend_;  // a MeteredBackend around the one given to Start
  std::vector<std::unique_ptr<MemoryAdmission>> memory_admissions_;  // one per device
  std::unique_ptr<MemoryJobAdmission> job_admission_;
  // Before the scheduler: jobs hold leases on resident matrices until they end.
  std::unique_ptr<ResidentRegistry> resident_;
  // Client regions, pinned through backend_: unmapped before it goes. Jobs hold the regions they
  // use, so the registry may go first.
  std::unique_ptr<SharedMemoryRegistry> shared_memory_;
  std::unique_ptr<MetricsSchedulerObserver> scheduler_observer_;
  // Destroyed after the gRPC server has stopped (every call's job has ended) and before
  // the backend its workers call.
  std::unique_ptr<Scheduler> scheduler_;
  std::shared_ptr<ClientAuthenticator> authenticator_;  // null: anonymous
  MatrixService service_;
  // With ServerOptions::ComputingCalls::kAsync; stopped after server_ and destroyed after it.
  std::unique_ptr<AsyncJobCalls> async_calls_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;  // stops before metrics_ goes
  int port_ = 0;
  std::string address_;
  absl::Mutex drain_mutex_;
  bool draining_ ABSL_GUARDED_BY(drain_mutex_) = false;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_SERVER_H_
