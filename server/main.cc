// matrixd: the gRPC server binary. Parses flags, picks the backend, serves until SIGINT/SIGTERM;
// SIGHUP re-reads the --auth_tokens file.
// Exit codes: 0 after a graceful shutdown, 1 when it cannot listen, 2 for a bad configuration
// (flag values, unknown backend, --backend=cuda without a usable device).
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/make_backend.h"
#include "core/validation.h"
#include "server/client_auth.h"
#include "server/memory_limit.h"
#include "server/metrics_http.h"
#include "server/server.h"
#ifdef MATRIXD_HAVE_DISTRIBUTED
#include "core/distributed/distributed_backend.h"
#include "core/distributed/grid_engine_choice.h"
#include "core/distributed/mpi_session.h"
#include "core/distributed/scalapack_grid.h"
#endif

ABSL_FLAG(
    std::string, listen, "0.0.0.0:50051",
    "host:port to listen on (port 0 picks a free port), or unix:PATH, a unix-domain socket for "
    "clients on the same host");
ABSL_FLAG(std::string, backend, "auto",
          "auto (CUDA when a device is present, else CPU), cpu or cuda");
ABSL_FLAG(std::vector<std::string>, devices, {},
          "CUDA device ordinals to use, comma-separated (default: every visible device)");
ABSL_FLAG(int, cpu_threads, 0,
          "threads each CPU-backend job may use in its own kernels; 0 = all hardware threads");
ABSL_FLAG(int, max_permanent_n, matrixd::Limits{}.max_permanent_n,
          "largest n accepted for a permanent");
ABSL_FLAG(int64_t, max_matrix_elements, matrixd::Limits{}.max_elements,
          "largest number of elements accepted per input matrix (and per product) and per "
          "matrix that Upload, CreateMatrix or Generate makes resident");
ABSL_FLAG(int, max_message_bytes, matrixd::server::ServerOptions{}.max_message_bytes,
          "largest request or response message in bytes");
ABSL_FLAG(int, queue_depth, matrixd::server::SchedulerOptions{}.queue_depth,
          "jobs that may wait in each lane (small, large); one more is refused with "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(int, cpu_workers, 2, "jobs the cpu backend runs at once");
ABSL_FLAG(int, streams_per_device, 2, "jobs the cuda backend runs at once per device");
ABSL_FLAG(double, large_job_flops, matrixd::server::SchedulerOptions{}.large_job_flops,
          "estimated flops from which a job goes to the large lane (large jobs leave one worker "
          "to small ones)");
ABSL_FLAG(int, coalesce_window_us, -1,
          "small determinants and LU factorizations (n <= --coalesce_max_n) of one dtype and shape "
          "that are queued together run as one batched backend call; the first job of a group "
          "waits up to this many microseconds for partners, only while other jobs are queued or "
          "running. -1: 200 for the cuda backend, coalescing off for the cpu backend. 0: "
          "coalesce what is queued, never wait");
ABSL_FLAG(double, inline_max_flops, 3e5,
          "a request computed on the host (every request of the cpu backend; on cuda, "
          "determinants of order <= --host_determinant_max_order and factorizations of order <= "
          "--host_factorize_max_order) whose estimated flops are at most this (n^3 for a "
          "determinant: 3e5 covers n <= 66) and that is not coalesced runs "
          "on the thread that received it, without a hand-off to a worker; 0: every job queues");
ABSL_FLAG(int, coalesce_max_group, 64, "the most jobs in one coalesced group; 1: never coalesce");
ABSL_FLAG(int64_t, coalesce_max_n, matrixd::server::CoalesceOptions{}.max_order,
          "the largest matrix order that coalesces");
ABSL_FLAG(absl::Duration, job_ttl, matrixd::server::SchedulerOptions{}.job_ttl,
          "how long a finished asynchronous job stays visible to GetJob/Watch, e.g. 10m");
ABSL_FLAG(std::string, metrics, "0.0.0.0:9464",
          "host:port serving Prometheus metrics at GET /metrics; empty = no metrics endpoint");
ABSL_FLAG(std::string, device_memory_limit, "90%",
          "device memory the cuda backend may use on each device: a share (90%) or a size "
          "(60GiB, 64G); a job needing more fails with RESOURCE_EXHAUSTED, one that does not fit "
          "next to the running jobs waits");
ABSL_FLAG(std::string, resident_memory_limit, "50%",
          "bytes all resident matrices may take together (uploaded, or results kept): a share of "
          "the host's physical memory (50%) or a size (16GiB); on a GPU they live in device "
          "memory and spill to host memory under pressure, counting against this either way");
ABSL_FLAG(bool, metrics_loopback_only, false,
          "serve the metrics endpoint on 127.0.0.1 only (with the port of --metrics), whatever "
          "host --metrics names: for a network where only a local agent scrapes");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain of the gRPC port; with --tls_key the port speaks TLS only");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: clients must present a certificate signed by it (mutual TLS)");
