#include "client/client.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/download_assembler.h"
#include "client/matrix_values.h"
#include "client/upload_chunker.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace matrixd {
namespace {

// Matrix.data is little-endian on the wire; we copy host bytes straight into it.
static_assert(std::endian::native == std::endian::little, "matrixd's client assumes little-endian");

// HTTP/2 frames of 4 MiB (gRPC's default is 16 KiB), as the server sets them: a chunk of a
// transfer crosses in one frame instead of 256.
constexpr int kMaxFrameBytes = 4 << 20;
// The channel argument that gives each upload part a connection of its own: channels with
// different arguments never share a subchannel.
constexpr char kPartChannelArg[] = "matrixd.client.upload_part";
// The channel argument behind ClientOptions::connection.
constexpr char kConnectionChannelArg[] = "matrixd.client.connection";
// Room in a message for a chunk's fields besides its data.
constexpr uint64_t kChunkOverheadBytes = 1024;
// The server's download chunk when the request leaves it at 0.
constexpr uint64_t kDefaultDownloadChunkBytes = uint64_t{4} << 20;

// A chunk of at most `wanted` bytes that fits in one message under `max_message_bytes`.
uint64_t FittingChunkBytes(uint64_t wanted, int max_message_bytes) {
  if (max_message_bytes < 0) return std::max<uint64_t>(wanted, 1);
  const uint64_t room = static_cast<uint64_t>(max_message_bytes) > 2 * kChunkOverheadBytes
                            ? static_cast<uint64_t>(max_message_bytes) - kChunkOverheadBytes
                            : static_cast<uint64_t>(max_message_bytes) / 2;
  return std::max<uint64_t>(std::min(wanted, room), 1);
}

grpc::ChannelArguments ChannelArgs(const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(options.max_message_bytes);
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, kMaxFrameBytes);
  if (options.connection != 0) args.SetInt(kConnectionChannelArg, options.connection);
  if (options.tls.has_value() && !options.tls->server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls->server_name);
  }
  return args;
}

// The request that would not fit in one message, refused before it is sent.
absl::Status CheckInlineSize(const google::protobuf::Message& request, int max_message_bytes) {
  const size_t size = request.ByteSizeLong();
  if (max_message_bytes < 0 || size <= static_cast<size_t>(max_message_bytes)) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      request.GetDescriptor()->name(), " is ", size, " bytes, over this client's ",
      "max_message_bytes of ", max_message_bytes,
      ": upload large matrices first (Client::Upload, matrixctl upload FILE) and pass their "
      "handles instead"));
}

