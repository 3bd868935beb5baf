#include "server/request_jobs.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/factorization.h"
#include "core/result_shape.h"
#include "core/status_macros.h"
#include "core/validation.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "server/coalesced_jobs.h"
#include "server/job_cost.h"
#include "server/matrix_conversion.h"
#include "server/provenance.h"
#include "server/request_validation.h"
#include "server/shared_memory_outputs.h"

namespace matrixd::server {
namespace {

// What result_options asked for, with the registry to keep results in (null: keep nothing).
struct KeepRequest {
  ResidentRegistry* registry = nullptr;
  bool also_inline = false;
  ResidentOwner owner = {};  // whose the kept matrices are
};

std::string OwnerName(const ClientIdentity* client) {
  return client == nullptr ? std::string() : client->name;
}

absl::Status CheckResultOptions(const v1::ResultOptions& options, ResidentRegistry* registry) {
  if (options.keep_result() && registry == nullptr) {
    return absl::FailedPreconditionError(
        "result_options.keep_result: this server keeps no resident matrices");
  }
  if (options.also_inline() && !options.keep_result()) {
    return absl::InvalidArgumentError(
        "result_options.also_inline is set without keep_result; results are inline anyway");
  }
  return absl::OkStatus();
}

KeepRequest KeepOf(const v1::ResultOptions& options, ResidentRegistry* registry,
                   const ClientIdentity* client) {
  if (!options.keep_result()) return {};
  KeepRequest keep{.registry = registry, .also_inline = options.also_inline()};
  if (client != nullptr) keep.owner = {client->name, client->quota.max_resident_bytes};
  return keep;
}

// One result matrix: the name of its field in the response, and the matrix.
struct ResultMatrix {
  const char* field;
  const Matrix* matrix;
};

// Keeps each non-empty result matrix resident on the job's device, named in `kept` by its response
// field's name, and clears that inline field (so has_<field>() is false) unless also_inline. On a
// failure the matrices kept so far are released again: a failed call leaves nothing behind.
absl::Status KeepResults(const KeepRequest& keep, const std::vector<ResultMatrix>& outputs,
                         const JobControl& control, google::protobuf::Message* response,
                         google::protobuf::Map<std::string, v1::ResidentMatrix>* kept) {
  const absl::Time now = absl::Now();
  for (const auto& [field, matrix] : outputs) {
    if (matrix->empty()) continue;
    absl::StatusOr<ResidentInfo> info =
        keep.registry->Keep(*matrix, field, control.device_index(), keep.owner);
    if (!info.ok()) {
      for (const auto& [kept_name, resident] : *kept) {
        static_cast<void>(keep.registry->Release(resident.handle(), keep.owner.name));
      }
      kept->clear();
      return info.status();
    }
    ToProto(*info, now, &(*kept)[field]);
    if (!keep.also_inline) {
      response->GetReflection()->ClearField(response,
                                            response->GetDescriptor()->FindFieldByName(field));
    }
  }
  return absl::OkStatus();
}

// Names a result that the backend wrote into `pending`, or that it returned in `returned` (then
// stored here), as kept[name]; the inline field `name` stays empty.
absl::Status KeepPending(std::unique_ptr<PendingResident> pending, const Matrix& returned,
                         const std::string& name, google::protobuf::Message* response,
                         google::protobuf::Map<std::string, v1::ResidentMatrix>* kept) {
  bool finite = true;  // written in place on the device: not inspected (see ResidentInfo)
  if (!returned.empty()) {
    if (absl::Status written = pending->matrix().Write(
            0, std::span<const std::byte>(returned.bytes(), returned.byte_size()));
        !written.ok()) {
      return written;
    }
    finite = AllFinite(returned.view());
  }
  ResidentRegistry& registry = pending->registry();
  absl::StatusOr<ResidentInfo> info = registry.Commit(std::move(pending), finite);
  if (!info.ok()) return info.status();
  ToProto(*info, absl::Now(), &(*kept)[name]);
  response->GetReflection()->ClearField(response, response->GetDescriptor()->FindFieldByName(name));
  return absl::OkStatus();
}

// Room for a kept result of rows x cols before the operation runs, so that a device backend writes
// it in place: when keep_result is set without also_inline. Null otherwise. `spread` (a job over
// several GPUs) asks for a distributed matrix over the server's GPUs, each part reserved on its
// own (ResidentRegistry::Create), so that the result stays on the GPUs that computed it; where
// that cannot be (fewer than 2 GPUs, a part that does not fit) it is kept on the job's device, as
// any result.
absl::StatusOr<std::unique_ptr<PendingResident>> PendingResult(const KeepRequest& keep,
                                                               int64_t rows, int64_t cols,
                                                               DType dtype, const char* name,
                                                               const JobControl& control,
                                                               bool spread = false) {
  if (keep.registry == nullptr || keep.also_inline) return nullptr;
  if (spread) {
    absl::StatusOr<std::unique_ptr<PendingResident>> distributed = keep.registry->Create(
        rows, cols, dtype, name, -1, keep.owner, ResidentLayout::kDistributed);
    if (distributed.ok()) return distributed;
  }
  return keep.registry->Create(rows, cols, dtype, name, control.device_index(), keep.owner);
}

// With keep_result, Factorize (of one matrix or of a batch) keeps its factorization under one
// handle, named in kept as "factorization" and as its factor's field; the factor's inline field is
// cleared unless also_inline. The other result matrices are kept as plain matrices by KeepResults.
// A factorization the backend left on the GPU or GPUs (FactorizeResult::kept) is kept there as it
// is.
absl::Status KeepFactorization(const KeepRequest& keep, FactorizeResult& result,
                               const MatrixView* input, int64_t batch_count,
                               const JobControl& control, v1::FactorizeResponse* response) {
  const FactorizationView view = FactorizationOf(result, input, batch_count);
  std::vector<ResidentPart> parts;
  if (view.kind == FactorizationKind::kQr) parts.push_back({"r", view.r});
  if (view.kind == FactorizationKind::kLu) parts.push_back({"permutation", view.permutation});
  if (input != nullptr) parts.push_back({"input", *input});
  const char* field = view.kind == FactorizationKind::kLu         ? "lu"
                      : view.kind == FactorizationKind::kCholesky ? "l"
                                                                  : "q";
  const ResidentFactorization kept{.kind = view.kind,
                                   .singular_column = view.singular_column,
                                   .input_kept = input != nullptr,
                                   .batch_count = view.batch_count,
                                   .singular_member = view.singular_member};
  absl::StatusOr<ResidentInfo> info =
      result.kept != nullptr
          ? keep.registry->KeepOnDevices(std::move(result.kept), kept, field, keep.owner)
          : keep.registry->KeepFactorization(view.factor, parts, kept, field,
                                             control.device_index(), keep.owner);
  if (!info.ok()) return info.status();
  const absl::Time now = absl::Now();
  ToProto(*info, now, &(*response->mutable_kept())["factorization"]);
  ToProto(*info, now, &(*response->mutable_kept())[field]);
  if (!keep.also_inline) {
    response->GetReflection()->ClearField(response,
                                          response->GetDescriptor()->FindFieldByName(field));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// The device a deterministic request runs on: the first one, always, so that a repeat meets the
// same device (docs/accuracy.md, "Bit-identical repeats").
constexpr int kDeterministicDevice = 0;
// Where a job must run: kDeterministicDevice for a deterministic request; otherwise the device of
// the first operand that is a resident matrix's device view, since a job runs where its operand
// lives (stream-ordered pool memory of one GPU is not readable by another's kernels or copies
// without peer access: the H200 x2 run of 2026-11-26 failed a determinant of a resident matrix
// placed on the other GPU with cudaErrorInvalidValue); JobControl::kAnyDevice otherwise.
int PinnedDevice(bool deterministic, std::initializer_list<const InputMatrix*> operands) {
  if (deterministic) return kDeterministicDevice;
  for (const InputMatrix* operand : operands) {
    if (operand != nullptr && operand->view().on_device() && operand->resident() != nullptr) {
      return operand->resident()->device_index();
    }
  }
  return JobControl::kAnyDevice;
}

// `work` followed, when it succeeds, by the provenance stamp of its response (server/provenance.h):
// last, so that the result hash covers what the response carries (not what went to shared memory
// or into kept matrices).
template <typename Response, typename Work>
JobWork WithProvenance(const Backend& backend, DType input, Response* response, Work work) {
  return [&backend, input, response, work = std::move(work)](JobControl& control) mutable {
    absl::Status status = work(control);
    if (status.ok()) StampProvenance(backend, input, *response, response->mutable_stats());
    return status;
  };
}

// The residues of an exact answer's certificate go back only when the request asked for them
// (return_residues): there can be hundreds of them.
template <typename Response>
void DropResiduesUnlessAsked(bool return_residues, Response* response) {
  if (!return_residues && response->has_certificate()) {
    response->mutable_certificate()->clear_residues();
  }
}

// Makes `spec` run `work`, which the scheduler may group with queued jobs of its key
// (server/coalescing.h); false, spec untouched, when the job cannot be grouped (work is null).
bool RunsCoalesced(std::shared_ptr<CoalescibleWork> work, JobSpec& spec) {
  if (work == nullptr) return false;
  spec.work = [work](JobControl& control) { return work->Run(control); };
  spec.coalescible = std::move(work);
  return true;
}

}  // namespace

absl::StatusOr<JobSpec> MakeJob(const v1::DeterminantRequest& request,
                                v1::DeterminantResponse* response, Backend& backend,
                                const Limits& limits, ResidentRegistry* registry,
                                SharedMemoryRegistry* shared_memory, const ClientIdentity* client) {
  absl::StatusOr<DeterminantInputs> inputs = ValidateRequest(request, limits,
                                                             {.registry = registry,
                                                              .backend = &backend,
                                                              .shared_memory = shared_memory,
                                                              .owner = OwnerName(client)});
  if (!inputs.ok()) return inputs.status();
  if (absl::Status s = backend.Supports(DeterminantQuery(inputs->matrix.view(), inputs->options));
      !s.ok()) {
    return s;
  }
  JobSpec spec;
  spec.op = "determinant";
  spec.pinned_device = PinnedDevice(request.deterministic(), {&inputs->matrix});
  spec.estimated_flops = EstimatedFlops(*inputs);
  spec.device_bytes = backend.DeterminantDeviceBytes(inputs->matrix.view(), inputs->options);
  spec.runs_on_host = backend.DeterminantRunsOnHost(inputs->matrix.view(), inputs->options);
  if (inputs->options.devices > 1) spec.device_span = inputs->options.devices;
  if (RunsCoalesced(MakeCoalescible(request, *inputs, response, backend), spec)) return spec;
  const DType input_dtype = inputs->matrix.view().dtype;
  spec.work = WithProvenance(
      backend, input_dtype, response,
      [inputs = *std::move(inputs), response, &backend,
       return_residues = request.return_residues()](JobControl& control) {
        absl::StatusOr<DeterminantResult> result =
            backend.Determinant(inputs.matrix.view(), inputs.options, &control);
        if (!result.ok()) return result.status();
        ToProto(*result, inputs.matrix.view().dtype, inputs.options.modulus, response);
        DropResiduesUnlessAsked(return_residues, response);
        return absl::OkStatus();
      });
  return spec;
}

absl::StatusOr<JobSpec> MakeJob(const v1::FactorizeRequest& request,
                                v1::FactorizeResponse* response, Backend& backend,
                                const Limits& limits, ResidentRegistry* registry,
                                SharedMemoryRegistry* shared_memory, const ClientIdentity* client) {
  absl::StatusOr<FactorizeInputs> inputs = ValidateRequest(request, limits,
                                                           {.registry = registry,
                                                            .backend = &backend,
                                                            .shared_memory = shared_memory,
                                                            .owner = OwnerName(client)});
  if (!inputs.ok()) return inputs.status();
  if (absl::Status s = backend.Supports(
          FactorizeQuery(inputs->matrix.view(), inputs->options(), inputs->rhs_view()));
      !s.ok()) {
    return s;
  }
  JobSpec spec;
  spec.op = "factorize";
  spec.pinned_device = PinnedDevice(request.deterministic(),
                                    {&inputs->matrix, inputs->rhs ? &*inputs->rhs : nullptr});
  spec.estimated_flops = EstimatedFlops(*inputs);
  FactorizeOptions options = inputs->options();
  spec.device_bytes =
      backend.FactorizeDeviceBytes(inputs->matrix.view(), options, inputs->rhs_view());
  if (options.devices > 1) spec.device_span = options.devices;
  if (absl::Status s = CheckResultOptions(request.result_options(), registry); !s.ok()) return s;
  absl::StatusOr<SharedMemoryOutputs> outputs = SharedMemoryOutputs::Resolve(
      request.result_options(), *response->GetDescriptor(), shared_memory, OwnerName(client));
  if (!outputs.ok()) return outputs.status();
  // The regions stay mapped while `outputs` lives, i.e. as long as the job.
  outputs->OfferTo(options.destinations);
  spec.runs_on_host =
      backend.FactorizeRunsOnHost(inputs->matrix.view(), options, inputs->rhs_view());
  // Kept, not wanted inline: the factorization stays on the GPU or GPUs that computed it where
  // the backend can leave it there, so that none crosses to the host and back
  // (core/device_factorization.h). keep_input keeps a host copy of A beside a factorization kept
  // as resident matrices on one device instead; also_inline downloads the factor and keeps it so;
  // a small one the backend answers on the host is kept from there (its factors are tiny).
  options.keep_on_devices =
      registry != nullptr && !spec.runs_on_host && request.result_options().keep_result() &&
      !request.result_options().also_inline() && !request.keep_input() && outputs->empty();
  if (RunsCoalesced(MakeCoalescible(request, *inputs, response, backend), spec)) return spec;
  const DType input_dtype = inputs->matrix.view().dtype;
  spec.work = WithProvenance(
      backend, input_dtype, response,
      [inputs = *std::move(inputs), options, response, &backend, outputs = *std::move(outputs),
       keep = KeepOf(request.result_options(), registry, client),
       keep_input = request.keep_input()](JobControl& control) {
        absl::StatusOr<FactorizeResult> result =
            backend.Factorize(inputs.matrix.view(), options, inputs.rhs_view(), &control);
        if (!result.ok()) return result.status();
        // Index results asked into shared memory go there and stay out of the response.
        for (auto [name, values] : {std::pair{"permutation", &result->permutation},
                                    std::pair{"singular_columns", &result->singular_columns}}) {
          const bool in_place =
              values == &result->permutation && result->permutation_in_destination;
          absl::StatusOr<bool> placed = outputs.WriteIndices(name, *values, in_place);
          if (!placed.ok()) return placed.status();
          if (*placed) values->clear();
        }
        ToProto(*result, response);
        if (!outputs.empty()) return outputs.Write(*response);
        if (!keep.registry) return absl::OkStatus();
        if (absl::Status s =
                KeepFactorization(keep, *result, keep_input ? &inputs.matrix.view() : nullptr,
                                  options.batch_count, control, response);
            !s.ok()) {
          return s;
        }
        std::vector<ResultMatrix> outputs = {{"r", &result->r}};
        if (result->solution.has_value()) outputs.push_back({"solution", &*result->solution});
        return KeepResults(keep, outputs, control, response, response->mutable_kept());
      });
  return spec;
}

absl::StatusOr<JobSpec> MakeJob(const v1::SolveRequest& request, v1::SolveResponse* response,
                                Backend& backend, const Limits& limits, ResidentRegistry* registry,
                                SharedMemoryRegistry* shared_memory, const ClientIdentity* client) {
  absl::StatusOr<SolveInputs> inputs = ValidateRequest(request, limits,
                                                       {.registry = registry,
                                                        .backend = &backend,
                                                        .shared_memory = shared_memory,
                                                        .owner = OwnerName(client)});
  if (!inputs.ok()) return inputs.status();
  JobSpec spec;
  spec.op = "solve";
  spec.pinned_device = PinnedDevice(request.deterministic(), {&inputs->rhs});
  // The kept factorization decides where a solve runs when it is on a device.
  if (!request.deterministic() && inputs->factorization.factor.on_device()) {
    spec.pinned_device = inputs->lease.device_index();
  }
  spec.estimated_flops = EstimatedFlops(*inputs);
  spec.device_bytes =
      backend.SolveDeviceBytes(inputs->factorization, inputs->rhs.view(), inputs->options);
  // A factorization kept over several GPUs solves on all of them (on each, spec.device_bytes).
  if (inputs->factorization.kept != nullptr) {
    spec.device_span = static_cast<int>(inputs->factorization.kept->Parts().size());
  }
  if (absl::Status s = CheckResultOptions(request.result_options(), registry); !s.ok()) return s;
  absl::StatusOr<SharedMemoryOutputs> outputs = SharedMemoryOutputs::Resolve(
      request.result_options(), *response->GetDescriptor(), shared_memory, OwnerName(client));
  if (!outputs.ok()) return outputs.status();
  const DType input_dtype = inputs->rhs.view().dtype;
  spec.work = WithProvenance(
      backend, input_dtype, response,
      [inputs = *std::move(inputs), response, &backend, outputs = *std::move(outputs),
       keep = KeepOf(request.result_options(), registry, client)](JobControl& control) {
        SolveOptions options = inputs.options;
        const MatrixView rhs = inputs.rhs.view();
        absl::StatusOr<std::unique_ptr<PendingResident>> pending =
            PendingResult(keep, inputs.factorization.members() * inputs.factorization.cols(),
                          rhs.cols, rhs.dtype, "solution", control);
        if (!pending.ok()) return pending.status();
        options.output =
            *pending != nullptr ? &(*pending)->matrix() : outputs.LendDeviceTarget("solution");
        absl::StatusOr<SolveResult> result =
            backend.Solve(inputs.factorization, rhs, options, &control);
        if (!result.ok()) return result.status();
        MATRIXD_RETURN_IF_ERROR(CheckSolveResultShape(inputs.factorization, rhs, options, *result));
        ToProto(*result, inputs.factorization.kind, response);
        if (!outputs.empty()) return outputs.Write(*response);
        if (*pending != nullptr) {
          return KeepPending(*std::move(pending), result->x, "solution", response,
                             response->mutable_kept());
        }
        if (!keep.registry) return absl::OkStatus();
        return KeepResults(keep, {{"solution", &result->x}}, control, response,
                           response->mutable_kept());
      });
  return spec;
}

absl::StatusOr<JobSpec> MakeJob(const v1::MultiplyRequest& request, v1::MultiplyResponse* response,
                                Backend& backend, const Limits& limits, ResidentRegistry* registry,
                                SharedMemoryRegistry* shared_memory, const ClientIdentity* client) {
  absl::StatusOr<MultiplyInputs> inputs = ValidateRequest(request, limits,
                                                          {.registry = registry,
                                                           .backend = &backend,
                                                           .shared_memory = shared_memory,
                                                           .owner = OwnerName(client)});
  if (!inputs.ok()) return inputs.status();
  if (absl::Status s =
          backend.Supports(MultiplyQuery(inputs->a.view(), inputs->b.view(), inputs->options));
      !s.ok()) {
    return s;
  }
  JobSpec spec;
  spec.op = "multiply";
  spec.pinned_device = PinnedDevice(request.deterministic(), {&inputs->a, &inputs->b});
  spec.estimated_flops = EstimatedFlops(*inputs);
  spec.device_bytes =
      backend.MultiplyDeviceBytes(inputs->a.view(), inputs->b.view(), inputs->options);
  if (IsMultiDeviceProduct(inputs->options)) {
    spec.device_span = std::max(inputs->options.devices, 1);
  }
  if (absl::Status s = CheckResultOptions(request.result_options(), registry); !s.ok()) return s;
  absl::StatusOr<SharedMemoryOutputs> outputs = SharedMemoryOutputs::Resolve(
      request.result_options(), *response->GetDescriptor(), shared_memory, OwnerName(client));
  if (!outputs.ok()) return outputs.status();
  const DType input_dtype = inputs->a.view().dtype;
  spec.work = WithProvenance(
      backend, input_dtype, response,
      [inputs = *std::move(inputs), response, &backend, outputs = *std::move(outputs),
       keep = KeepOf(request.result_options(), registry, client)](JobControl& control) {
        MultiplyOptions options = inputs.options;
        // Kept and not wanted inline: room for C first, so that a device backend writes it in
        // place (a product over several GPUs, into a distributed matrix on them).
        const MatrixView a = inputs.a.view();
        const MatrixView b = inputs.b.view();
        absl::StatusOr<std::unique_ptr<PendingResident>> pending = PendingResult(
            keep, options.transpose_a ? a.cols : a.rows, options.transpose_b ? b.rows : b.cols,
            a.dtype, "c", control, options.devices > 1);
        if (!pending.ok()) return pending.status();
        options.output =
            *pending != nullptr ? &(*pending)->matrix() : outputs.LendDeviceTarget("c");
        absl::StatusOr<MultiplyResult> result = backend.Multiply(a, b, options, &control);
        if (!result.ok()) return result.status();
        MATRIXD_RETURN_IF_ERROR(CheckMultiplyResultShape(a, b, options, *result));
        ToProto(*result, response);
        if (!outputs.empty()) return outputs.Write(*response);
        if (*pending != nullptr) {
          return KeepPending(*std::move(pending), result->c, "c", response,
                             response->mutable_kept());
        }
        if (!keep.registry) return absl::OkStatus();
        return KeepResults(keep, {{"c", &result->c}}, control, response, response->mutable_kept());
      });
  return spec;
}

absl::StatusOr<JobSpec> MakeJob(const v1::PermanentRequest& request,
                                v1::PermanentResponse* response, Backend& backend,
                                const Limits& limits, ResidentRegistry* registry,
                                SharedMemoryRegistry* shared_memory, const ClientIdentity* client) {
  absl::StatusOr<PermanentInputs> inputs = ValidateRequest(request, limits,
                                                           {.registry = registry,
                                                            .backend = &backend,
                                                            .shared_memory = shared_memory,
                                                            .owner = OwnerName(client)});
  if (!inputs.ok()) return inputs.status();
  if (absl::Status s = backend.Supports(PermanentQuery(inputs->matrix.view(), inputs->options));
      !s.ok()) {
    return s;
  }
  JobSpec spec;
  spec.op = "permanent";
  spec.pinned_device = PinnedDevice(request.deterministic(), {&inputs->matrix});
  spec.estimated_flops = EstimatedFlops(*inputs);
  spec.device_bytes = backend.PermanentDeviceBytes(inputs->matrix.view(), inputs->options);
  const DType input_dtype = inputs->matrix.view().dtype;
  spec.work = WithProvenance(backend, input_dtype, response,
                             [inputs = *std::move(inputs), response, &backend,
                              return_residues = request.return_residues()](JobControl& control) {
                               absl::StatusOr<PermanentResult> result = backend.Permanent(
                                   inputs.matrix.view(), inputs.options, &control);
                               if (!result.ok()) return result.status();
                               ToProto(*result, response);
                               DropResiduesUnlessAsked(return_residues, response);
                               return absl::OkStatus();
                             });
  return spec;
}

absl::StatusOr<JobSpec> MakeJob(const v1::JobRequest& request, Backend& backend,
                                const Limits& limits, absl::Time now, ResidentRegistry* registry,
                                SharedMemoryRegistry* shared_memory, const ClientIdentity* client) {
  const double timeout = request.timeout_seconds();
  if (!(timeout >= 0.0) || std::isinf(timeout)) {
    return absl::InvalidArgumentError(absl::StrCat("timeout_seconds is ", timeout,
                                                   "; want a finite number >= 0 (0: no deadline)"));
  }
  // The call's request dies with the call; the job, queued past it, needs its own copy.
  auto owned = std::make_unique<v1::JobRequest>(request);
  auto result = std::make_shared<v1::JobUpdate>();
  absl::StatusOr<JobSpec> spec;
  switch (owned->request_case()) {
    case v1::JobRequest::kDeterminant:
      spec = MakeJob(owned->determinant(), result->mutable_determinant(), backend, limits, registry,
                     shared_memory, client);
      break;
    case v1::JobRequest::kFactorize:
      spec = MakeJob(owned->factorize(), result->mutable_factorize(), backend, limits, registry,
                     shared_memory, client);
      break;
    case v1::JobRequest::kMultiply:
      spec = MakeJob(owned->multiply(), result->mutable_multiply(), backend, limits, registry,
                     shared_memory, client);
      break;
    case v1::JobRequest::kPermanent:
      spec = MakeJob(owned->permanent(), result->mutable_permanent(), backend, limits, registry,
                     shared_memory, client);
      break;
    case v1::JobRequest::kSolve:
      spec = MakeJob(owned->solve(), result->mutable_solve(), backend, limits, registry,
                     shared_memory, client);
      break;
    case v1::JobRequest::REQUEST_NOT_SET:
      return absl::InvalidArgumentError(
          "request: none set; want one of determinant, factorize, multiply, permanent, solve");
  }
  if (!spec.ok()) return spec.status();
  if (timeout > 0.0) spec->deadline = now + absl::Seconds(timeout);
  // The inner work borrows *owned: it travels with it, so both go when the job ends.
  spec->work = [owned = std::move(owned), work = std::move(spec->work)](
                   JobControl& control) mutable { return work(control); };
  spec->result = std::move(result);
  return spec;
}

}  // namespace matrixd::server
