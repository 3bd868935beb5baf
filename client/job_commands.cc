#include "client/job_commands.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/result_format.h"

namespace matrixd {
namespace {

absl::string_view StateName(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_QUEUED:
      return "QUEUED";
    case v1::JOB_STATE_RUNNING:
      return "RUNNING";
    case v1::JOB_STATE_SUCCEEDED:
      return "SUCCEEDED";
    case v1::JOB_STATE_FAILED:
      return "FAILED";
    case v1::JOB_STATE_CANCELLED:
      return "CANCELLED";
    default:
      return "UNKNOWN";
  }
}

// The job's error as a status, OK unless it failed or was cancelled.
absl::Status JobError(const v1::JobUpdate& update) {
  if (!update.has_error()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(update.error().code()),
                      absl::StrCat("job ", update.job_id(), ": ", update.error().message()));
}

// The server's line of FormatStats; the client's round trip means nothing for a job.
std::string ServerStats(const v1::ComputeStats& stats) {
  std::string both = FormatStats(stats, absl::ZeroDuration());
  return both.substr(0, both.find('\n') + 1);
}

}  // namespace

std::string FormatJobUpdate(const v1::JobUpdate& update) {
  std::string line = absl::StrCat("job ", update.job_id(), ": ", StateName(update.state()));
  if (update.state() == v1::JOB_STATE_RUNNING) {
    absl::StrAppend(&line, absl::StrFormat(" %.1f%%", 100.0 * update.progress()));
    if (update.eta_seconds() >= 0) {
      absl::StrAppend(&line, " (eta ", FormatSeconds(update.eta_seconds()), ")");
    }
  }
  absl::StrAppend(&line, ", queued ", FormatSeconds(update.queued_seconds()));
  if (update.running_seconds() > 0) {
    absl::StrAppend(&line, ", running ", FormatSeconds(update.running_seconds()));
  }
  if (update.has_error()) {
    absl::StrAppend(&line, ": ",
                    absl::StatusCodeToString(static_cast<absl::StatusCode>(update.error().code())),
                    ": ", update.error().message());
  }
  return line;
}

std::string FormatJobResult(const v1::JobUpdate& update) {
  switch (update.result_case()) {
    case v1::JobUpdate::kDeterminant: {
      const v1::DeterminantResponse& r = update.determinant();
      // The update does not carry the request: a residue without a value means det mod p.
      const bool modular = r.residue() != 0 && r.log_abs() == 0 && r.mantissa() == 0;
      const bool complex = r.phase_im() != 0 || r.mantissa_imag() != 0;
      std::string out = modular ? absl::StrCat("  det mod p = ", r.residue(), "\n")
                                : FormatDeterminant(r, complex, /*modulus=*/0);
      return out + ServerStats(r.stats());
    }
    case v1::JobUpdate::kFactorize:
      return FormatFactorization(update.factorize()) + FormatKept(update.factorize().kept()) +
             ServerStats(update.factorize().stats());
    case v1::JobUpdate::kMultiply:
      return FormatProduct(update.multiply(), /*block_size=*/0) +
             FormatKept(update.multiply().kept()) + ServerStats(update.multiply().stats());
    case v1::JobUpdate::kPermanent: {
      const v1::PermanentResponse& r = update.permanent();
      return FormatPermanent(r, /*complex_input=*/r.imag() != 0) + ServerStats(r.stats());
    }
    case v1::JobUpdate::kSolve: {
      const v1::SolveResponse& r = update.solve();
      std::string out =
          absl::StrCat("  solved with a kept ", v1::FactorizationKind_Name(r.kind()), "\n");
      if (r.has_solution()) absl::StrAppend(&out, "  X: ", FormatShape(r.solution()), "\n");
      if (r.has_residual()) absl::StrAppend(&out, "  residual ", r.residual(), "\n");
      return out + FormatKept(r.kept()) + ServerStats(r.stats());
    }
    case v1::JobUpdate::RESULT_NOT_SET:
      return "";
  }
  return "";
}

absl::Status RunSubmit(Client& client, const v1::JobRequest& request, std::ostream& out) {
  absl::StatusOr<std::string> id = client.Submit(request);
  if (!id.ok()) return id.status();
  out << *id << "\n";
  return absl::OkStatus();
}

absl::Status RunWatch(Client& client, const std::string& job_id, std::ostream& out) {
  absl::StatusOr<v1::JobUpdate> last = client.Watch(
      job_id, [&out](const v1::JobUpdate& update) { out << FormatJobUpdate(update) << "\n"; });
  if (!last.ok()) return last.status();
  out << FormatJobResult(*last);
  return JobError(*last);
}

absl::Status RunCancel(Client& client, const std::string& job_id, std::ostream& out) {
  absl::StatusOr<v1::JobUpdate> update = client.Cancel(job_id);
  if (!update.ok()) return update.status();
  out << FormatJobUpdate(*update) << "\n";
  return absl::OkStatus();
}

absl::Status RunGetJob(Client& client, const std::string& job_id, std::ostream& out) {
  absl::StatusOr<v1::JobUpdate> update = client.GetJob(job_id);
  if (!update.ok()) return update.status();
  out << FormatJobUpdate(*update) << "\n" << FormatJobResult(*update);
  return absl::OkStatus();
}

}  // namespace matrixd