// Every call's context: its deadline, and the client's token.
void PrepareContext(grpc::ClientContext& context, absl::Duration deadline,
                    const ClientOptions& options) {
  if (!options.token.empty()) context.AddMetadata("authorization", "Bearer " + options.token);
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

absl::Status ToAbslStatus(const grpc::Status& status) {
  // grpc::StatusCode and absl::StatusCode share their numbering (both follow google.rpc.Code).
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

Client::Client(const std::string& target, ClientOptions options)
    : options_(options),
      target_(target),
      credentials_(ChannelCredentialsFor(options_.tls.has_value() ? &*options_.tls : nullptr)) {
  channel_ = grpc::CreateCustomChannel(target_, credentials_, ChannelArgs(options_));
  stub_ = v1::MatrixService::NewStub(channel_);
}

std::shared_ptr<grpc::Channel> Client::PartChannel(int part) const {
  grpc::ChannelArguments args = ChannelArgs(options_);
  args.SetInt(kPartChannelArg, part);
  return grpc::CreateCustomChannel(target_, credentials_, args);
}

absl::Duration Client::TransferDeadline(uint64_t bytes) const {
  return options_.deadline +
         absl::Seconds(static_cast<double>(bytes) / kAssumedTransferBytesPerSecond);
}

template <typename Request, typename Response>
absl::StatusOr<Response> Client::Call(grpc::Status (v1::MatrixService::Stub::*method)(
                                          grpc::ClientContext*, const Request&, Response*),
                                      const Request& request) {
  if (absl::Status size = CheckInlineSize(request, options_.max_message_bytes); !size.ok()) {
    return size;
  }
  grpc::ClientContext context;
  PrepareContext(context, options_.deadline, options_);
  Response response;
  grpc::Status status = (stub_.get()->*method)(&context, request, &response);
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
      absl::StrContains(status.error_message(), "larger than max")) {
    return absl::ResourceExhaustedError(absl::StrCat(
        status.error_message(),
        "; keep large results on the server (result_options.keep_result, matrixctl --keep) and "
        "download them (Client::Download, matrixctl download)"));
  }
  if (!status.ok()) return ToAbslStatus(status);
  return response;
}

absl::StatusOr<v1::DeterminantResponse> Client::Determinant(const v1::DeterminantRequest& request) {
  return Call(&v1::MatrixService::Stub::Determinant, request);
}

absl::StatusOr<v1::FactorizeResponse> Client::Factorize(const v1::FactorizeRequest& request) {
  return Call(&v1::MatrixService::Stub::Factorize, request);
}

absl::StatusOr<v1::MultiplyResponse> Client::Multiply(const v1::MultiplyRequest& request) {
  return Call(&v1::MatrixService::Stub::Multiply, request);
}

absl::StatusOr<v1::PermanentResponse> Client::Permanent(const v1::PermanentRequest& request) {
  return Call(&v1::MatrixService::Stub::Permanent, request);
}

absl::StatusOr<v1::SolveResponse> Client::Solve(const v1::SolveRequest& request) {
  return Call(&v1::MatrixService::Stub::Solve, request);
}

absl::StatusOr<v1::DeterminantResponse> Client::Determinant(Operand a,
                                                            v1::DeterminantRequest request) {
  std::move(a).MoveInto(request, &v1::DeterminantRequest::mutable_matrix,
                        &v1::DeterminantRequest::mutable_matrix_ref);
  return Determinant(request);
}

absl::StatusOr<v1::FactorizeResponse> Client::Factorize(Operand a, v1::FactorizeRequest request) {
  std::move(a).MoveInto(request, &v1::FactorizeRequest::mutable_matrix,
                        &v1::FactorizeRequest::mutable_matrix_ref);
  return Factorize(request);
}

absl::StatusOr<v1::MultiplyResponse> Client::Multiply(Operand a, Operand b,
                                                      v1::MultiplyRequest request) {
  std::move(a).MoveInto(request, &v1::MultiplyRequest::mutable_a,
                        &v1::MultiplyRequest::mutable_a_ref);
  std::move(b).MoveInto(request, &v1::MultiplyRequest::mutable_b,
                        &v1::MultiplyRequest::mutable_b_ref);
  return Multiply(request);
}

absl::StatusOr<v1::PermanentResponse> Client::Permanent(Operand a, v1::PermanentRequest request) {
  std::move(a).MoveInto(request, &v1::PermanentRequest::mutable_matrix,
                        &v1::PermanentRequest::mutable_matrix_ref);
  return Permanent(request);
}

absl::StatusOr<v1::SolveResponse> Client::Solve(const RemoteMatrix& factorization, Operand rhs,
                                                v1::SolveRequest request) {
  *request.mutable_factorization() = factorization.ref();
  std::move(rhs).MoveInto(request, &v1::SolveRequest::mutable_rhs,
                          &v1::SolveRequest::mutable_rhs_ref);
  return Solve(request);
}

absl::StatusOr<v1::ResidentMatrix> Client::UploadStream(v1::MatrixService::Stub& stub,
                                                        const HostMatrixView& matrix,
                                                        const std::string& handle, uint64_t begin,
                                                        uint64_t end, const UploadOptions& options,
                                                        const std::function<void(uint64_t)>& sent) {
  grpc::ClientContext context;
  PrepareContext(context, TransferDeadline(end - begin), options_);
  v1::ResidentMatrix response;
  std::unique_ptr<grpc::ClientWriter<v1::UploadChunk>> writer = stub.Upload(&context, &response);
  UploadChunker chunker({.rows = matrix.rows,
                         .cols = matrix.cols,
                         .dtype = matrix.dtype,
                         .label = options.label,
                         .layout = options.layout,
                         .handle = handle},
                        matrix.bytes, {begin, end},
                        FittingChunkBytes(options.chunk_bytes, options_.max_message_bytes));
  v1::UploadChunk chunk;
  uint64_t reported = 0;
  while (chunker.Next(&chunk)) {
    // A failed write means the server has ended the call; Finish says why.
    if (!writer->Write(chunk)) break;
    if (sent && chunker.bytes_sent() > reported) {
      sent(chunker.bytes_sent() - reported);
      reported = chunker.bytes_sent();
    }
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) return ToAbslStatus(status);
  return response;
}

absl::StatusOr<RemoteMatrix> Client::Upload(const HostMatrixView& matrix,
                                            const UploadOptions& options) {
  const uint64_t total = matrix.bytes.size();
  if (options.parallel_streams > 1 && total >= options.parallel_min_bytes && matrix.rows > 1) {
    return ParallelUpload(matrix, options);
  }
  uint64_t done = 0;
  std::function<void(uint64_t)> sent;
  if (options.progress) {
    sent = [&](uint64_t bytes) { options.progress(done += bytes, total); };
  }
  absl::StatusOr<v1::ResidentMatrix> uploaded =
      UploadStream(*stub_, matrix, "", 0, total, options, sent);
  if (!uploaded.ok()) return uploaded.status();
  return RemoteMatrix(this, *std::move(uploaded));
}

absl::StatusOr<RemoteMatrix> Client::Upload(const v1::Matrix& matrix,
                                            const UploadOptions& options) {
  if (absl::Status shape = CheckMatrixShape(matrix); !shape.ok()) return shape;
  return Upload(HostMatrixView{.rows = matrix.rows(),
                               .cols = matrix.cols(),
                               .dtype = matrix.dtype(),
                               .bytes = std::as_bytes(std::span(matrix.data()))},
                options);
}

absl::StatusOr<RemoteMatrix> Client::ParallelUpload(const HostMatrixView& matrix,
                                                    const UploadOptions& options) {
  v1::CreateMatrixRequest create;
  create.set_rows(matrix.rows);
  create.set_cols(matrix.cols);
  create.set_dtype(matrix.dtype);
  create.set_label(options.label);
  create.set_layout(options.layout);
  absl::StatusOr<v1::ResidentMatrix> made = Call(&v1::MatrixService::Stub::CreateMatrix, create);
  if (!made.ok()) return made.status();
  // Owned from here on: a failed part releases the whole matrix.
  RemoteMatrix remote(this, *made);

  const uint64_t total = matrix.bytes.size();
  const std::vector<ByteRange> parts =
      SplitRows(matrix.rows, total / static_cast<uint64_t>(matrix.rows), options.parallel_streams);
  std::mutex progress_mutex;
  uint64_t done = 0;
  std::function<void(uint64_t)> sent;
  if (options.progress) {
    sent = [&](uint64_t bytes) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      options.progress(done += bytes, total);
    };
  }
  std::vector<absl::StatusOr<v1::ResidentMatrix>> results(parts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < parts.size(); ++i) {
    threads.emplace_back([&, i] {
      const std::unique_ptr<v1::MatrixService::Stub> stub =
          v1::MatrixService::NewStub(PartChannel(static_cast<int>(i) + 1));
      results[i] =
          UploadStream(*stub, matrix, made->handle(), parts[i].begin, parts[i].end, options, sent);
    });
  }
  for (std::thread& thread : threads) thread.join();
  // The part that finished last saw the matrix complete.
  const v1::ResidentMatrix* complete = nullptr;
  for (const absl::StatusOr<v1::ResidentMatrix>& result : results) {
    if (!result.ok()) return result.status();
    if (result->missing_bytes() == 0) complete = &*result;
  }
  if (complete == nullptr) {
    return absl::InternalError(absl::StrCat("every part of ", made->handle(),
                                            " was accepted, yet the server misses bytes"));
  }
  remote.Detach();
  return RemoteMatrix(this, *complete);
}