ABSL_FLAG(absl::Duration, tls_refresh_interval, absl::Minutes(1),
          "how often the --tls_cert, --tls_key and --tls_client_ca files are read again, so that "
          "a rotated certificate is served without a restart");
ABSL_FLAG(std::string, auth_tokens, "",
          "token file: one client per line, \"name token [key=value ...]\" (quotas max_jobs, "
          "max_resident_bytes, max_matrix_elements, max_permanent_n, max_shm_regions); calls "
          "must send \"authorization: Bearer TOKEN\"; re-read on SIGHUP. Empty: no tokens");
ABSL_FLAG(std::string, default_client_quota, "",
          "quotas of every client whose token line leaves them unset (and of the anonymous "
          "client without --auth_tokens), as key=value words, e.g. \"max_jobs=8 "
          "max_resident_bytes=4GiB\"");
ABSL_FLAG(std::string, computing_calls, "async",
          "which gRPC API serves Determinant, Factorize, Solve, Multiply and Permanent: "
          "\"async\" (completion queues, --cq_threads of them, each polled by its own thread, "
          "which also runs inline jobs and sends their responses) or \"callback\" (gRPC's "
          "callback API, whose completions run on a shared pool of half the cores). The answers "
          "are the same; async answered small requests faster on an H100 host "
          "(docs/benchmarks.md, 2026-11-27)");
ABSL_FLAG(int, cq_threads, 0,
          "with --computing_calls=async: completion queues and their threads; 0: one per "
          "hardware thread");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(30),
          "on SIGTERM/SIGINT: how long queued and running jobs may still finish (new work is "
          "refused with UNAVAILABLE) before the rest is stopped; a second signal stops at once");
ABSL_FLAG(absl::Duration, resident_ttl, matrixd::server::ResidentRegistry::Options{}.ttl,
          "a resident matrix unused for this long is released");
ABSL_FLAG(int, host_determinant_max_order, matrixd::kHostDeterminantMaxOrder,
          "cuda backend: determinants of order up to this, sent from host memory, are computed on "
          "the host CPU (faster than a device round trip at these sizes; the CPU backend's "
          "values); 0 = every determinant on the device");
ABSL_FLAG(int, host_factorize_max_order, matrixd::kHostFactorizeMaxOrder,
          "cuda backend: LU, Cholesky and QR factorizations (and their solves) of one matrix of "
          "order up to this, sent from host memory, are computed on the host CPU with the CPU "
          "backend's code; 0 = every factorization on the device");
ABSL_FLAG(std::string, state_dir, "",
          "where long permanents checkpoint their finished Gray-code chunks, so that the same job "
          "submitted again after a crash resumes instead of starting over; empty = no checkpoints "
          "(cpu and cuda backends)");
ABSL_FLAG(bool, distributed, false,
          "run under mpirun: rank 0 serves gRPC, the other ranks join its large float64 "
          "Multiply, Determinant and LU jobs over a grid of every rank: ScaLAPACK, or "
          "cuBLASMp/cuSOLVERMp on one GPU per rank (--distributed_engine; docs/distributed.md)");
