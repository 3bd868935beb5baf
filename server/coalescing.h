// Small jobs that run together (issue 13): a job whose spec carries a CoalescibleWork may be
// started by the scheduler together with other queued jobs of the same CoalesceKey, and then the
// whole group runs as ONE batched backend call (server/coalesced_jobs.h makes such works for
// small determinants and LU factorizations). Each job of a group keeps its own result, status,
// deadline, cancellation, quota and admission; only the backend call is shared.
#ifndef MATRIXD_SERVER_COALESCING_H_
#define MATRIXD_SERVER_COALESCING_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/job_control.h"
#include "core/matrix.h"

namespace matrixd::server {

// When the scheduler coalesces (SchedulerOptions::coalesce). The defaults never coalesce.
struct CoalesceOptions {
  // The most jobs in one group; 1: every job runs alone.
  int max_group = 1;
  // The largest matrix order that coalesces.
  int64_t max_order = 64;
  // How long a group's first job waits for partners that have not arrived yet, at most, and only
  // while other jobs are queued or running (never on an idle server). Zero: a group is what is
  // queued when a worker takes its first job.
  absl::Duration window = absl::ZeroDuration();
};

// INVALID_ARGUMENT naming the option when one is out of range.
absl::Status ValidateCoalesceOptions(const CoalesceOptions& options);

// What makes jobs interchangeable members of one batched call.
struct CoalesceKey {
  enum class Kind { kDeterminantLu, kFactorizeLu };
  Kind kind = Kind::kDeterminantLu;
  DType dtype = DType::kFloat64;
  int64_t order = 0;     // n of the n x n matrix
  int64_t rhs_cols = 0;  // Factorize: the right-hand sides' columns (0: no solve)
  int method = 0;        // Determinant: the DeterminantMethod asked for

  bool operator==(const CoalesceKey&) const = default;
};

// One job's computation, in a form that can run alone or as a member of a group.
class CoalescibleWork {
 public:
  virtual ~CoalescibleWork() = default;
  virtual const CoalesceKey& key() const = 0;
  // Runs the job alone: what its JobSpec::work does.
  virtual absl::Status Run(JobControl& control) = 0;
  // Runs `members` (this work among them, all of its key and so of its class) as one batched
  // call on group.device_index(), and returns each member's status in order: CANCELLED for a
  // member whose control (controls[i]) is cancelled by then, its own error for a member that
  // fails (a failure of the batched call is retried member by member, so that one bad member
  // does not fail the others).
  virtual std::vector<absl::Status> RunGroup(std::span<CoalescibleWork* const> members,
                                             std::span<JobControl* const> controls,
                                             JobControl& group) = 0;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_COALESCING_H_
