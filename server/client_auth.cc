#include "server/client_auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/memory_limit.h"

namespace matrixd::server {
namespace {

Sha256Digest DigestOf(absl::string_view text) {
  Sha256Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

absl::Status BadQuotaWord(absl::string_view word, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("\"", word, "\": ", why));
}

template <typename Int>
absl::Status ParsePositive(absl::string_view word, absl::string_view value, Int& out) {
  if (!absl::SimpleAtoi(value, &out) || out < 1) {
    return BadQuotaWord(word, "want a whole number >= 1");
  }
  return absl::OkStatus();
}

template <typename Int>
Int Tighter(Int server, Int client) {
  return client > 0 && client < server ? client : server;
}

}  // namespace

absl::Status ParseQuotaWords(const std::vector<absl::string_view>& words, ClientQuota& quota) {
  for (absl::string_view word : words) {
    const size_t equals = word.find('=');
    if (equals == absl::string_view::npos) return BadQuotaWord(word, "want key=value");
    const absl::string_view key = word.substr(0, equals);
    const absl::string_view value = word.substr(equals + 1);
    absl::Status parsed;
    if (key == "max_jobs") {
      parsed = ParsePositive(word, value, quota.max_jobs);
    } else if (key == "max_matrix_elements") {
      parsed = ParsePositive(word, value, quota.max_matrix_elements);
    } else if (key == "max_permanent_n") {
      parsed = ParsePositive(word, value, quota.max_permanent_n);
    } else if (key == "max_shm_regions") {
      parsed = ParsePositive(word, value, quota.max_shm_regions);
    } else if (key == "max_resident_bytes") {
      absl::StatusOr<DeviceMemoryLimit> size = ParseDeviceMemoryLimit(value);
      if (!size.ok() || size->bytes == 0) {
        return BadQuotaWord(word, "want a size such as 1GiB, 512M or 1048576");
      }
      quota.max_resident_bytes = size->bytes;
    } else {
      return BadQuotaWord(word,
                          "unknown quota (want max_jobs, max_resident_bytes, max_matrix_elements, "
                          "max_permanent_n or max_shm_regions)");
    }
    if (!parsed.ok()) return parsed;
  }
  return absl::OkStatus();
}

ClientQuota WithDefaults(ClientQuota quota, const ClientQuota& defaults) {
  if (quota.max_jobs == 0) quota.max_jobs = defaults.max_jobs;
  if (quota.max_resident_bytes == 0) quota.max_resident_bytes = defaults.max_resident_bytes;
  if (quota.max_matrix_elements == 0) quota.max_matrix_elements = defaults.max_matrix_elements;
  if (quota.max_permanent_n == 0) quota.max_permanent_n = defaults.max_permanent_n;
  if (quota.max_shm_regions == 0) quota.max_shm_regions = defaults.max_shm_regions;
  return quota;
}

std::string ClientLabel(const ClientIdentity& client) {
  return client.name.empty() ? "the anonymous client"
                             : absl::StrCat("client \"", client.name, "\"");
}

namespace client_auth_internal {

bool MayBeOverQuota(const Limits& server_limits, const ClientIdentity& client,
                    const absl::Status& refused) {
  return refused.code() == absl::StatusCode::kInvalidArgument &&
         (client.limits.max_elements < server_limits.max_elements ||
          client.limits.max_permanent_n < server_limits.max_permanent_n);
}

absl::Status OverQuotaError(const Limits& server_limits, const ClientIdentity& client,
                            const absl::Status& refused) {
  const bool tighter_elements = client.limits.max_elements < server_limits.max_elements;
  const bool tighter_permanent = client.limits.max_permanent_n < server_limits.max_permanent_n;
  return absl::ResourceExhaustedError(absl::StrCat(
      "quota ",
      tighter_elements && tighter_permanent ? "max_matrix_elements or max_permanent_n"
      : tighter_elements                    ? "max_matrix_elements"
                                            : "max_permanent_n",
      " of ", ClientLabel(client), " (max_matrix_elements=", client.limits.max_elements,
      ", max_permanent_n=", client.limits.max_permanent_n, "): ", refused.message()));
}

}  // namespace client_auth_internal

absl::StatusOr<std::vector<TokenEntry>> ParseTokenFile(absl::string_view text) {
  std::vector<TokenEntry> entries;
  absl::flat_hash_set<std::string> names;
  absl::flat_hash_set<std::string> digests;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty()) continue;
    const auto error = [line_number](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": ", why));
    };
    if (words.size() < 2) return error("want \"name token [key=value ...]\"");
    TokenEntry entry;
    entry.name = std::string(words[0]);
    entry.token_digest = DigestOf(words[1]);
    if (absl::Status quota = ParseQuotaWords({words.begin() + 2, words.end()}, entry.quota);
        !quota.ok()) {
      return error(quota.message());
    }
    if (!names.insert(entry.name).second) {
      return error(absl::StrCat("client \"", entry.name, "\" is named twice"));
    }
    if (!digests.insert(std::string(entry.token_digest.begin(), entry.token_digest.end())).second) {
      return error(absl::StrCat("client \"", entry.name, "\" has another client's token"));
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

ClientAuthenticator::ClientAuthenticator(const Limits& server_limits, const ClientQuota& defaults)
    : ClientAuthenticator("", server_limits, defaults) {}

ClientAuthenticator::ClientAuthenticator(std::string path, const Limits& server_limits,
                                         const ClientQuota& defaults)
    : path_(std::move(path)),
      server_limits_(server_limits),
      defaults_(defaults),
      anonymous_(MakeIdentity("", defaults)),
      clients_(std::make_shared<const std::vector<Client>>()) {}

absl::StatusOr<std::unique_ptr<ClientAuthenticator>> ClientAuthenticator::FromFile(
    const std::string& path, const Limits& server_limits, const ClientQuota& defaults) {
  if (path.empty()) return absl::InvalidArgumentError("--auth_tokens: empty file name");
  std::unique_ptr<ClientAuthenticator> authenticator(
      new ClientAuthenticator(path, server_limits, defaults));
  absl::StatusOr<int> loaded = authenticator->Reload();
  if (!loaded.ok()) return loaded.status();
  return authenticator;
}

std::shared_ptr<const ClientIdentity> ClientAuthenticator::MakeIdentity(
    std::string name, const ClientQuota& quota) const {
  auto identity = std::make_shared<ClientIdentity>();
  identity->name = std::move(name);
  identity->quota = WithDefaults(quota, defaults_);
  identity->limits.max_elements =
      Tighter(server_limits_.max_elements, identity->quota.max_matrix_elements);
  identity->limits.max_permanent_n =
      Tighter(server_limits_.max_permanent_n, identity->quota.max_permanent_n);
  return identity;
}

absl::StatusOr<std::vector<ClientAuthenticator::Client>> ClientAuthenticator::ReadClients() const {
  std::ifstream file(path_);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("--auth_tokens: cannot read \"", path_, "\""));
  }
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<std::vector<TokenEntry>> entries = ParseTokenFile(text.str());
  if (!entries.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_tokens \"", path_, "\" ", entries.status().message()));
  }
  std::vector<Client> clients;
  for (TokenEntry& entry : *entries) {
    clients.push_back({entry.token_digest, MakeIdentity(std::move(entry.name), entry.quota)});
  }
  return clients;
}