ABSL_FLAG(std::string, distributed_engine, "auto",
          "--distributed: auto (cuBLASMp/cuSOLVERMp when every rank has a GPU for its local rank, "
          "the cuda backend runs and the build has them; else ScaLAPACK), scalapack, or "
          "nvidia_mp (the GPUs or no start). Factorize always runs on ScaLAPACK");
ABSL_FLAG(int64_t, distributed_gpu_block, 0,
          "--distributed with the GPU engine: the block size of its block-cyclic layout; 0 = 1024 "
          "for products, 512 for determinants");
ABSL_FLAG(int64_t, distributed_min_dimension, 1024,
          "--distributed: the smallest largest-dimension of a job that goes to the grid");
ABSL_FLAG(int, distributed_block, 64,
          "--distributed: the block size of ScaLAPACK's block-cyclic layout");
ABSL_FLAG(absl::Duration, distributed_timeout, absl::Minutes(30),
          "--distributed: a grid job not finished by then fails with UNAVAILABLE and the grid is "
          "given up (later jobs run on rank 0 alone)");

namespace {

constexpr int kExitCannotListen = 1;
constexpr int kExitBadConfig = 2;

void Log(absl::string_view message) { std::cerr << "matrixd: " << message << std::endl; }

// The write end of a pipe the signal handler writes to; main() blocks reading the other end. A
// pipe because the handler may run on any thread (OpenBLAS starts threads before main) and
// write(2) is async-signal-safe.
int g_signal_pipe_write = -1;

extern "C" void OnReloadSignal(int signal_number) {
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] ssize_t ignored = write(g_signal_pipe_write, &byte, 1);
}

extern "C" void OnShutdownSignal(int signal_number) {
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] ssize_t ignored = write(g_signal_pipe_write, &byte, 1);
  // A second signal during the graceful shutdown ends the process at once.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

uint64_t PhysicalMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
             : 0;
}

absl::StatusOr<std::vector<int>> ParseDevices(const std::vector<std::string>& names) {
  std::vector<int> devices;
  for (const std::string& name : names) {
    int device = 0;
    if (!absl::SimpleAtoi(name, &device) || device < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--devices: \"", name, "\" is not a device ordinal (want e.g. 0,1)"));
    }
    devices.push_back(device);
  }
  return devices;
}

