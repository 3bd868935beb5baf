// Test support for the metrics tests: reading samples out of Prometheus's text format and a
// minimal blocking HTTP GET on loopback (the test binary does not link an HTTP client).
#ifndef MATRIXD_TESTS_SERVER_METRICS_TEST_SUPPORT_H_
#define MATRIXD_TESTS_SERVER_METRICS_TEST_SUPPORT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace matrixd::server::testing {

using LabelSet = std::map<std::string, std::string>;

// Parses `{a="x",b="y"}` (escapes \" \\ \n as the text format writes them). nullopt if malformed.
inline std::optional<LabelSet> ParseLabels(absl::string_view text) {
  LabelSet labels;
  if (text.empty()) return labels;
  if (text.front() != '{' || text.back() != '}') return std::nullopt;
  size_t i = 1;
  while (i < text.size() - 1) {
    const size_t eq = text.find('=', i);
    if (eq == absl::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') {
      return std::nullopt;
    }
    std::string name(text.substr(i, eq - i));
    std::string value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value.push_back(text[j] == 'n' ? '\n' : text[j]);
      } else {
        value.push_back(text[j]);
      }
    }
    if (j >= text.size()) return std::nullopt;
    labels[name] = value;
    i = j + 1;
    if (i < text.size() && text[i] == ',') ++i;
  }
  return labels;
}

// The value of the sample `name` whose labels are exactly `labels`, from the text exposition
// format; nullopt when there is no such sample.
inline std::optional<double> SampleValue(const std::string& exposition, absl::string_view name,
                                         const LabelSet& labels) {
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const size_t name_end = std::min(brace, line.find(' '));
    if (absl::string_view(line).substr(0, name_end) != name) continue;
    const size_t labels_end = brace == std::string::npos ? name_end : line.rfind('}') + 1;
    std::optional<LabelSet> parsed =
        ParseLabels(absl::string_view(line).substr(name_end, labels_end - name_end));
    if (!parsed.has_value() || *parsed != labels) continue;
    double value = 0.0;
    const std::string number = line.substr(labels_end + 1);
    if (number == "+Inf") return HUGE_VAL;
    if (absl::SimpleAtod(number, &value)) return value;
  }
  return std::nullopt;
}

// The "# TYPE name kind" of every family in the exposition.
inline std::map<std::string, std::string> FamilyTypes(const std::string& exposition) {
  std::map<std::string, std::string> types;
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string hash, keyword, name, kind;
    if (words >> hash >> keyword >> name >> kind && hash == "#" && keyword == "TYPE") {
      types[name] = kind;
    }
  }
  return types;
}

struct HttpResponse {
  int status = 0;
  std::string headers;  // the header lines, lower-cased names not guaranteed
  std::string body;
};

// GET http://127.0.0.1:port/target with HTTP/1.0 (the server closes the connection after the
// response). UNAVAILABLE when it cannot connect; DEADLINE_EXCEEDED after `timeout_seconds`.
inline absl::StatusOr<HttpResponse> HttpGet(int port, absl::string_view target,
                                            int timeout_seconds = 5) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  timeval timeout{timeout_seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot connect to 127.0.0.1:", port));
  }
  const std::string request =
      absl::StrCat("GET ", target, " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return absl::UnavailableError("send() failed");
  }
  std::string raw;
  char buffer[8192];
  while (true) {
    const ssize_t got = recv(fd, buffer, sizeof(buffer), 0);
    if (got == 0) break;
    if (got < 0) return absl::DeadlineExceededError("no complete HTTP response in time");
    raw.append(buffer, static_cast<size_t>(got));
  }
  const size_t header_end = raw.find("\r\n\r\n");
  if (raw.compare(0, 9, "HTTP/1.1 ") != 0 && raw.compare(0, 9, "HTTP/1.0 ") != 0) {
    return absl::InternalError(absl::StrCat("not an HTTP response: ", raw.substr(0, 40)));
  }
  if (header_end == std::string::npos) return absl::InternalError("no end of headers");
  HttpResponse response;
  response.status = std::atoi(raw.c_str() + 9);
  response.headers = raw.substr(0, header_end);
  response.body = raw.substr(header_end + 4);
  return response;
}

}  // namespace matrixd::server::testing

#endif  // MATRIXD_TESTS_SERVER_METRICS_TEST_SUPPORT_H_