absl::StatusOr<v1::Matrix> Client::Download(const std::string& handle,
                                            const DownloadOptions& options) {
  v1::DownloadRequest request;
  request.set_handle(handle);
  if (options.rows) {
    request.set_row_begin(options.rows->first);
    request.set_row_end(options.rows->second);
  }
  request.set_chunk_bytes(
      FittingChunkBytes(options.chunk_bytes > 0 ? options.chunk_bytes : kDefaultDownloadChunkBytes,
                        options_.max_message_bytes));
  // The size is known from the first chunk only; the deadline is set before, from the listing.
  uint64_t expected = 0;
  if (absl::StatusOr<v1::ListMatricesResponse> listed = ListMatrices(); listed.ok()) {
    for (const v1::ResidentMatrix& m : listed->matrices()) {
      if (m.handle() == handle) expected = m.bytes();
    }
  }
  grpc::ClientContext context;
  PrepareContext(context, TransferDeadline(expected), options_);
  std::unique_ptr<grpc::ClientReader<v1::DownloadChunk>> reader =
      stub_->Download(&context, request);
  DownloadAssembler assembler;
  v1::DownloadChunk chunk;
  absl::Status assembled;
  while (reader->Read(&chunk)) {
    assembled = assembler.Add(chunk);
    if (!assembled.ok()) {
      context.TryCancel();
      break;
    }
    if (options.progress) options.progress(assembler.bytes_received(), assembler.total_bytes());
  }
  grpc::Status status = reader->Finish();
  if (!assembled.ok()) return assembled;
  if (!status.ok()) return ToAbslStatus(status);
  return std::move(assembler).Finish();
}

