#include "client/load_requests.h"

#include <algorithm>
#include <utility>

#include "client/matrix_generators.h"
#include "client/matrix_values.h"
#include "client/request_methods.h"

namespace matrixd {

namespace {

// Matrices of n x n in one request: the factorized ones, or A and B of a product.
int64_t OperandsPerRequest(const LoadOptions& options) {
  return options.op == LoadOp::kGemm ? 2 : MatricesPerRequest(options);
}

}  // namespace

int64_t LoadRequestPoolSize(const LoadOptions& options) {
  const int64_t request_bytes =
      OperandsPerRequest(options) * options.n * options.n * ElementSize(options.dtype);
  int64_t count = kMaxDistinctLoadRequests;
  if (options.requests > 0) count = std::min(count, options.requests);
  return std::max<int64_t>(1, std::min(count, kMaxLoadRequestPoolBytes / request_bytes));
}

absl::StatusOr<std::vector<v1::JobRequest>> MakeLoadRequests(const LoadOptions& options) {
  if (absl::Status status = ValidateLoadOptions(options); !status.ok()) return status;
  const int64_t matrices = MatricesPerRequest(options);
  const int64_t operands = OperandsPerRequest(options);
  const int64_t count = LoadRequestPoolSize(options);

  std::vector<v1::JobRequest> requests(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    const uint64_t seed = options.seed + static_cast<uint64_t>(k * operands);
    v1::JobRequest& request = requests[static_cast<size_t>(k)];
    switch (options.op) {
      case LoadOp::kDeterminant: {
        v1::DeterminantRequest& determinant = *request.mutable_determinant();
        determinant.set_method(*ParseDeterminantMethod(options.method));
        *determinant.mutable_matrix() = RandomMatrix(options.n, options.n, options.dtype, seed);
        break;
      }
      case LoadOp::kLu: {
        v1::FactorizeRequest& factorize = *request.mutable_factorize();
        factorize.set_kind(v1::FACTORIZATION_KIND_LU);
        // Independent entries make the stacked rows `batch` independent random matrices.
        *factorize.mutable_matrix() =
            RandomMatrix(matrices * options.n, options.n, options.dtype, seed);
        if (options.batch > 1) factorize.set_batch_count(options.batch);
        break;
      }
      case LoadOp::kGemm: {
        v1::MultiplyRequest& multiply = *request.mutable_multiply();
        *multiply.mutable_a() = RandomMatrix(options.n, options.n, options.dtype, seed);
        *multiply.mutable_b() = RandomMatrix(options.n, options.n, options.dtype, seed + 1);
        break;
      }
      case LoadOp::kPermanent: {
        v1::PermanentRequest& permanent = *request.mutable_permanent();
        permanent.set_method(*ParsePermanentMethod(options.method));
        *permanent.mutable_matrix() = RandomMatrix(options.n, options.n, options.dtype, seed);
        break;
      }
    }
  }
  return requests;
}

absl::Status SendLoadRequest(Client& client, const v1::JobRequest& request) {
  return CallJobRequest(client, request).status();
}

namespace {

// Moves a synchronous call's response into `update`'s result field (`mutable` picks it).
template <typename Response>
absl::StatusOr<v1::JobUpdate> AsSucceededJob(absl::StatusOr<Response> response,
                                             Response* (v1::JobUpdate::*mutable_result)()) {
  if (!response.ok()) return response.status();
  v1::JobUpdate update;
  update.set_state(v1::JOB_STATE_SUCCEEDED);
  update.set_progress(1.0);
  *(update.*mutable_result)() = *std::move(response);
  return update;
}

}  // namespace

absl::StatusOr<v1::JobUpdate> CallJobRequest(Client& client, const v1::JobRequest& request) {
  switch (request.request_case()) {
    case v1::JobRequest::kDeterminant:
      return AsSucceededJob(client.Determinant(request.determinant()),
                            &v1::JobUpdate::mutable_determinant);
    case v1::JobRequest::kFactorize:
      return AsSucceededJob(client.Factorize(request.factorize()),
                            &v1::JobUpdate::mutable_factorize);
    case v1::JobRequest::kMultiply:
      return AsSucceededJob(client.Multiply(request.multiply()), &v1::JobUpdate::mutable_multiply);
    case v1::JobRequest::kPermanent:
      return AsSucceededJob(client.Permanent(request.permanent()),
                            &v1::JobUpdate::mutable_permanent);
    case v1::JobRequest::kSolve:
      return AsSucceededJob(client.Solve(request.solve()), &v1::JobUpdate::mutable_solve);
    case v1::JobRequest::REQUEST_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("load request has no operation set");
}

}  // namespace matrixd
