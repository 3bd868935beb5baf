// matrixd_transfer_bench: the resident-matrix targets measured through a real server over gRPC,
// as a remote user sees them: streamed uploads, operations on resident operands against their
// inline form, results kept resident, and the inline path's cost for large requests and
// responses. Prints one markdown table per measurement; every row from this run.
//
//   matrixd_transfer_bench --server=127.0.0.1:50051 [--tables=upload,det,gemm,repeat,inline,huge]
//       [--upload_gib=4] [--det_n=8192] [--gemm_n=8192] [--repeat_n=4096] [--repeat=100]
//       [--inline_n=4096] [--huge_n=32768] [--solve_n=4096] [--solves=1000]
//       [--refactor_calls=1000]   (--tables=solve: kept LU + Solve vs LU+solve per call)
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/crc32c.h"
#include "matrixd/v1/matrixd.grpc.pb.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "matrixd to measure");
ABSL_FLAG(std::string, tables, "upload,det,gemm,repeat,inline,huge", "tables to run");
ABSL_FLAG(double, upload_gib, 4.0, "upload table: GiB of float64 to stream");
ABSL_FLAG(int64_t, det_n, 8192, "det table: n");
ABSL_FLAG(int64_t, gemm_n, 8192, "gemm table: n");
ABSL_FLAG(int64_t, repeat_n, 4096, "repeat table: n");
ABSL_FLAG(int, repeat, 100, "repeat table: determinants per path");
ABSL_FLAG(int64_t, inline_n, 4096, "inline table: n of the 128 MiB float64 matrix");
ABSL_FLAG(int64_t, huge_n, 32768, "huge table: n of the float64 determinant uploaded by stream");
ABSL_FLAG(int64_t, solve_n, 4096, "solve table: n of the float64 LU");
ABSL_FLAG(int, solves, 1000, "solve table: solves with one right-hand side each");
ABSL_FLAG(int, refactor_calls, 1000,
          "solve table: LU+solve calls of each baseline (the speed-up compares per-call times)");
ABSL_FLAG(int64_t, chunk_bytes, int64_t{4} << 20, "upload chunk size");
ABSL_FLAG(std::vector<std::string>, upload_streams, (std::vector<std::string>{"1", "2", "4"}),
          "upload table: parts sent at once (CreateMatrix + one Upload per part and connection)");

namespace matrixd {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Deterministic uniform values in [-1, 1) (splitmix64), fast enough for gigabytes.
std::string RandomFloat64Bytes(int64_t rows, int64_t cols, uint64_t seed) {
  std::string bytes(static_cast<size_t>(rows * cols) * sizeof(double), '\0');
  auto* values = reinterpret_cast<double*>(bytes.data());
  uint64_t state = seed;
  for (int64_t i = 0; i < rows * cols; ++i) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    values[i] = static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
  return bytes;
}

v1::Matrix InlineMatrix(int64_t rows, int64_t cols, std::string bytes) {
  v1::Matrix m;
  m.set_rows(rows);
  m.set_cols(cols);
  m.set_dtype(v1::DTYPE_FLOAT64);
  m.set_data(std::move(bytes));
  return m;
}

std::unique_ptr<grpc::ClientContext> Context(double seconds = 3600) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(seconds * 1e3)));
  return context;
}

