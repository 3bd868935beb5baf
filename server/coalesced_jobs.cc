#include "server/coalesced_jobs.h"

#include <cstring>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "server/matrix_conversion.h"
#include "server/provenance.h"

namespace matrixd::server {
namespace {

void MarkCoalesced(size_t group_size, v1::ComputeStats* stats) {
  if (group_size > 1) {
    stats->set_algorithm(absl::StrCat("coalesced(", group_size, ")+", stats->algorithm()));
  }
}

// The members' matrices (each view_of(member), all of one shape) stacked vertically, as a batched
// call takes them.
template <typename Work, typename ViewOf>
Matrix Stack(std::span<Work* const> members, ViewOf view_of) {
  const MatrixView first = view_of(*members.front());
  Matrix stacked(first.rows * static_cast<int64_t>(members.size()), first.cols, first.dtype);
  for (size_t k = 0; k < members.size(); ++k) {
    std::memcpy(stacked.mutable_bytes() + k * first.byte_size(), view_of(*members[k]).data,
                first.byte_size());
  }
  return stacked;
}

// CoalescibleWork::RunGroup for works of class Work, which provides
//   static absl::StatusOr<std::vector<Result>> CallBatch(std::span<Work* const>, JobControl&)
//   absl::Status Deliver(absl::StatusOr<Result>, size_t group_size)
// Cancelled members leave the group before the call, and are not answered after it.
template <typename Work>
std::vector<absl::Status> RunCoalesced(std::span<CoalescibleWork* const> members,
                                       std::span<JobControl* const> controls, JobControl& group) {
  std::vector<absl::Status> statuses(members.size());
  std::vector<Work*> live;
  std::vector<size_t> index;
  const auto cancelled = [](const CoalescibleWork& work) {
    return absl::CancelledError(absl::StrCat(
        work.key().kind == CoalesceKey::Kind::kDeterminantLu ? "determinant" : "factorize",
        " cancelled"));
  };
  for (size_t i = 0; i < members.size(); ++i) {
    if (controls[i]->cancelled()) {
      statuses[i] = cancelled(*members[i]);
    } else {
      live.push_back(static_cast<Work*>(members[i]));
      index.push_back(i);
    }
  }
  if (live.size() <= 1) {
    if (live.size() == 1) statuses[index[0]] = live[0]->Run(*controls[index[0]]);
    return statuses;
  }
  auto results = Work::CallBatch(std::span<Work* const>(live), group);
  for (size_t k = 0; k < live.size(); ++k) {
    JobControl& control = *controls[index[k]];
    if (control.cancelled()) {
      statuses[index[k]] = cancelled(*live[k]);
    } else if (!results.ok()) {
      // One bad member (singular with a right-hand side, overflowing) fails a batched call:
      // each member runs alone, and gets its own answer.
      statuses[index[k]] = live[k]->Run(control);
    } else {
      statuses[index[k]] = live[k]->Deliver(std::move((*results)[k]), live.size());
    }
  }
  return statuses;
}

class DeterminantWork final : public CoalescibleWork {
 public:
  DeterminantWork(DeterminantInputs inputs, v1::DeterminantResponse* response, Backend& backend)
      : inputs_(std::move(inputs)), response_(response), backend_(backend) {
    const MatrixView a = inputs_.matrix.view();
    key_ = {.kind = CoalesceKey::Kind::kDeterminantLu,
            .dtype = a.dtype,
            .order = a.rows,
            .method = static_cast<int>(inputs_.options.method)};
  }

  const CoalesceKey& key() const override { return key_; }

  absl::Status Run(JobControl& control) override {
    return Deliver(backend_.Determinant(inputs_.matrix.view(), inputs_.options, &control), 1);
  }

  std::vector<absl::Status> RunGroup(std::span<CoalescibleWork* const> members,
                                     std::span<JobControl* const> controls,
                                     JobControl& group) override {
    return RunCoalesced<DeterminantWork>(members, controls, group);
  }

  static absl::StatusOr<std::vector<DeterminantResult>> CallBatch(
      std::span<DeterminantWork* const> members, JobControl& group) {
    const DeterminantWork& head = *members.front();
    const Matrix stacked =
        Stack(members, [](const DeterminantWork& work) { return work.inputs_.matrix.view(); });
    return head.backend_.DeterminantBatch(stacked.view(), static_cast<int64_t>(members.size()),
                                          head.inputs_.options, &group);
  }

  absl::Status Deliver(absl::StatusOr<DeterminantResult> result, size_t group_size) {
    if (!result.ok()) return result.status();
    ToProto(*result, key_.dtype, /*modulus=*/0, response_);
    StampProvenance(backend_, key_.dtype, *response_, response_->mutable_stats());
    MarkCoalesced(group_size, response_->mutable_stats());
    return absl::OkStatus();
  }

 private:
  DeterminantInputs inputs_;
  v1::DeterminantResponse* const response_;
  Backend& backend_;
  CoalesceKey key_;
};

class FactorizeWork final : public CoalescibleWork {
 public:
  FactorizeWork(FactorizeInputs inputs, v1::FactorizeResponse* response, Backend& backend)
      : inputs_(std::move(inputs)), response_(response), backend_(backend) {
    const MatrixView a = inputs_.matrix.view();
    const MatrixView* rhs = inputs_.rhs_view();
    key_ = {.kind = CoalesceKey::Kind::kFactorizeLu,
            .dtype = a.dtype,
            .order = a.rows,
            .rhs_cols = rhs != nullptr ? rhs->cols : 0};
  }