absl::StatusOr<matrixd::server::ServerOptions> ServerOptionsFromFlags() {
  matrixd::server::ServerOptions options;
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.limits.max_permanent_n = absl::GetFlag(FLAGS_max_permanent_n);
  options.limits.max_elements = absl::GetFlag(FLAGS_max_matrix_elements);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  if (options.limits.max_permanent_n < 1) {
    return absl::InvalidArgumentError("--max_permanent_n must be >= 1");
  }
  if (options.limits.max_elements < 1) {
    return absl::InvalidArgumentError("--max_matrix_elements must be >= 1");
  }
  if (options.max_message_bytes < 1) {
    return absl::InvalidArgumentError("--max_message_bytes must be >= 1");
  }
  if (absl::GetFlag(FLAGS_cpu_workers) < 1) {
    return absl::InvalidArgumentError("--cpu_workers must be >= 1");
  }
  if (absl::GetFlag(FLAGS_streams_per_device) < 1) {
    return absl::InvalidArgumentError("--streams_per_device must be >= 1");
  }
  options.scheduler.queue_depth = absl::GetFlag(FLAGS_queue_depth);
  options.scheduler.large_job_flops = absl::GetFlag(FLAGS_large_job_flops);
  options.scheduler.job_ttl = absl::GetFlag(FLAGS_job_ttl);
  absl::StatusOr<matrixd::DeviceMemoryLimit> resident_limit =
      matrixd::server::ParseDeviceMemoryLimit(absl::GetFlag(FLAGS_resident_memory_limit));
  if (!resident_limit.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--resident_memory_limit: ", resident_limit.status().message()));
  }
  options.resident.limit_bytes =
      resident_limit->bytes > 0
          ? resident_limit->bytes
          : static_cast<uint64_t>(resident_limit->fraction * static_cast<double>(PhysicalMemory()));
  options.resident.ttl = absl::GetFlag(FLAGS_resident_ttl);
  if (absl::GetFlag(FLAGS_drain_timeout) < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain_timeout must be >= 0");
  }
  if (options.resident.ttl <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--resident_ttl must be > 0");
  }
  options.metrics_address = absl::GetFlag(FLAGS_metrics);
  if (!options.metrics_address.empty()) {
    absl::StatusOr<std::pair<std::string, int>> host_port =
        matrixd::server::SplitHostPort(options.metrics_address);
    if (!host_port.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--metrics: ", host_port.status().message()));
    }
    if (absl::GetFlag(FLAGS_metrics_loopback_only)) {
      options.metrics_address = absl::StrCat("127.0.0.1:", host_port->second);
    }
  }
  options.tls = {.cert_path = absl::GetFlag(FLAGS_tls_cert),
                 .key_path = absl::GetFlag(FLAGS_tls_key),
                 .client_ca_path = absl::GetFlag(FLAGS_tls_client_ca),
                 .refresh_interval = absl::GetFlag(FLAGS_tls_refresh_interval)};
  matrixd::server::ClientQuota defaults;
  if (absl::Status parsed = matrixd::server::ParseQuotaWords(
          absl::StrSplit(absl::GetFlag(FLAGS_default_client_quota), ' ', absl::SkipWhitespace()),
          defaults);
      !parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--default_client_quota: ", parsed.message()));
  }
  if (const std::string tokens = absl::GetFlag(FLAGS_auth_tokens); !tokens.empty()) {
    absl::StatusOr<std::unique_ptr<matrixd::server::ClientAuthenticator>> authenticator =
        matrixd::server::ClientAuthenticator::FromFile(tokens, options.limits, defaults);
    if (!authenticator.ok()) return authenticator.status();
    options.authenticator = *std::move(authenticator);
  } else {
    options.authenticator =
        std::make_shared<matrixd::server::ClientAuthenticator>(options.limits, defaults);
  }
  if (absl::Status valid = matrixd::server::ValidateSchedulerOptions(options.scheduler);
      !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("bad queue flag: ", valid.message()));
  }
  using ComputingCalls = matrixd::server::ServerOptions::ComputingCalls;
  if (const std::string api = absl::GetFlag(FLAGS_computing_calls); api == "async") {
    options.computing_calls = ComputingCalls::kAsync;
  } else if (api == "callback") {
    options.computing_calls = ComputingCalls::kCallback;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--computing_calls is \"", api, "\"; want \"callback\" or \"async\""));
  }
  options.cq_threads = absl::GetFlag(FLAGS_cq_threads);
  if (options.cq_threads < 0) {
    return absl::InvalidArgumentError("--cq_threads must be >= 0 (0: one per hardware thread)");
  }
  return options;
}

absl::StatusOr<std::unique_ptr<matrixd::Backend>> BackendFromFlags() {
  absl::StatusOr<std::vector<int>> devices = ParseDevices(absl::GetFlag(FLAGS_devices));
  if (!devices.ok()) return devices.status();
  const int cpu_threads = absl::GetFlag(FLAGS_cpu_threads);
  if (cpu_threads < 0) return absl::InvalidArgumentError("--cpu_threads must be >= 0");
  absl::StatusOr<matrixd::DeviceMemoryLimit> memory_limit =
      matrixd::server::ParseDeviceMemoryLimit(absl::GetFlag(FLAGS_device_memory_limit));
  if (!memory_limit.ok()) return memory_limit.status();
  const std::string name = absl::GetFlag(FLAGS_backend);
  if (name == "auto") {
    Log(matrixd::CudaDeviceAvailable()
            ? "--backend=auto: a CUDA device is present, using the cuda backend"
            : "--backend=auto: no usable CUDA device (or no CUDA build), using the cpu backend");
  }
  return matrixd::MakeBackend(
      name, {.devices = *std::move(devices),
             .cpu_threads = cpu_threads,
             .device_memory_limit = *memory_limit,
             .streams_per_device = absl::GetFlag(FLAGS_streams_per_device),
             .state_dir = absl::GetFlag(FLAGS_state_dir),
             .host_max_orders = {.determinant = absl::GetFlag(FLAGS_host_determinant_max_order),
                                 .factorize = absl::GetFlag(FLAGS_host_factorize_max_order)}});
}

