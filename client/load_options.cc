#include "client/load_options.h"

#include "absl/strings/str_cat.h"
#include "client/request_methods.h"

namespace matrixd {

namespace {

// Beyond a few thousand requests in flight (a thread each with --load_api=blocking) the client,
// not the server, is measured.
constexpr int kMaxConcurrency = 4096;

}  // namespace

absl::StatusOr<LoadOp> ParseLoadOp(absl::string_view name) {
  for (LoadOp op : {LoadOp::kDeterminant, LoadOp::kLu, LoadOp::kGemm, LoadOp::kPermanent}) {
    if (name == LoadOpName(op)) return op;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--op '", name, "': want det, lu, gemm or permanent"));
}

absl::string_view LoadOpName(LoadOp op) {
  switch (op) {
    case LoadOp::kDeterminant:
      return "det";
    case LoadOp::kLu:
      return "lu";
    case LoadOp::kGemm:
      return "gemm";
    case LoadOp::kPermanent:
      return "permanent";
  }
  return "unknown";
}

absl::StatusOr<LoadApi> ParseLoadApi(absl::string_view name) {
  for (LoadApi api : {LoadApi::kCallback, LoadApi::kBlocking, LoadApi::kQueue}) {
    if (name == LoadApiName(api)) return api;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--load_api '", name, "': want callback, blocking or queue"));
}

absl::string_view LoadApiName(LoadApi api) {
  switch (api) {
    case LoadApi::kCallback:
      return "callback";
    case LoadApi::kBlocking:
      return "blocking";
    case LoadApi::kQueue:
      return "queue";
  }
  return "unknown";
}

absl::Status ValidateLoadOptions(const LoadOptions& options) {
  if (options.n < 1)
    return absl::InvalidArgumentError(absl::StrCat("--n is ", options.n, "; want >= 1"));
  if (options.requests < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--requests is ", options.requests, "; want >= 0"));
  }
  if (options.duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--duration must be >= 0");
  }
  if (options.requests == 0 && options.duration == absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--requests=0 needs --duration to end the run");
  }
  if (options.concurrency < 1 || options.concurrency > kMaxConcurrency) {
    return absl::InvalidArgumentError(
        absl::StrCat("--concurrency is ", options.concurrency, "; want 1 to ", kMaxConcurrency));
  }
  if (options.connections < 1 || options.connections > options.concurrency) {
    return absl::InvalidArgumentError(absl::StrCat("--connections is ", options.connections,
                                                   "; want 1 to --concurrency (",
                                                   options.concurrency, ")"));
  }
  if (options.batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--batch is ", options.batch, "; want >= 1"));
  }
  if (options.batch > 1 && options.op != LoadOp::kLu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch=", options.batch, ": only --op=lu has a batched form (Factorize batch_count)"));
  }
  if (options.dtype == v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError("--dtype is unspecified");
  }
  switch (options.op) {
    case LoadOp::kDeterminant:
      return ParseDeterminantMethod(options.method).status();
    case LoadOp::kPermanent:
      return ParsePermanentMethod(options.method).status();
    case LoadOp::kLu:
    case LoadOp::kGemm:
      if (options.method != "auto") {
        return absl::InvalidArgumentError(absl::StrCat(
            "--method '", options.method, "': --op=", LoadOpName(options.op), " takes auto only"));
      }
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

int64_t MatricesPerRequest(const LoadOptions& options) {
  return options.op == LoadOp::kLu ? options.batch : 1;
}

}  // namespace matrixd
