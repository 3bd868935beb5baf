// ClientOptions::connection (what `matrixctl load --connections` spreads its workers with):
// clients with different non-zero values reach the server over TCP connections of their own,
// clients with the same options share one. Counted from the kernel's socket table (Linux).
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "core/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

// Established TCP connections (IPv4 and IPv6) whose remote port is `port`: the clients' ends.
int EstablishedConnectionsTo(int port) {
  int count = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      const std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() < 4 || fields[3] != "01") continue;  // 01: ESTABLISHED
      const std::vector<std::string> remote = absl::StrSplit(fields[2], ':');
      int remote_port = 0;
      if (remote.size() == 2 && absl::SimpleHexAtoi(remote[1], &remote_port) &&
          remote_port == port) {
        ++count;
      }
    }
  }
  return count;
}

int PortOf(const std::string& address) {
  int port = 0;
  const std::string::size_type colon = address.rfind(':');
  EXPECT_TRUE(colon != std::string::npos && absl::SimpleAtoi(address.substr(colon + 1), &port))
      << address;
  return port;
}

// Connects `count` clients, the k-th with ClientOptions::connection = connection(k), and returns
// how many TCP connections they hold to a server of their own.
template <typename Connection>
int ConnectionsOf(int count, Connection connection) {
  const std::unique_ptr<MatrixServer> server = StartTestServer(MakeCpuBackend({.threads = 1}));
  std::vector<std::unique_ptr<Client>> clients;
  for (int k = 0; k < count; ++k) {
    clients.push_back(std::make_unique<Client>(
        server->address(),
        ClientOptions{.deadline = absl::Seconds(20), .connection = connection(k)}));
    const absl::StatusOr<bool> healthy = clients.back()->Healthy();
    EXPECT_TRUE(healthy.ok() && *healthy) << healthy.status();
  }
  return EstablishedConnectionsTo(PortOf(server->address()));
}

TEST(ClientConnections, DistinctConnectionValuesGetConnectionsOfTheirOwn) {
  if (!std::ifstream("/proc/net/tcp").good()) GTEST_SKIP() << "no /proc/net/tcp";
  EXPECT_EQ(ConnectionsOf(4, [](int k) { return k + 1; }), 4);
}

TEST(ClientConnections, ClientsWithTheSameOptionsShareOneConnection) {
  if (!std::ifstream("/proc/net/tcp").good()) GTEST_SKIP() << "no /proc/net/tcp";
  EXPECT_EQ(ConnectionsOf(4, [](int) { return 0; }), 1);
  EXPECT_EQ(ConnectionsOf(4, [](int) { return 7; }), 1);
}

}  // namespace
}  // namespace matrixd::server::testing