absl::StatusOr<v1::ListMatricesResponse> Client::ListMatrices() {
  return Call(&v1::MatrixService::Stub::ListMatrices, v1::ListMatricesRequest());
}

absl::StatusOr<v1::ResidentMatrix> Client::Generate(const v1::GenerateRequest& request) {
  return Call(&v1::MatrixService::Stub::Generate, request);
}

absl::StatusOr<uint64_t> Client::Release(const std::string& handle) {
  v1::ReleaseRequest request;
  request.set_handle(handle);
  absl::StatusOr<v1::ReleaseResponse> released = Call(&v1::MatrixService::Stub::Release, request);
  if (!released.ok()) return released.status();
  return released->bytes_freed();
}

std::map<std::string, RemoteMatrix> Client::Adopt(
    const google::protobuf::Map<std::string, v1::ResidentMatrix>& kept) {
  std::map<std::string, RemoteMatrix> owned;
  std::set<std::string> handles;
  const std::map<std::string, v1::ResidentMatrix> by_name(kept.begin(), kept.end());
  for (const auto& [name, info] : by_name) {
    // Factorize keeps one handle under two names ("factorization" and "lu"): only one owns it.
    const bool first = handles.insert(info.handle()).second;
    owned.emplace(name, RemoteMatrix(first ? this : nullptr, info));
  }
  return owned;
}

absl::StatusOr<v1::SharedMemoryRegion> Client::RegisterSharedMemory(const std::string& name,
                                                                    const std::string& key,
                                                                    uint64_t offset,
                                                                    uint64_t byte_size) {
  v1::RegisterSystemSharedMemoryRequest request;
  request.set_name(name);
  request.set_key(key);
  request.set_offset(offset);
  request.set_byte_size(byte_size);
  absl::StatusOr<v1::RegisterSystemSharedMemoryResponse> registered =
      Call(&v1::MatrixService::Stub::RegisterSystemSharedMemory, request);
  if (!registered.ok()) return registered.status();
  return registered->region();
}

