// Who a call comes from, and what that client may use. With --auth_tokens the server reads a token
// file, one client per line:
//
//     # comment
//     name token [key=value ...]      keys: the fields of ClientQuota, e.g. max_jobs=4
//                                     max_resident_bytes=1GiB max_permanent_n=30
//
// and a call names its client with the header "authorization: Bearer TOKEN". Tokens are kept and
// compared only as SHA-256 digests, in constant time. Reload() (SIGHUP) reads the file again.
// Without a token file every call is the one anonymous client (name ""), with the default quota.
// Thread-safe.
#ifndef MATRIXD_SERVER_CLIENT_AUTH_H_
#define MATRIXD_SERVER_CLIENT_AUTH_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/validation.h"

namespace matrixd::server {

// What one client may use; 0 = no limit of its own (the server-wide limits still apply).
struct ClientQuota {
  int max_jobs = 0;                 // jobs queued and running at once (calls and Submit jobs)
  uint64_t max_resident_bytes = 0;  // resident matrices together
  int64_t max_matrix_elements = 0;  // per input matrix and per resident matrix it makes
  int max_permanent_n = 0;          // largest permanent
  int max_shm_regions = 0;          // registered shared-memory regions
};

// Parses "key=value" words into `quota` (sizes as "1GiB", "512M" or plain bytes). INVALID_ARGUMENT
// naming the word for an unknown key or a bad value.
absl::Status ParseQuotaWords(const std::vector<absl::string_view>& words, ClientQuota& quota);

// Each limit of `quota` that is 0 taken from `defaults`.
ClientQuota WithDefaults(ClientQuota quota, const ClientQuota& defaults);

// The client a call comes from.
struct ClientIdentity {
  std::string name;  // "" for the anonymous client (no --auth_tokens)
  ClientQuota quota;
  Limits limits;  // the server's limits tightened by quota (what its requests are validated with)
};

// The client as messages name it: "client \"alice\"", or "the anonymous client".
std::string ClientLabel(const ClientIdentity& client);

namespace client_auth_internal {
inline const absl::Status& StatusOf(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& result) {
  return result.status();
}
// Whether `refused` may be over `client`'s quota: INVALID_ARGUMENT while some limit of the
// client's is tighter than the server's.
bool MayBeOverQuota(const Limits& server_limits, const ClientIdentity& client,
                    const absl::Status& refused);
// RESOURCE_EXHAUSTED "quota NAME of CLIENT (max_matrix_elements=.., max_permanent_n=..): MESSAGE"
// for `refused`, NAME the tighter limit(s).
absl::Status OverQuotaError(const Limits& server_limits, const ClientIdentity& client,
                            const absl::Status& refused);
}  // namespace client_auth_internal

// `check(limits)` (returning absl::Status or absl::StatusOr<T>) under the client's limits. A
// request refused (INVALID_ARGUMENT) only because the client's limits are tighter than the
// server's, i.e. one that `check(server_limits)` accepts, is over its quota: RESOURCE_EXHAUSTED
// "quota max_matrix_elements ..." or "quota max_permanent_n ...". `check` may run twice, so it must
// not change anything when it fails.
template <typename Check>
auto CheckWithinQuota(const Limits& server_limits, const ClientIdentity& client, Check&& check)
    -> decltype(check(client.limits)) {
  auto result = check(client.limits);
  if (result.ok()) return result;
  const absl::Status& refused = client_auth_internal::StatusOf(result);
  if (!client_auth_internal::MayBeOverQuota(server_limits, client, refused) ||
      !client_auth_internal::StatusOf(check(server_limits)).ok()) {
    return result;
  }
  return client_auth_internal::OverQuotaError(server_limits, client, refused);
}

using Sha256Digest = std::array<unsigned char, 32>;

// One line of a token file.
struct TokenEntry {
  std::string name;
  Sha256Digest token_digest{};
  ClientQuota quota;  // as written, before defaults
};

// The entries of a token file's text. INVALID_ARGUMENT naming the line for a line with fewer than
// two words, a bad quota word, or a repeated name or token.
absl::StatusOr<std::vector<TokenEntry>> ParseTokenFile(absl::string_view text);

class ClientAuthenticator {
 public:
  // Every call is the anonymous client, with `defaults` as its quota.
  ClientAuthenticator(const Limits& server_limits, const ClientQuota& defaults);
  // Tokens from the file at `path` (ParseTokenFile); each client's unset limits from `defaults`.
  // NOT_FOUND/PERMISSION_DENIED when it cannot be read, INVALID_ARGUMENT as ParseTokenFile; the
  // messages name the file.
  static absl::StatusOr<std::unique_ptr<ClientAuthenticator>> FromFile(const std::string& path,
                                                                       const Limits& server_limits,
                                                                       const ClientQuota& defaults);

  // Reads the token file again and uses it from the next call on; on an error the previous table
  // stays in use and the error is returned. Returns the number of clients. A no-op without a file.
  absl::StatusOr<int> Reload();

  // Whether calls must carry a token.
  bool requires_token() const { return !path_.empty(); }

  // The client of a call whose "authorization" header is `authorization` (empty: none). With a
  // token file: UNAUTHENTICATED for a missing or malformed header or an unknown token.
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> Authenticate(
      absl::string_view authorization) const;

 private:
  ClientAuthenticator(std::string path, const Limits& server_limits, const ClientQuota& defaults);
  struct Client {
    Sha256Digest token_digest;
    std::shared_ptr<const ClientIdentity> identity;
  };
  absl::StatusOr<std::vector<Client>> ReadClients() const;
  std::shared_ptr<const ClientIdentity> MakeIdentity(std::string name,
                                                     const ClientQuota& quota) const;

  const std::string path_;
  const Limits server_limits_;
  const ClientQuota defaults_;
  const std::shared_ptr<const ClientIdentity> anonymous_;
  mutable absl::Mutex mutex_;
  std::shared_ptr<const std::vector<Client>> clients_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_CLIENT_AUTH_H_
