// matrixd: the gRPC server binary. Parses flags, picks the backend, serves until SIGINT/SIGTERM.
// Exit codes: 0 after a graceful shutdown, 1 when it cannot listen, 2 for a bad configuration
// (flag values, unknown backend, --backend=cuda without a usable device).
#include <unistd.h>

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
#include "absl/strings/string_view.h"
#include "core/make_backend.h"
#include "core/validation.h"
#include "server/server.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051", "host:port to listen on; port 0 picks a free port");
ABSL_FLAG(std::string, backend, "auto",
          "auto (CUDA when a device is present, else CPU), cpu or cuda");
ABSL_FLAG(std::vector<std::string>, devices, {},
          "CUDA device ordinals to use, comma-separated (default: device 0)");
ABSL_FLAG(int, cpu_threads, 0, "worker threads of the CPU backend; 0 = all hardware threads");
ABSL_FLAG(int, max_permanent_n, matrixd::Limits{}.max_permanent_n,
          "largest n accepted for a permanent");
ABSL_FLAG(int64_t, max_matrix_elements, matrixd::Limits{}.max_elements,
          "largest number of elements accepted per input matrix (and per product)");
ABSL_FLAG(int, max_message_bytes, matrixd::server::ServerOptions{}.max_message_bytes,
          "largest request or response message in bytes");

namespace {

constexpr int kExitCannotListen = 1;
constexpr int kExitBadConfig = 2;

void Log(absl::string_view message) { std::cerr << "matrixd: " << message << std::endl; }

// The write end of a pipe the signal handler writes to; main() blocks reading the other end. A
// pipe because the handler may run on any thread (OpenBLAS starts threads before main) and
// write(2) is async-signal-safe.
int g_signal_pipe_write = -1;

extern "C" void OnShutdownSignal(int signal_number) {
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] ssize_t ignored = write(g_signal_pipe_write, &byte, 1);
  // A second signal during the graceful shutdown ends the process at once.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
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
  return options;
}

absl::StatusOr<std::unique_ptr<matrixd::Backend>> BackendFromFlags() {
  absl::StatusOr<std::vector<int>> devices = ParseDevices(absl::GetFlag(FLAGS_devices));
  if (!devices.ok()) return devices.status();
  const int cpu_threads = absl::GetFlag(FLAGS_cpu_threads);
  if (cpu_threads < 0) return absl::InvalidArgumentError("--cpu_threads must be >= 0");
  const std::string name = absl::GetFlag(FLAGS_backend);
  if (name == "auto") {
    Log(matrixd::CudaDeviceAvailable()
            ? "--backend=auto: a CUDA device is present, using the cuda backend"
            : "--backend=auto: no usable CUDA device (or no CUDA build), using the cpu backend");
  }
  return matrixd::MakeBackend(name, {.devices = *std::move(devices), .cpu_threads = cpu_threads});
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("matrixd: a gRPC service for dense linear algebra on CPU or GPU");
  absl::ParseCommandLine(argc, argv);

  absl::StatusOr<matrixd::server::ServerOptions> options = ServerOptionsFromFlags();
  if (!options.ok()) {
    Log(options.status().message());
    return kExitBadConfig;
  }
  absl::StatusOr<std::unique_ptr<matrixd::Backend>> backend = BackendFromFlags();
  if (!backend.ok()) {
    Log(absl::StrCat("cannot create the backend: ", backend.status().message()));
    return kExitBadConfig;
  }

  int signal_pipe[2];
  if (pipe(signal_pipe) != 0) {
    Log("cannot create the signal pipe");
    return kExitCannotListen;
  }
  g_signal_pipe_write = signal_pipe[1];
  std::signal(SIGINT, OnShutdownSignal);
  std::signal(SIGTERM, OnShutdownSignal);

  absl::StatusOr<std::unique_ptr<matrixd::server::MatrixServer>> server =
      matrixd::server::MatrixServer::Start(*std::move(backend), *options);
  if (!server.ok()) {
    Log(server.status().message());
    return kExitCannotListen;
  }
  const matrixd::Backend& serving = (*server)->backend();
  std::cout << "matrixd listening on " << (*server)->address() << " (backend " << serving.name()
            << ", device " << serving.device() << ")" << std::endl;

  unsigned char signal_number = 0;
  while (read(signal_pipe[0], &signal_number, 1) < 0) {
    // EINTR: the handler itself interrupted the read; try again.
  }
  Log(absl::StrCat("signal ", static_cast<int>(signal_number), ": shutting down"));
  (*server)->Shutdown();
  (*server)->Wait();
  server->reset();
  Log("stopped");
  return 0;
}