absl::StatusOr<int> ClientAuthenticator::Reload() {
  if (path_.empty()) return 0;
  absl::StatusOr<std::vector<Client>> clients = ReadClients();
  if (!clients.ok()) return clients.status();
  const int count = static_cast<int>(clients->size());
  auto table = std::make_shared<const std::vector<Client>>(*std::move(clients));
  absl::MutexLock lock(&mutex_);
  clients_ = std::move(table);
  return count;
}

absl::StatusOr<std::shared_ptr<const ClientIdentity>> ClientAuthenticator::Authenticate(
    absl::string_view authorization) const {
  if (path_.empty()) return anonymous_;
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "this server requires a token: send the header \"authorization: Bearer TOKEN\" "
        "(matrixctl --token or --token_file, or MATRIXD_TOKEN)");
  }
  absl::string_view token = absl::StripAsciiWhitespace(authorization);
  if (!absl::ConsumePrefix(&token, "Bearer ") && !absl::ConsumePrefix(&token, "bearer ")) {
    return absl::UnauthenticatedError("the authorization header is not \"Bearer TOKEN\"");
  }
  token = absl::StripLeadingAsciiWhitespace(token);
  // Digests have one length whatever the token's, and every entry is compared, so neither the
  // time taken nor an early exit tells how much of a guess was right.
  const Sha256Digest digest = DigestOf(token);
  std::shared_ptr<const std::vector<Client>> clients;
  {
    absl::MutexLock lock(&mutex_);
    clients = clients_;
  }
  std::shared_ptr<const ClientIdentity> found;
  for (const Client& client : *clients) {
    if (CRYPTO_memcmp(client.token_digest.data(), digest.data(), digest.size()) == 0) {
      found = client.identity;
    }
  }
  if (found == nullptr) {
    return absl::UnauthenticatedError(
        "unknown token (revoked, or not in the server's --auth_tokens)");
  }
  return found;
}

}  // namespace matrixd::server