  const CoalesceKey& key() const override { return key_; }

  absl::Status Run(JobControl& control) override {
    return Deliver(backend_.Factorize(inputs_.matrix.view(), {.kind = FactorizationKind::kLu},
                                      inputs_.rhs_view(), &control),
                   1);
  }

  std::vector<absl::Status> RunGroup(std::span<CoalescibleWork* const> members,
                                     std::span<JobControl* const> controls,
                                     JobControl& group) override {
    return RunCoalesced<FactorizeWork>(members, controls, group);
  }

  // One batched LU of the members, split into the result each would have had alone.
  static absl::StatusOr<std::vector<FactorizeResult>> CallBatch(
      std::span<FactorizeWork* const> members, JobControl& group) {
    const FactorizeWork& head = *members.front();
    const int64_t count = static_cast<int64_t>(members.size());
    const int64_t n = head.key_.order;
    const Matrix a =
        Stack(members, [](const FactorizeWork& work) { return work.inputs_.matrix.view(); });
    std::optional<Matrix> rhs;
    if (head.key_.rhs_cols > 0) {
      rhs = Stack(members, [](const FactorizeWork& work) { return *work.inputs_.rhs_view(); });
    }
    const MatrixView rhs_view = rhs.has_value() ? rhs->view() : MatrixView{};
    MATRIXD_ASSIGN_OR_RETURN(
        FactorizeResult batch,
        head.backend_.Factorize(a.view(), {.kind = FactorizationKind::kLu, .batch_count = count},
                                rhs.has_value() ? &rhs_view : nullptr, &group));
    std::vector<FactorizeResult> results(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) {
      FactorizeResult& member = results[static_cast<size_t>(k)];
      member.kind = FactorizationKind::kLu;
      member.lu = Matrix::CopyOf(BatchMember(batch.lu.view(), count, k));
      member.permutation.assign(batch.permutation.begin() + k * n,
                                batch.permutation.begin() + (k + 1) * n);
      if (static_cast<size_t>(k) < batch.singular_columns.size() &&
          batch.singular_columns[static_cast<size_t>(k)] >= 0) {
        member.singular_column = batch.singular_columns[static_cast<size_t>(k)];
      }
      if (batch.solution.has_value()) {
        member.solution = Matrix::CopyOf(BatchMember(batch.solution->view(), count, k));
      }
      member.stats = ShareOf(batch.stats, count);
    }
    return results;
  }

  absl::Status Deliver(absl::StatusOr<FactorizeResult> result, size_t group_size) {
    if (!result.ok()) return result.status();
    ToProto(*result, response_);
    StampProvenance(backend_, key_.dtype, *response_, response_->mutable_stats());
    MarkCoalesced(group_size, response_->mutable_stats());
    return absl::OkStatus();
  }

 private:
  FactorizeInputs inputs_;
  v1::FactorizeResponse* const response_;
  Backend& backend_;
  CoalesceKey key_;
};

}  // namespace

std::shared_ptr<CoalescibleWork> MakeCoalescible(const v1::DeterminantRequest& request,
                                                 DeterminantInputs& inputs,
                                                 v1::DeterminantResponse* response,
                                                 Backend& backend) {
  const MatrixView a = inputs.matrix.view();
  const DeterminantMethod method = inputs.options.method;
  if (request.operand_case() != v1::DeterminantRequest::kMatrix || request.deterministic() ||
      inputs.options.modulus != 0 || inputs.options.devices > 1 || !IsFloating(a.dtype) ||
      a.on_device() || a.rows != a.cols ||
      (method != DeterminantMethod::kAuto && method != DeterminantMethod::kLu) ||
      // Answered on the host one by one faster than any batch on the device (CUDA, small n).
      backend.DeterminantRunsOnHost(a, inputs.options)) {
    return nullptr;
  }
  return std::make_shared<DeterminantWork>(std::move(inputs), response, backend);
}

std::shared_ptr<CoalescibleWork> MakeCoalescible(const v1::FactorizeRequest& request,
                                                 FactorizeInputs& inputs,
                                                 v1::FactorizeResponse* response,
                                                 Backend& backend) {
  const MatrixView a = inputs.matrix.view();
  const MatrixView* rhs = inputs.rhs_view();
  if (request.operand_case() != v1::FactorizeRequest::kMatrix ||
      request.rhs_operand_case() == v1::FactorizeRequest::kRhsRef || request.has_result_options() ||
      request.keep_input() || request.refine() || request.estimate_condition() ||
      request.deterministic() || request.devices() > 1 || inputs.kind != FactorizationKind::kLu ||
      inputs.batch_count != 0 || !IsFloating(a.dtype) || a.on_device() || a.rows != a.cols ||
      (rhs != nullptr && (rhs->on_device() || rhs->cols < 1)) ||
      // Answered on the host one by one faster than any batch on the device (CUDA, small n).
      backend.FactorizeRunsOnHost(a, inputs.options(), rhs)) {
    return nullptr;
  }
  return std::make_shared<FactorizeWork>(std::move(inputs), response, backend);
}

}  // namespace matrixd::server
