// MatrixServer: a running gRPC server with matrixd.v1.MatrixService on one backend, the standard
// health service (grpc.health.v1) and server reflection.
#ifndef MATRIXD_SERVER_SERVER_H_
#define MATRIXD_SERVER_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/validation.h"
#include "server/matrix_service.h"

namespace matrixd::server {

// The name the health service reports for the MatrixService.
inline constexpr char kMatrixServiceName[] = "matrixd.v1.MatrixService";

struct ServerOptions {
  // host:port; port 0 picks a free port (see MatrixServer::port()).
  std::string listen_address = "0.0.0.0:50051";
  Limits limits;
  // Largest request and response; gRPC's default of 4 MB is too small for matrices.
  int max_message_bytes = 1 << 30;
};

class MatrixServer {
 public:
  // Builds and starts the server, then marks it SERVING (overall and for kMatrixServiceName).
  // UNAVAILABLE when it cannot listen on the address; INVALID_ARGUMENT for a bad option.
  static absl::StatusOr<std::unique_ptr<MatrixServer>> Start(std::unique_ptr<Backend> backend,
                                                             const ServerOptions& options);

  // Shuts down and waits.
  ~MatrixServer();
  MatrixServer(const MatrixServer&) = delete;
  MatrixServer& operator=(const MatrixServer&) = delete;

  // The port it listens on (the chosen one when the address asked for port 0).
  int port() const { return port_; }
  // The listen address with the actual port, e.g. "127.0.0.1:43117".
  const std::string& address() const { return address_; }
  const Backend& backend() const { return *backend_; }

  // Marks every service NOT_SERVING, stops accepting calls and cancels those still running after
  // `grace`. Thread-safe and idempotent; safe to call from a signal-handling thread.
  void Shutdown(absl::Duration grace = absl::Seconds(2));
  // Blocks until the server has shut down.
  void Wait();

 private:
  MatrixServer(std::unique_ptr<Backend> backend, const Limits& limits);

  std::unique_ptr<Backend> backend_;
  MatrixService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string address_;
  absl::Mutex shutdown_mutex_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mutex_) = false;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_SERVER_H_
