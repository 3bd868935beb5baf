// Serves GET /metrics (Prometheus's text format, from Metrics::Serialize) over plain HTTP with
// cpp-httplib. Not prometheus-cpp's Exposer: its civetweb threads have a 100 KiB stack, too small
// for cuBLAS's thread-local storage, so it cannot start in a process that links cuBLAS.
#ifndef MATRIXD_SERVER_METRICS_HTTP_H_
#define MATRIXD_SERVER_METRICS_HTTP_H_

#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/metrics.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace matrixd::server {

// Splits "host:port" ("0.0.0.0:9464", "[::1]:9464", ":9464" = every IPv4 address) into a host
// for bind(2) (brackets removed) and a port in [0, 65535]. INVALID_ARGUMENT otherwise.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(absl::string_view address);

class MetricsHttpServer {
 public:
  // Listens on `address` (port 0 picks a free one) and answers GET /metrics from a thread pool
  // of its own. `metrics` must outlive the server. INVALID_ARGUMENT for a malformed address,
  // UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(absl::string_view address,
                                                                  Metrics* metrics);
  // Stops listening and waits for the listener thread.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }
  // The bound address with the actual port, e.g. "127.0.0.1:9464".
  const std::string& address() const { return address_; }

 private:
  MetricsHttpServer();

  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  int port_ = 0;
  std::string address_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_METRICS_HTTP_H_
