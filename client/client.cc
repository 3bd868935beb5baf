#include "client/client.h"

#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace matrixd {
namespace {

// Matrix.data is little-endian on the wire; we copy host bytes straight into it.
static_assert(std::endian::native == std::endian::little, "matrixd's client assumes little-endian");

absl::Status ToAbslStatus(const grpc::Status& status) {
  // grpc::StatusCode and absl::StatusCode share their numbering (both follow google.rpc.Code).
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

void SetDeadline(grpc::ClientContext& context, absl::Duration deadline) {
  if (deadline == absl::InfiniteDuration()) return;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
}

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr v1::DType kValue = v1::DTYPE_FLOAT32;
};
template <>
struct DTypeOf<double> {
  static constexpr v1::DType kValue = v1::DTYPE_FLOAT64;
};
template <>
struct DTypeOf<std::complex<float>> {
  static constexpr v1::DType kValue = v1::DTYPE_COMPLEX64;
};
template <>
struct DTypeOf<std::complex<double>> {
  static constexpr v1::DType kValue = v1::DTYPE_COMPLEX128;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr v1::DType kValue = v1::DTYPE_INT64;
};
template <>
struct DTypeOf<uint32_t> {
  static constexpr v1::DType kValue = v1::DTYPE_UINT32;
};

}  // namespace

Client::Client(const std::string& target, ClientOptions options) : options_(options) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(options_.max_message_bytes);
  args.SetMaxReceiveMessageSize(options_.max_message_bytes);
  channel_ = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  stub_ = v1::MatrixService::NewStub(channel_);
}

absl::StatusOr<v1::DeterminantResponse> Client::Determinant(const v1::DeterminantRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  v1::DeterminantResponse response;
  grpc::Status status = stub_->Determinant(&context, request, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response;
}

absl::StatusOr<v1::FactorizeResponse> Client::Factorize(const v1::FactorizeRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  v1::FactorizeResponse response;
  grpc::Status status = stub_->Factorize(&context, request, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response;
}

absl::StatusOr<v1::MultiplyResponse> Client::Multiply(const v1::MultiplyRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  v1::MultiplyResponse response;
  grpc::Status status = stub_->Multiply(&context, request, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response;
}

absl::StatusOr<v1::PermanentResponse> Client::Permanent(const v1::PermanentRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  v1::PermanentResponse response;
  grpc::Status status = stub_->Permanent(&context, request, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response;
}

absl::StatusOr<bool> Client::Healthy() {
  // The stub is a few pointers over the shared channel; making one per call keeps the generated
  // health header out of client.h.
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  grpc::health::v1::HealthCheckRequest request;  // empty service name: the whole server
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = health->Check(&context, request, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

absl::StatusOr<std::string> Client::Submit(const v1::JobRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  v1::JobHandle handle;
  grpc::Status status = stub_->Submit(&context, request, &handle);
  if (!status.ok()) return ToAbslStatus(status);
  return handle.job_id();
}

absl::StatusOr<v1::JobUpdate> Client::Watch(
    const std::string& job_id, const std::function<void(const v1::JobUpdate&)>& on_update) {
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  v1::JobId request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReader<v1::JobUpdate>> reader = stub_->Watch(&context, request);
  v1::JobUpdate update;
  v1::JobUpdate last;
  bool any = false;
  while (reader->Read(&update)) {
    if (on_update) on_update(update);
    last = std::move(update);
    any = true;
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) return ToAbslStatus(status);
  const v1::JobState state = last.state();
  if (!any || (state != v1::JOB_STATE_SUCCEEDED && state != v1::JOB_STATE_FAILED &&
               state != v1::JOB_STATE_CANCELLED)) {
    return absl::UnavailableError(
        absl::StrCat("the Watch of job ", job_id, " ended before the job did"));
  }
  return last;
}

absl::StatusOr<v1::JobUpdate> Client::Cancel(const std::string& job_id) {
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  v1::JobId request;
  request.set_job_id(job_id);
  v1::JobUpdate update;
  grpc::Status status = stub_->Cancel(&context, request, &update);
  if (!status.ok()) return ToAbslStatus(status);
  return update;
}

absl::StatusOr<v1::JobUpdate> Client::GetJob(const std::string& job_id) {
  grpc::ClientContext context;
  SetDeadline(context, options_.deadline);
  v1::JobId request;
  request.set_job_id(job_id);
  v1::JobUpdate update;
  grpc::Status status = stub_->GetJob(&context, request, &update);
  if (!status.ok()) return ToAbslStatus(status);
  return update;
}

template <typename T>
v1::Matrix MakeMatrix(int64_t rows, int64_t cols, std::span<const T> values) {
  v1::Matrix matrix;
  matrix.set_rows(rows);
  matrix.set_cols(cols);
  matrix.set_dtype(DTypeOf<T>::kValue);
  matrix.set_data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return matrix;
}

template <typename T>
absl::StatusOr<std::vector<T>> ReadMatrix(const v1::Matrix& matrix) {
  if (matrix.dtype() != DTypeOf<T>::kValue) {
    return absl::InvalidArgumentError(absl::StrCat("matrix has dtype ",
                                                   v1::DType_Name(matrix.dtype()), ", want ",
                                                   v1::DType_Name(DTypeOf<T>::kValue)));
  }
  const int64_t rows = matrix.rows();
  const int64_t cols = matrix.cols();
  constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / sizeof(T);
  if (rows < 0 || cols < 0 || (rows > 0 && cols > kMaxElements / rows)) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has an invalid shape ", rows, " x ", cols));
  }
  const int64_t count = rows * cols;
  const int64_t want_bytes = count * static_cast<int64_t>(sizeof(T));
  if (static_cast<int64_t>(matrix.data().size()) != want_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("matrix.data has ", matrix.data().size(),
                                                   " bytes, want ", rows, "*", cols, "*", sizeof(T),
                                                   " = ", want_bytes));
  }
  std::vector<T> values(static_cast<size_t>(count));
  if (count > 0) std::memcpy(values.data(), matrix.data().data(), static_cast<size_t>(want_bytes));
  return values;
}

#define MATRIXD_INSTANTIATE_MATRIX_CODEC(T)                                          \
  template v1::Matrix MakeMatrix<T>(int64_t rows, int64_t cols, std::span<const T>); \
  template absl::StatusOr<std::vector<T>> ReadMatrix<T>(const v1::Matrix& matrix);

MATRIXD_INSTANTIATE_MATRIX_CODEC(float)
MATRIXD_INSTANTIATE_MATRIX_CODEC(double)
MATRIXD_INSTANTIATE_MATRIX_CODEC(std::complex<float>)
MATRIXD_INSTANTIATE_MATRIX_CODEC(std::complex<double>)
MATRIXD_INSTANTIATE_MATRIX_CODEC(int64_t)
MATRIXD_INSTANTIATE_MATRIX_CODEC(uint32_t)

#undef MATRIXD_INSTANTIATE_MATRIX_CODEC

}  // namespace matrixd