absl::StatusOr<int> Client::UnregisterSharedMemory(const std::string& name) {
  v1::UnregisterSystemSharedMemoryRequest request;
  request.set_name(name);
  absl::StatusOr<v1::UnregisterSystemSharedMemoryResponse> unregistered =
      Call(&v1::MatrixService::Stub::UnregisterSystemSharedMemory, request);
  if (!unregistered.ok()) return unregistered.status();
  return unregistered->unregistered();
}

absl::StatusOr<v1::SharedMemoryRegion> Client::RegisterCudaSharedMemory(
    const std::string& name, std::span<const std::byte> raw_handle, int device_id,
    uint64_t byte_size) {
  v1::RegisterCudaSharedMemoryRequest request;
  request.set_name(name);
  request.set_raw_handle(reinterpret_cast<const char*>(raw_handle.data()), raw_handle.size());
  request.set_device_id(device_id);
  request.set_byte_size(byte_size);
  absl::StatusOr<v1::RegisterCudaSharedMemoryResponse> registered =
      Call(&v1::MatrixService::Stub::RegisterCudaSharedMemory, request);
  if (!registered.ok()) return registered.status();
  return registered->region();
}

absl::StatusOr<int> Client::UnregisterCudaSharedMemory(const std::string& name) {
  v1::UnregisterCudaSharedMemoryRequest request;
  request.set_name(name);
  absl::StatusOr<v1::UnregisterCudaSharedMemoryResponse> unregistered =
      Call(&v1::MatrixService::Stub::UnregisterCudaSharedMemory, request);
  if (!unregistered.ok()) return unregistered.status();
  return unregistered->unregistered();
}

absl::StatusOr<v1::ListSharedMemoryResponse> Client::ListSharedMemory() {
  return Call(&v1::MatrixService::Stub::ListSharedMemory, v1::ListSharedMemoryRequest());
}