// Coalescing (server/coalescing.h): on by default for the cuda backend only (docs/benchmarks.md,
// "Small-request batching": on the CPU a batch costs what its members cost alone).
absl::StatusOr<matrixd::server::CoalesceOptions> CoalesceFromFlags(
    const matrixd::Backend& backend) {
  const int window_us = absl::GetFlag(FLAGS_coalesce_window_us);
  if (window_us < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--coalesce_window_us is ", window_us, "; want -1 (auto) or >= 0"));
  }
  const bool on = window_us >= 0 || backend.name() == "cuda";
  matrixd::server::CoalesceOptions options{
      .max_group = on ? absl::GetFlag(FLAGS_coalesce_max_group) : 1,
      .max_order = absl::GetFlag(FLAGS_coalesce_max_n),
      .window = absl::Microseconds(window_us >= 0 ? window_us : 200)};
  if (absl::Status valid = matrixd::server::ValidateCoalesceOptions(options); !valid.ok()) {
    return valid;
  }
  return options;
}

// Jobs run at once: --cpu_workers for the CPU backend, --streams_per_device per device for CUDA.
int WorkersFromFlags(const matrixd::Backend& backend) {
  if (backend.name() != "cuda") return absl::GetFlag(FLAGS_cpu_workers);
  const int devices = std::max<int>(1, static_cast<int>(backend.DeviceMemory().size()));
  return absl::GetFlag(FLAGS_streams_per_device) * devices;
}

#ifdef MATRIXD_HAVE_DISTRIBUTED
// The grid of every rank with its engine (collective: every rank calls it). `cuda_backend`: the
// server runs (rank 0) or would run (the workers, from the flags) the cuda backend. Sets *note to
// ChooseGridEngine's line.
absl::StatusOr<std::unique_ptr<matrixd::distributed::ScalapackGrid>> FormGrid(bool cuda_backend,
                                                                              std::string* note) {
  absl::StatusOr<std::unique_ptr<matrixd::distributed::ScalapackGrid>> grid =
      matrixd::distributed::ScalapackGrid::Create(absl::GetFlag(FLAGS_distributed_block));
  if (!grid.ok()) return grid.status();
  absl::StatusOr<matrixd::distributed::GridEngineKind> kind =
      matrixd::distributed::ParseGridEngine(absl::GetFlag(FLAGS_distributed_engine));
  if (!kind.ok()) return kind.status();
  absl::StatusOr<std::string> chosen =
      matrixd::distributed::ChooseGridEngine(*kind, cuda_backend, **grid);
  if (!chosen.ok()) return chosen.status();
  *note = *std::move(chosen);
  return grid;
}

