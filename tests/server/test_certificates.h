// Throwaway certificates for TLS tests, made with the openssl command (Debian's `openssl`
// package) in a fresh temporary directory: a CA, a server certificate for localhost and
// 127.0.0.1 signed by it, a client certificate signed by it, and a second CA with a client
// certificate of its own (the "wrong" CA), and a client certificate of the first CA that
// expired yesterday. EC P-256 keys: quick to make.
#ifndef MATRIXD_TESTS_SERVER_TEST_CERTIFICATES_H_
#define MATRIXD_TESTS_SERVER_TEST_CERTIFICATES_H_

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace matrixd::server::testing {

struct TestCertificates {
  std::string dir;
  std::string Path(const std::string& name) const { return absl::StrCat(dir, "/", name); }
  std::string Read(const std::string& name) const {
    std::ifstream file(Path(name));
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }
};

// Makes ca.pem, server.pem/.key, client.pem/.key, other-ca.pem, other-client.pem/.key and
// expired-client.pem/.key under a new directory in `temp_dir`; nullopt when openssl is missing or
// fails.
inline std::optional<TestCertificates> MakeTestCertificates(const std::string& temp_dir) {
  std::string dir = absl::StrCat(temp_dir, "/matrixd-certs-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) return std::nullopt;
  // leaf NAME CA SUBJECT [EXTFILE]: a key and a certificate signed by CA, valid for $DAYS days
  // (default 2; -1 makes one that expired yesterday).
  constexpr char kScript[] = R"(set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
ca() { key $1.key; openssl req -x509 -new -key $1.key -out $1.pem -days 2 -subj /CN=$1; }
leaf() {
  key $1.key; openssl req -new -key $1.key -out $1.csr -subj "$3"
  openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -out $1.pem \
      -days ${DAYS:-2} ${4:+-extfile $4}
}
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > server.ext
ca ca; ca other-ca
leaf server ca /CN=localhost server.ext
leaf client ca /CN=alice
leaf other-client other-ca /CN=mallory
DAYS=-1 leaf expired-client ca /CN=old
)";
  const std::string script = absl::StrCat("cd '", dir, "'\n", kScript);
  const std::string script_path = absl::StrCat(dir, "/make.sh");
  std::ofstream(script_path) << script;
  if (std::system(absl::StrCat("bash '", script_path, "' >/dev/null 2>&1").c_str()) != 0) {
    return std::nullopt;
  }
  return TestCertificates{dir};
}

}  // namespace matrixd::server::testing

#endif  // MATRIXD_TESTS_SERVER_TEST_CERTIFICATES_H_