absl::StatusOr<bool> Client::Healthy() {
  // The stub is a few pointers over the shared channel; making one per call keeps the generated
  // health header out of client.h.
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  PrepareContext(context, options_.deadline, options_);
  grpc::health::v1::HealthCheckRequest request;  // empty service name: the whole server
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = health->Check(&context, request, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

namespace {

// Starts one unary call by `start(context, response, on_done)` (a stub's async() method bound to
// its request), with the client's deadline and token; the call's state is freed before `done`
// gets the status. The order matters: the ClientContext holds a reference to the channel, and
// a caller that destroys its client once the last `done` ran must drop the channel's last
// reference itself. Dropped on gRPC's callback thread instead, it shuts down gRPC's shared
// callback queue from one of that queue's own threads, which cannot join itself; the queue is
// freed under it and the process crashes (matrixctl load, once in ~40 runs on 2 cores).
template <typename Response, typename Start>
void StartUnary(const ClientOptions& options, Start start,
                absl::AnyInvocable<void(absl::Status)> done) {
  struct Call {
    grpc::ClientContext context;
    Response response;
    absl::AnyInvocable<void(absl::Status)> done;
  };
  auto call = std::make_unique<Call>();
  call->done = std::move(done);
  PrepareContext(call->context, options.deadline, options);
  Call* raw = call.release();
  start(&raw->context, &raw->response, [raw](grpc::Status status) {
    absl::AnyInvocable<void(absl::Status)> done = std::move(raw->done);
    delete raw;
    done(ToAbslStatus(status));
  });
}

}  // namespace

void Client::StartJobRequest(const v1::JobRequest& request,
                             absl::AnyInvocable<void(absl::Status)> done) {
  if (absl::Status size = CheckInlineSize(request, options_.max_message_bytes); !size.ok()) {
    done(size);
    return;
  }
  auto* async = stub_->async();
  switch (request.request_case()) {
    case v1::JobRequest::kDeterminant:
      return StartUnary<v1::DeterminantResponse>(
          options_,
          [&](auto* context, auto* response, auto on_done) {
            async->Determinant(context, &request.determinant(), response, std::move(on_done));
          },
          std::move(done));
    case v1::JobRequest::kFactorize:
      return StartUnary<v1::FactorizeResponse>(
          options_,
          [&](auto* context, auto* response, auto on_done) {
            async->Factorize(context, &request.factorize(), response, std::move(on_done));
          },
          std::move(done));
    case v1::JobRequest::kMultiply:
      return StartUnary<v1::MultiplyResponse>(
          options_,
          [&](auto* context, auto* response, auto on_done) {
            async->Multiply(context, &request.multiply(), response, std::move(on_done));
          },
          std::move(done));
    case v1::JobRequest::kPermanent:
      return StartUnary<v1::PermanentResponse>(
          options_,
          [&](auto* context, auto* response, auto on_done) {
            async->Permanent(context, &request.permanent(), response, std::move(on_done));
          },
          std::move(done));
    case v1::JobRequest::kSolve:
      return StartUnary<v1::SolveResponse>(
          options_,
          [&](auto* context, auto* response, auto on_done) {
            async->Solve(context, &request.solve(), response, std::move(on_done));
          },
          std::move(done));
    case v1::JobRequest::REQUEST_NOT_SET:
      break;
  }
  done(absl::InvalidArgumentError("JobRequest has no request set"));
}

void Client::PrepareCallContext(grpc::ClientContext& context) const {
  PrepareContext(context, options_.deadline, options_);
}

absl::StatusOr<SerializedJobRequest> Client::SerializeJobRequest(
    const v1::JobRequest& request) const {
  const google::protobuf::Message* body = nullptr;
  absl::string_view method;
  switch (request.request_case()) {
    case v1::JobRequest::kDeterminant:
      body = &request.determinant();
      method = "Determinant";
      break;
    case v1::JobRequest::kFactorize:
      body = &request.factorize();
      method = "Factorize";
      break;
    case v1::JobRequest::kMultiply:
      body = &request.multiply();
      method = "Multiply";
      break;
    case v1::JobRequest::kPermanent:
      body = &request.permanent();
      method = "Permanent";
      break;
    case v1::JobRequest::kSolve:
      body = &request.solve();
      method = "Solve";
      break;
    case v1::JobRequest::REQUEST_NOT_SET:
      return absl::InvalidArgumentError("JobRequest has no request set");
  }
  if (absl::Status size = CheckInlineSize(*body, options_.max_message_bytes); !size.ok()) {
    return size;
  }
  SerializedJobRequest serialized;
  serialized.method = absl::StrCat("/", v1::MatrixService::service_full_name(), "/", method);
  const std::string bytes = body->SerializeAsString();
  grpc::Slice slice(bytes);
  serialized.body = grpc::ByteBuffer(&slice, 1);
  return serialized;
}

absl::StatusOr<std::string> Client::Submit(const v1::JobRequest& request) {
  grpc::ClientContext context;
  PrepareContext(context, options_.deadline, options_);
  v1::JobHandle handle;
  grpc::Status status = stub_->Submit(&context, request, &handle);
  if (!status.ok()) return ToAbslStatus(status);
  return handle.job_id();
}

absl::StatusOr<v1::JobUpdate> Client::Watch(
    const std::string& job_id, const std::function<void(const v1::JobUpdate&)>& on_update) {
  grpc::ClientContext context;
  PrepareContext(context, options_.deadline, options_);
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
  PrepareContext(context, options_.deadline, options_);
  v1::JobId request;
  request.set_job_id(job_id);
  v1::JobUpdate update;
  grpc::Status status = stub_->Cancel(&context, request, &update);
  if (!status.ok()) return ToAbslStatus(status);
  return update;
}

absl::StatusOr<v1::JobUpdate> Client::GetJob(const std::string& job_id) {
  grpc::ClientContext context;
  PrepareContext(context, options_.deadline, options_);
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