absl::Status Check(const grpc::Status& status, const std::string& what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

class Bench {
 public:
  explicit Bench(const std::string& server) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    // Distinct channel arguments: a connection of its own for each Bench.
    args.SetInt("matrixd.bench.channel", next_channel_++);
    stub_ = v1::MatrixService::NewStub(
        grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
  }

  // Streams `bytes` in chunks; returns the handle.
  absl::StatusOr<std::string> Upload(int64_t rows, int64_t cols, const std::string& bytes) {
    absl::StatusOr<v1::ResidentMatrix> uploaded =
        UploadPart(rows, cols, "", bytes, 0, bytes.size());
    if (!uploaded.ok()) return uploaded.status();
    return uploaded->handle();
  }

  absl::StatusOr<v1::ResidentMatrix> CreateMatrix(int64_t rows, int64_t cols) {
    v1::CreateMatrixRequest request;
    request.set_rows(rows);
    request.set_cols(cols);
    request.set_dtype(v1::DTYPE_FLOAT64);
    v1::ResidentMatrix response;
    if (absl::Status s =
            Check(stub_->CreateMatrix(Context().get(), request, &response), "CreateMatrix");
        !s.ok()) {
      return s;
    }
    return response;
  }

  // Streams bytes [begin, end) of `bytes`: the whole matrix (empty handle), or one part of the
  // matrix `handle` made by CreateMatrix.
  absl::StatusOr<v1::ResidentMatrix> UploadPart(int64_t rows, int64_t cols,
                                                const std::string& handle, const std::string& bytes,
                                                uint64_t begin, uint64_t end) {
    const auto context = Context();
    v1::ResidentMatrix response;
    auto writer = stub_->Upload(context.get(), &response);
    const uint64_t chunk = static_cast<uint64_t>(absl::GetFlag(FLAGS_chunk_bytes));
    uint32_t crc = 0;
    v1::UploadChunk message;
    for (uint64_t at = begin; at < end; at += chunk) {
      message.Clear();
      if (at == begin && handle.empty()) {
        message.set_rows(rows);
        message.set_cols(cols);
        message.set_dtype(v1::DTYPE_FLOAT64);
      } else if (at == begin) {
        message.set_handle(handle);
      }
      const size_t size = std::min<uint64_t>(chunk, end - at);
      message.set_offset(at);
      message.set_data(bytes.data() + at, size);
      crc = Crc32c(crc, std::span<const std::byte>(
                            reinterpret_cast<const std::byte*>(bytes.data() + at), size));
      if (!writer->Write(message)) break;
    }
    message.Clear();
    message.set_offset(end);
    message.mutable_checksum()->set_crc32c(crc);
    writer->Write(message);
    writer->WritesDone();
    if (absl::Status s = Check(writer->Finish(), "Upload"); !s.ok()) return s;
    return response;
  }

  absl::Status Release(const std::string& handle) {
    v1::ReleaseRequest request;
    request.set_handle(handle);
    v1::ReleaseResponse response;
    return Check(stub_->Release(Context().get(), request, &response), "Release");
  }

  absl::StatusOr<v1::DeterminantResponse> Det(const v1::DeterminantRequest& request) {
    v1::DeterminantResponse response;
    if (absl::Status s = Check(stub_->Determinant(Context().get(), request, &response), "Det");
        !s.ok()) {
      return s;
    }
    return response;
  }

  absl::StatusOr<v1::FactorizeResponse> Factorize(const v1::FactorizeRequest& request) {
    v1::FactorizeResponse response;
    if (absl::Status s = Check(stub_->Factorize(Context().get(), request, &response), "Factorize");
        !s.ok()) {
      return s;
    }
    return response;
  }

  absl::StatusOr<v1::SolveResponse> Solve(const v1::SolveRequest& request) {
    v1::SolveResponse response;
    if (absl::Status s = Check(stub_->Solve(Context().get(), request, &response), "Solve");
        !s.ok()) {
      return s;
    }
    return response;
  }

  absl::StatusOr<v1::MultiplyResponse> Multiply(const v1::MultiplyRequest& request) {
    v1::MultiplyResponse response;
    if (absl::Status s = Check(stub_->Multiply(Context().get(), request, &response), "Multiply");
        !s.ok()) {
      return s;
    }
    return response;
  }

 private:
  static inline int next_channel_ = 0;
  std::unique_ptr<v1::MatrixService::Stub> stub_;
};

v1::DeterminantRequest DetByHandle(const std::string& handle) {
  v1::DeterminantRequest request;
  request.mutable_matrix_ref()->set_handle(handle);
  return request;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void Fail(const absl::Status& status) { std::cout << "| failed: " << status << " |\n"; }

// One stream, or CreateMatrix and `streams` parts at once, each on a connection of its own.
absl::StatusOr<std::string> ParallelUpload(Bench& bench, int64_t rows, int64_t cols,
                                           const std::string& bytes, int streams) {
  if (streams == 1) return bench.Upload(rows, cols, bytes);
  absl::StatusOr<v1::ResidentMatrix> made = bench.CreateMatrix(rows, cols);
  if (!made.ok()) return made.status();
  // Parts split at row boundaries.
  const uint64_t row_bytes = static_cast<uint64_t>(cols) * sizeof(double);
  std::vector<absl::StatusOr<v1::ResidentMatrix>> parts(streams, v1::ResidentMatrix());
  std::vector<std::thread> threads;
  for (int i = 0; i < streams; ++i) {
    const uint64_t begin = static_cast<uint64_t>(rows * i / streams) * row_bytes;
    const uint64_t end = static_cast<uint64_t>(rows * (i + 1) / streams) * row_bytes;
    threads.emplace_back([&, i, begin, end] {
      Bench connection(absl::GetFlag(FLAGS_server));
      parts[i] = connection.UploadPart(rows, cols, made->handle(), bytes, begin, end);
    });
  }
  for (std::thread& thread : threads) thread.join();
  uint64_t missing = made->bytes();
  for (const auto& part : parts) {
    if (!part.ok()) return part.status();
    missing = std::min(missing, part->missing_bytes());
  }
  if (missing != 0) return absl::InternalError(absl::StrCat(missing, " bytes still missing"));
  return made->handle();
}

void UploadTable(Bench& bench) {
  const double gib = absl::GetFlag(FLAGS_upload_gib);
  const int64_t cols = 16384;
  const int64_t rows = static_cast<int64_t>(gib * double(int64_t{1} << 30) / (8.0 * cols));
  const std::string bytes = RandomFloat64Bytes(rows, cols, 1);
  std::cout << "\n### Streamed upload, float64 " << rows << "x" << cols << " ("
            << bytes.size() / double(1 << 30) << " GiB), chunks of "
            << absl::GetFlag(FLAGS_chunk_bytes) / (1 << 20)
            << " MiB, in 1 stream or in parts on several connections at once\n\n"
            << "| streams | run | seconds | GB/s |\n| --- | --- | --- | --- |\n";
  for (const std::string& streams_flag : absl::GetFlag(FLAGS_upload_streams)) {
    int streams = 1;
    if (!absl::SimpleAtoi(streams_flag, &streams) || streams < 1) continue;
    for (int run = 0; run < 2; ++run) {
      const Clock::time_point start = Clock::now();
      absl::StatusOr<std::string> handle = ParallelUpload(bench, rows, cols, bytes, streams);
      const double seconds = SecondsSince(start);
      if (!handle.ok()) return Fail(handle.status());
      std::printf("| %d | %d | %.3f | %.2f |\n", streams, run + 1, seconds,
                  bytes.size() / seconds / 1e9);
      static_cast<void>(bench.Release(*handle));
    }
  }
}

void DetTable(Bench& bench) {
  const int64_t n = absl::GetFlag(FLAGS_det_n);
  const std::string bytes = RandomFloat64Bytes(n, n, 2);
  absl::StatusOr<std::string> handle = bench.Upload(n, n, bytes);
  if (!handle.ok()) return Fail(handle.status());
  v1::DeterminantRequest inline_request;
  *inline_request.mutable_matrix() = InlineMatrix(n, n, bytes);
  std::vector<double> resident, resident_server, inline_round, inline_server;
  double log_resident = 0, log_inline = 0;
  for (int run = 0; run < 5; ++run) {
    Clock::time_point start = Clock::now();
    absl::StatusOr<v1::DeterminantResponse> r = bench.Det(DetByHandle(*handle));
    resident.push_back(SecondsSince(start));
    if (!r.ok()) return Fail(r.status());
    resident_server.push_back(r->stats().seconds());
    log_resident = r->log_abs();
    start = Clock::now();
    r = bench.Det(inline_request);
    inline_round.push_back(SecondsSince(start));
    if (!r.ok()) return Fail(r.status());
    inline_server.push_back(r->stats().seconds());
    log_inline = r->log_abs();
  }
  std::printf(
      "\n### det float64 n = %lld, medians of 5\n\n| operand | round trip s | server compute s |\n"
      "| --- | --- | --- |\n| resident | %.4f | %.4f |\n| inline | %.4f | %.4f |\n\nlog|det| "
      "resident %.15g, inline %.15g (%s)\n",
      static_cast<long long>(n), Median(resident), Median(resident_server), Median(inline_round),
      Median(inline_server), log_resident, log_inline,
      log_resident == log_inline ? "identical" : "DIFFER");
  static_cast<void>(bench.Release(*handle));
}

void GemmTable(Bench& bench) {
  const int64_t n = absl::GetFlag(FLAGS_gemm_n);
  absl::StatusOr<std::string> a = bench.Upload(n, n, RandomFloat64Bytes(n, n, 3));
  absl::StatusOr<std::string> b = bench.Upload(n, n, RandomFloat64Bytes(n, n, 4));
  if (!a.ok()) return Fail(a.status());
  if (!b.ok()) return Fail(b.status());
  v1::MultiplyRequest request;
  request.mutable_a_ref()->set_handle(*a);
  request.mutable_b_ref()->set_handle(*b);
  request.mutable_result_options()->set_keep_result(true);
  std::vector<double> round, server;
  for (int run = 0; run < 5; ++run) {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<v1::MultiplyResponse> r = bench.Multiply(request);
    round.push_back(SecondsSince(start));
    if (!r.ok()) return Fail(r.status());
    server.push_back(r->stats().seconds());
    static_cast<void>(bench.Release(r->kept().at("c").handle()));
  }
  std::printf(
      "\n### GEMM float64 n = %lld, resident operands, result kept resident, medians of 5\n\n"
      "| round trip s | server compute s |\n| --- | --- |\n| %.4f | %.4f |\n",
      static_cast<long long>(n), Median(round), Median(server));
  static_cast<void>(bench.Release(*a));
  static_cast<void>(bench.Release(*b));
}

void RepeatTable(Bench& bench) {
  const int64_t n = absl::GetFlag(FLAGS_repeat_n);
  const int repeat = absl::GetFlag(FLAGS_repeat);
  const std::string bytes = RandomFloat64Bytes(n, n, 5);
  Clock::time_point start = Clock::now();
  absl::StatusOr<std::string> handle = bench.Upload(n, n, bytes);
  if (!handle.ok()) return Fail(handle.status());
  for (int i = 0; i < repeat; ++i) {
    if (absl::StatusOr<v1::DeterminantResponse> r = bench.Det(DetByHandle(*handle)); !r.ok()) {
      return Fail(r.status());
    }
  }
  const double resident = SecondsSince(start);
  v1::DeterminantRequest inline_request;
  *inline_request.mutable_matrix() = InlineMatrix(n, n, bytes);
  start = Clock::now();
  for (int i = 0; i < repeat; ++i) {
    if (absl::StatusOr<v1::DeterminantResponse> r = bench.Det(inline_request); !r.ok()) {
      return Fail(r.status());
    }
  }
  const double inline_seconds = SecondsSince(start);
  std::printf(
      "\n### %d determinants of one float64 %lldx%lld matrix\n\n| path | total s | speed-up |\n"
      "| --- | --- | --- |\n| one upload, then by handle | %.3f | %.1fx |\n| inline each time | "
      "%.3f | 1x |\n",
      repeat, static_cast<long long>(n), static_cast<long long>(n), resident,
      inline_seconds / resident, inline_seconds);
  static_cast<void>(bench.Release(*handle));
}

void InlineTable(Bench& bench) {
  const int64_t n = absl::GetFlag(FLAGS_inline_n);
  // Request of n*n doubles in, n doubles out: A times a column of ones.
  v1::MultiplyRequest in;
  *in.mutable_a() = InlineMatrix(n, n, RandomFloat64Bytes(n, n, 6));
  *in.mutable_b() = InlineMatrix(n, 1, RandomFloat64Bytes(n, 1, 7));
  // Request of 2n doubles in, n*n out: the outer product of a column and a row.
  v1::MultiplyRequest out;
  *out.mutable_a() = InlineMatrix(n, 1, RandomFloat64Bytes(n, 1, 8));
  *out.mutable_b() = InlineMatrix(1, n, RandomFloat64Bytes(1, n, 9));
  std::vector<double> in_cost, out_cost;
  for (int run = 0; run < 5; ++run) {
    Clock::time_point start = Clock::now();
    absl::StatusOr<v1::MultiplyResponse> r = bench.Multiply(in);
    if (!r.ok()) return Fail(r.status());
    in_cost.push_back(SecondsSince(start) - r->stats().seconds());
    start = Clock::now();
    r = bench.Multiply(out);
    if (!r.ok()) return Fail(r.status());
    out_cost.push_back(SecondsSince(start) - r->stats().seconds());
  }
  const double mib = n * n * 8.0 / (1 << 20);
  std::printf(
      "\n### Inline transfer of %.0f MiB (round trip minus server compute, medians of 5)\n\n"
      "| direction | seconds | ratio to request |\n| --- | --- | --- |\n| request (in) | %.3f | 1 "
      "|\n"
      "| response (out) | %.3f | %.2f |\n",
      mib, Median(in_cost), Median(out_cost), Median(out_cost) / Median(in_cost));
}

void HugeTable(Bench& bench) {
  const int64_t n = absl::GetFlag(FLAGS_huge_n);
  Clock::time_point start = Clock::now();
  const std::string bytes = RandomFloat64Bytes(n, n, 10);
  const double generate = SecondsSince(start);
  start = Clock::now();
  absl::StatusOr<std::string> handle = bench.Upload(n, n, bytes);
  const double upload = SecondsSince(start);
  if (!handle.ok()) return Fail(handle.status());
  start = Clock::now();
  absl::StatusOr<v1::DeterminantResponse> r = bench.Det(DetByHandle(*handle));
  const double det = SecondsSince(start);
  if (!r.ok()) return Fail(r.status());
  std::printf(
      "\n### det float64 n = %lld (%.1f GiB) uploaded by stream\n\n| phase | seconds |\n| --- | "
      "--- |\n| generate (client) | %.2f |\n| upload | %.2f (%.2f GB/s) |\n| det round trip | %.3f "
      "|\n| det server compute | %.3f |\n\nlog|det| = %.10g, sign %g\n",
      static_cast<long long>(n), bytes.size() / double(1 << 30), generate, upload,
      bytes.size() / upload / 1e9, det, r->stats().seconds(), r->log_abs(), r->sign());
  static_cast<void>(bench.Release(*handle));
}

// Factor once and solve many times, against refactoring for every right-hand side: 1 + solves calls
// (Factorize with keep_result, then Solve by handle, one column each) and refactor_calls
// LU+solve calls with A by handle (no transfer of A) and inline (as before kept factorizations).
void SolveTable(Bench& bench) {
  const int64_t n = absl::GetFlag(FLAGS_solve_n);
  const int solves = absl::GetFlag(FLAGS_solves);
  const int refactors = absl::GetFlag(FLAGS_refactor_calls);
  const std::string bytes = RandomFloat64Bytes(n, n, 11);
  std::vector<v1::Matrix> rhs;
  for (int i = 0; i < std::max(solves, refactors); ++i) {
    rhs.push_back(InlineMatrix(n, 1, RandomFloat64Bytes(n, 1, 100 + i)));
  }
  absl::StatusOr<std::string> a = bench.Upload(n, n, bytes);
  if (!a.ok()) return Fail(a.status());

  Clock::time_point start = Clock::now();
  v1::FactorizeRequest keep;
  keep.mutable_matrix_ref()->set_handle(*a);
  keep.set_kind(v1::FACTORIZATION_KIND_LU);
  keep.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::FactorizeResponse> kept = bench.Factorize(keep);
  if (!kept.ok()) return Fail(kept.status());
  const double factorize = SecondsSince(start);
  const std::string factorization = kept->kept().at("factorization").handle();
  v1::SolveRequest solve;
  solve.mutable_factorization()->set_handle(factorization);
  std::vector<double> first_x;
  for (int i = 0; i < solves; ++i) {
    *solve.mutable_rhs() = rhs[i];
    absl::StatusOr<v1::SolveResponse> r = bench.Solve(solve);
    if (!r.ok()) return Fail(r.status());
    if (i == 0) {
      const auto* x = reinterpret_cast<const double*>(r->solution().data().data());
      first_x.assign(x, x + n);
    }
  }
  const double kept_seconds = SecondsSince(start);

  double per_call[2] = {};
  double difference = 0.0;
  for (int by_handle = 1; by_handle >= 0; --by_handle) {
    v1::FactorizeRequest refactor;
    if (by_handle == 1) {
      refactor.mutable_matrix_ref()->set_handle(*a);
    } else {
      *refactor.mutable_matrix() = InlineMatrix(n, n, bytes);
    }
    refactor.set_kind(v1::FACTORIZATION_KIND_LU);
    start = Clock::now();
    for (int i = 0; i < refactors; ++i) {
      *refactor.mutable_rhs() = rhs[i];
      absl::StatusOr<v1::FactorizeResponse> r = bench.Factorize(refactor);
      if (!r.ok()) return Fail(r.status());
      if (i == 0 && by_handle == 1) {
        const auto* x = reinterpret_cast<const double*>(r->solution().data().data());
        for (int64_t j = 0; j < n; ++j)
          difference = std::max(difference, std::abs(x[j] - first_x[j]));
      }
    }
    per_call[by_handle] = SecondsSince(start) / refactors;
  }
  const double kept_per_call = kept_seconds / solves;
  std::printf(
      "\n### %d solves, one right-hand side each, with one float64 LU of n = %lld\n\n"
      "| path | calls | total s | per solve ms | per-solve time vs kept |\n| --- | --- | --- | --- "
      "| "
      "--- "
      "|\n| Factorize once (keep_result, %.3f s), then Solve by handle | 1 + %d | %.3f | %.3f | "
      "1x |\n| LU+solve per call, A by handle | %d | %.3f | %.3f | %.1fx |\n"
      "| LU+solve per call, A inline | %d | %.3f | %.3f | %.1fx |\n\nfirst solution: "
      "kept vs refactored max |difference| %.3g\n",
      solves, static_cast<long long>(n), factorize, solves, kept_seconds, 1e3 * kept_per_call,
      refactors, per_call[1] * refactors, 1e3 * per_call[1], per_call[1] / kept_per_call, refactors,
      per_call[0] * refactors, 1e3 * per_call[0], per_call[0] / kept_per_call, difference);
  static_cast<void>(bench.Release(factorization));
  static_cast<void>(bench.Release(*a));
}

}  // namespace
}  // namespace matrixd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  matrixd::Bench bench(absl::GetFlag(FLAGS_server));
  for (const absl::string_view table : absl::StrSplit(absl::GetFlag(FLAGS_tables), ',')) {
    if (table == "upload") matrixd::UploadTable(bench);
    if (table == "det") matrixd::DetTable(bench);
    if (table == "gemm") matrixd::GemmTable(bench);
    if (table == "repeat") matrixd::RepeatTable(bench);
    if (table == "inline") matrixd::InlineTable(bench);
    if (table == "huge") matrixd::HugeTable(bench);
    if (table == "solve") matrixd::SolveTable(bench);
    std::cout.flush();
  }
  return 0;
}