// A rank other than 0: no backend, no gRPC, no metrics; it joins rank 0's grid jobs until rank 0
// shuts the grid down. Returns the process's exit code.
int RunWorker(matrixd::distributed::MpiSession& mpi) {
  absl::StatusOr<bool> root_ready = mpi.RootReady(false);
  if (!root_ready.ok() || !*root_ready) return kExitBadConfig;  // rank 0 says why
  const std::string name = absl::GetFlag(FLAGS_backend);
  const bool cuda = name == "cuda" || (name == "auto" && matrixd::CudaDeviceAvailable());
  std::string note;
  absl::StatusOr<std::unique_ptr<matrixd::distributed::ScalapackGrid>> grid = FormGrid(cuda, &note);
  if (!grid.ok()) {
    // An engine refused on every rank is rank 0's to report.
    if (!absl::IsFailedPrecondition(grid.status())) {
      Log(absl::StrCat("rank ", mpi.rank(), ": cannot form the grid: ", grid.status().message()));
    }
    return kExitBadConfig;
  }
  const absl::Status served = (*grid)->ServeWorker();
  if (!served.ok()) {
    Log(absl::StrCat("rank ", mpi.rank(), ": ", served.message()));
    mpi.lost()->store(true);
    return kExitCannotListen;
  }
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("matrixd: a gRPC service for dense linear algebra on CPU or GPU");
  absl::ParseCommandLine(argc, argv);
  // Debian's Abseil keeps Mutex deadlock detection on (its libraries are built without NDEBUG):
  // every Mutex a request creates (its Job's, its reactor's) then enters and leaves a global
  // lock-order graph, about 4 % of the server's time under small-request load (perf, issue 13).
  // The tests keep it on; the server binary does not pay for it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  absl::StatusOr<matrixd::server::ServerOptions> options = ServerOptionsFromFlags();
  if (!options.ok()) {
    Log(options.status().message());
    return kExitBadConfig;
  }
#ifdef MATRIXD_HAVE_DISTRIBUTED
  // Declared before the server, so that MPI outlives it.
  std::unique_ptr<matrixd::distributed::MpiSession> mpi;
  if (absl::GetFlag(FLAGS_distributed)) {
    // The same flags on every rank: a bad one stops every rank here, before MPI.
    if (absl::GetFlag(FLAGS_distributed_block) < 1) {
      Log("--distributed_block must be >= 1");
      return kExitBadConfig;
    }
    if (absl::GetFlag(FLAGS_distributed_gpu_block) < 0) {
      Log("--distributed_gpu_block must be >= 0");
      return kExitBadConfig;
    }
    if (absl::Status engine =
            matrixd::distributed::ParseGridEngine(absl::GetFlag(FLAGS_distributed_engine)).status();
        !engine.ok()) {
      Log(engine.message());
      return kExitBadConfig;
    }
    absl::StatusOr<std::unique_ptr<matrixd::distributed::MpiSession>> session =
        matrixd::distributed::MpiSession::Init(&argc, &argv);
    if (!session.ok()) {
      Log(session.status().message());
      return kExitBadConfig;
    }
    mpi = *std::move(session);
    if (mpi->rank() != 0) return RunWorker(*mpi);
  }
#else
  if (absl::GetFlag(FLAGS_distributed)) {
    Log("--distributed: this build has no distributed mode (MPI and ScaLAPACK were not found)");
    return kExitBadConfig;
  }
#endif
  absl::StatusOr<std::unique_ptr<matrixd::Backend>> backend = BackendFromFlags();
#ifdef MATRIXD_HAVE_DISTRIBUTED
  if (mpi != nullptr) {
    absl::StatusOr<bool> told = mpi->RootReady(backend.ok());
    if (!told.ok()) {
      Log(told.status().message());
      return kExitBadConfig;
    }
  }
#endif
  if (!backend.ok()) {
    Log(absl::StrCat("cannot create the backend: ", backend.status().message()));
    return kExitBadConfig;
  }
#ifdef MATRIXD_HAVE_DISTRIBUTED
  if (mpi != nullptr) {
    std::string note;
    absl::StatusOr<std::unique_ptr<matrixd::distributed::ScalapackGrid>> grid =
        FormGrid((*backend)->name() == "cuda", &note);
    if (!grid.ok()) {
      Log(absl::StrCat("cannot form the grid: ", grid.status().message()));
      return kExitBadConfig;
    }
    Log(absl::StrCat("distributed: ", mpi->size(), " MPI ranks as a ", (*grid)->shape().rows, "x",
                     (*grid)->shape().cols, " grid; engine: ", note));
    *backend = matrixd::distributed::MakeDistributedBackend(
        *std::move(backend), *std::move(grid),
        {.min_dimension = absl::GetFlag(FLAGS_distributed_min_dimension),
         .timeout = absl::GetFlag(FLAGS_distributed_timeout),
         .lost = mpi->lost(),
         .device_block = absl::GetFlag(FLAGS_distributed_gpu_block),
         .engine_note = note});
  }
#endif

  options->scheduler.workers = WorkersFromFlags(**backend);
  absl::StatusOr<matrixd::server::CoalesceOptions> coalesce = CoalesceFromFlags(**backend);
  if (!coalesce.ok()) {
    Log(std::string(coalesce.status().message()));
    return kExitBadConfig;
  }
  options->scheduler.coalesce = *coalesce;
  options->scheduler.inline_max_flops = absl::GetFlag(FLAGS_inline_max_flops);
  if (coalesce->max_group > 1) {
    Log(absl::StrCat("coalescing small jobs (n <= ", coalesce->max_order, ") up to ",
                     coalesce->max_group, " at once, window ",
                     absl::FormatDuration(coalesce->window)));
  }
  Log(absl::StrCat(options->scheduler.workers, " workers, up to ", options->scheduler.queue_depth,
                   " waiting jobs per lane"));

  int signal_pipe[2];
  if (pipe(signal_pipe) != 0) {
    Log("cannot create the signal pipe");
    return kExitCannotListen;
  }
  g_signal_pipe_write = signal_pipe[1];
  std::signal(SIGINT, OnShutdownSignal);
  std::signal(SIGTERM, OnShutdownSignal);
  std::signal(SIGHUP, OnReloadSignal);

  absl::StatusOr<std::unique_ptr<matrixd::server::MatrixServer>> server =
      matrixd::server::MatrixServer::Start(*std::move(backend), *options);
  if (!server.ok()) {
    Log(server.status().message());
    return kExitCannotListen;
  }
  const matrixd::Backend& serving = (*server)->backend();
  std::cout << "matrixd listening on " << (*server)->address() << " (backend " << serving.name()
            << ", device " << serving.device() << ")" << std::endl;
  Log(absl::StrCat(
      options->tls.enabled()
          ? (options->tls.mutual() ? "mutual TLS (client certificates required)" : "TLS")
          : "plaintext (no --tls_cert)",
      "; ",
      options->authenticator->requires_token()
          ? absl::StrCat("tokens from ", absl::GetFlag(FLAGS_auth_tokens), " (SIGHUP re-reads)")
          : "no tokens (--auth_tokens): every caller is one anonymous client"));
  if (const int queues = (*server)->cq_threads(); queues > 0) {
    Log(absl::StrCat("computing calls on ", queues,
                     " completion queues, a thread each (--computing_calls=async)"));
  }
  if (const matrixd::server::MetricsHttpServer* metrics = (*server)->metrics_http();
      metrics != nullptr) {
    Log(absl::StrCat("Prometheus metrics at http://", metrics->address(), "/metrics"));
  }

  unsigned char signal_number = 0;
  for (;;) {
    if (read(signal_pipe[0], &signal_number, 1) < 0) continue;  // EINTR: the handler interrupted
    if (signal_number != SIGHUP) break;
    absl::StatusOr<int> clients = (*server)->ReloadTokens();
    Log(clients.ok()
            ? absl::StrCat("SIGHUP: ", *clients, " clients in ", absl::GetFlag(FLAGS_auth_tokens))
            : absl::StrCat("SIGHUP: kept the previous tokens: ", clients.status().message()));
  }
  const absl::Duration drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  Log(absl::StrCat("signal ", static_cast<int>(signal_number), ": draining for up to ",
                   absl::FormatDuration(drain_timeout), " (a second signal stops at once)"));
  const matrixd::server::DrainReport drained = (*server)->Drain(drain_timeout);
  (*server)->Wait();
  Log(absl::StrCat("drained in ", absl::FormatDuration(drained.elapsed), ": ",
                   drained.jobs_at_start, " jobs at the start, ",
                   drained.jobs_finished
                       ? "all finished"
                       : absl::StrCat(drained.jobs_stopped, " stopped at the timeout"),
                   "; released ", drained.resident_released, " resident matrices (",
                   drained.resident_bytes_released, " bytes)"));
  server->reset();
  Log("stopped");
  return 0;
}
