#include "tests/bench/bench_flags.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "core/modular_arithmetic.h"

namespace matrixd::bench {

const std::vector<std::string_view> kTableNames = {
    "bandwidth", "dense",    "factorize",     "batched", "condensation", "sparse",
    "permanent", "accuracy", "modular",       "exact",   "small",        "verify",
    "condition", "refine",   "deterministic", "cpu"};

bool Flags::Runs(std::string_view name) const {
  return tables.empty() || std::find(tables.begin(), tables.end(), name) != tables.end();
}

namespace {

// Comma-separated items of `text`.
std::vector<std::string_view> Split(std::string_view text) {
  std::vector<std::string_view> items;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    items.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

template <typename T>
bool ParseNumber(std::string_view text, T& value) {
  const char* end = text.data() + text.size();
  const std::from_chars_result r = std::from_chars(text.data(), end, value);
  return r.ec == std::errc() && r.ptr == end;
}

template <typename T>
bool ParseList(std::string_view text, std::vector<T>& values) {
  std::vector<T> parsed;
  for (std::string_view item : Split(text)) {
    T value{};
    if (!ParseNumber(item, value)) return false;
    parsed.push_back(value);
  }
  if (parsed.empty()) return false;
  values = std::move(parsed);
  return true;
}

// strtod: std::from_chars for double needs GCC 11 and is not worth the check.
bool ParseDouble(std::string_view text, double& value) {
  const std::string copy(text);
  char* end = nullptr;
  value = std::strtod(copy.c_str(), &end);
  return !copy.empty() && end == copy.c_str() + copy.size();
}

void Quick(Flags& flags) {
  flags.det_sizes = {1024, 2048};
  flags.gemm_n = 2048;
  flags.factor_n = 1024;
  flags.batch = 20000;
  flags.step_n = 2048;
  flags.condensation_sizes = {512, 1024, 2048};
  flags.ntl_n = 512;
  flags.cpu_modular_n = 512;
  flags.exact_sizes = {100, 200};
  flags.sparse_n = 2048;
  flags.perm_n = 28;
  flags.accuracy_sizes = {16, 20};
  flags.accuracy_samples = 2;
  flags.cpu_n = 512;
  flags.cpu_batch = 2000;
  flags.small_count = 512;
  flags.verify_sizes = {1024, 2048};
  flags.condition_sizes = {512, 1024};
  flags.refine_sizes = {512, 1024};
  flags.repeats = 2;
}

bool CheckTables(const std::vector<std::string>& tables) {
  for (const std::string& name : tables) {
    if (std::find(kTableNames.begin(), kTableNames.end(), name) == kTableNames.end()) {
      std::string known;
      for (std::string_view t : kTableNames)
        known += std::string(known.empty() ? "" : ",") + std::string(t);
      std::fprintf(stderr, "unknown table \"%s\"; the tables are %s\n", name.c_str(),
                   known.c_str());
      return false;
    }
  }
  return true;
}

bool CheckPrimes(const std::vector<uint64_t>& primes) {
  for (const uint64_t p : primes) {
    if (p >= kModulusLimit || !IsPrime(p)) {
      std::fprintf(stderr, "--primes: %llu is not a prime below 2^62\n",
                   static_cast<unsigned long long>(p));
      return false;
    }
  }
  return true;
}

}  // namespace

bool ParseFlags(int argc, char** argv, Flags& flags) {
  // --quick first, wherever it stands, so that explicit sizes override it.
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--quick") Quick(flags);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const size_t equals = arg.find('=');
    const std::string_view name = arg.substr(0, equals);
    const std::string_view value =
        equals == std::string_view::npos ? std::string_view() : arg.substr(equals + 1);
    bool ok = true;
    if (name == "--quick") {
    } else if (name == "--tables") {
      flags.tables.clear();
      for (std::string_view t : Split(value)) flags.tables.emplace_back(t);
      ok = !flags.tables.empty() && CheckTables(flags.tables);
    } else if (name == "--det_sizes") {
      ok = ParseList(value, flags.det_sizes);
    } else if (name == "--verify_sizes") {
      ok = ParseList(value, flags.verify_sizes);
    } else if (name == "--condition_sizes") {
      ok = ParseList(value, flags.condition_sizes);
    } else if (name == "--refine_sizes") {
      ok = ParseList(value, flags.refine_sizes);
    } else if (name == "--gemm_n") {
      ok = ParseNumber(value, flags.gemm_n);
    } else if (name == "--factor_n") {
      ok = ParseNumber(value, flags.factor_n);
    } else if (name == "--batch") {
      ok = ParseNumber(value, flags.batch) && flags.batch >= 1;
    } else if (name == "--batch_sizes") {
      ok = ParseList(value, flags.batch_sizes);
    } else if (name == "--small_sizes") {
      ok = ParseList(value, flags.small_sizes);
    } else if (name == "--small_count") {
      ok = ParseNumber(value, flags.small_count) && flags.small_count >= 1;
    } else if (name == "--small_threads") {
      ok = ParseList(value, flags.small_threads);
    } else if (name == "--step_n") {
      ok = ParseNumber(value, flags.step_n) && flags.step_n >= 2;
    } else if (name == "--condensation_sizes") {
      ok = ParseList(value, flags.condensation_sizes);
    } else if (name == "--ntl_n") {
      ok = ParseNumber(value, flags.ntl_n) && flags.ntl_n >= 1;
    } else if (name == "--cpu_modular_n") {
      ok = ParseNumber(value, flags.cpu_modular_n);
    } else if (name == "--modp_look_ahead") {
      ok = ParseList(value, flags.modp_look_ahead) && !flags.modp_look_ahead.empty();
      for (const int v : flags.modp_look_ahead) ok = ok && (v == 0 || v == 1);
    } else if (name == "--staging_threads") {
      ok = ParseList(value, flags.staging_threads) && !flags.staging_threads.empty();
      for (const int v : flags.staging_threads) ok = ok && v >= 1 && v <= 32;
    } else if (name == "--modp_piece_rows") {
      ok = ParseList(value, flags.modp_piece_rows) && !flags.modp_piece_rows.empty();
      for (const int v : flags.modp_piece_rows) ok = ok && v >= 0;
    } else if (name == "--modp_overlap") {
      ok = ParseList(value, flags.modp_overlap) && !flags.modp_overlap.empty();
      for (const int v : flags.modp_overlap) ok = ok && (v == 0 || v == 1);
    } else if (name == "--primes") {
      ok = ParseList(value, flags.primes) && CheckPrimes(flags.primes);
    } else if (name == "--exact_sizes") {
      ok = ParseList(value, flags.exact_sizes);
    } else if (name == "--exact_bits") {
      ok = ParseNumber(value, flags.exact_bits) && flags.exact_bits >= 1 && flags.exact_bits <= 62;
    } else if (name == "--exact_products") {
      flags.exact_products.clear();
      for (std::string_view p : Split(value)) {
        ok = ok && (p == "fused" || p == "cublas");
        flags.exact_products.emplace_back(p);
      }
      ok = ok && !flags.exact_products.empty();
    } else if (name == "--no_flint") {
      flags.flint = false;
    } else if (name == "--no_ntl") {
      flags.ntl = false;
    } else if (name == "--sparse_n") {
      ok = ParseNumber(value, flags.sparse_n) && flags.sparse_n >= 1;
    } else if (name == "--sparse_blocks") {
      ok = ParseList(value, flags.sparse_blocks);
    } else if (name == "--sparse_density") {
      ok = ParseDouble(value, flags.sparse_density) && flags.sparse_density > 0 &&
           flags.sparse_density <= 1;
    } else if (name == "--perm_n") {
      ok = ParseNumber(value, flags.perm_n) && flags.perm_n >= 1;
    } else if (name == "--perm_density") {
      ok = ParseDouble(value, flags.perm_density) && flags.perm_density > 0 &&
           flags.perm_density <= 1;
    } else if (name == "--perm_head_rows") {
      ok = ParseList(value, flags.perm_head_rows) && !flags.perm_head_rows.empty();
      for (const int head_rows : flags.perm_head_rows) {
        ok = ok && (head_rows == -1 || head_rows == 0 || head_rows == 8 || head_rows == 12 ||
                    head_rows == 16 || head_rows == 20);
      }
    } else if (name == "--accuracy_sizes") {
      ok = ParseList(value, flags.accuracy_sizes);
    } else if (name == "--accuracy_samples") {
      ok = ParseNumber(value, flags.accuracy_samples) && flags.accuracy_samples >= 1;
    } else if (name == "--cpu_n") {
      ok = ParseNumber(value, flags.cpu_n);
    } else if (name == "--cpu_batch") {
      ok = ParseNumber(value, flags.cpu_batch) && flags.cpu_batch >= 1;
    } else if (name == "--repeats") {
      ok = ParseNumber(value, flags.repeats) && flags.repeats >= 1;
    } else if (name == "--no_gpu") {
      flags.gpu = false;
    } else if (name == "--no_cpu") {
      flags.cpu = false;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad value in %s\n", argv[i]);
      return false;
    }
  }
  return true;
}

}  // namespace matrixd::bench
