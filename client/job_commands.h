// matrixctl's asynchronous-job commands: submit a request as a job, follow it, cancel it, look at
// it. Each prints what it did and returns the RPC's error unprinted.
#ifndef MATRIXD_CLIENT_JOB_COMMANDS_H_
#define MATRIXD_CLIENT_JOB_COMMANDS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "client/client.h"

namespace matrixd {

// One line: "job ID: RUNNING 42.0% (eta 1.23 s), queued 1.2 ms, running 3.4 s"; the error of a
// failed or cancelled job on the same line.
std::string FormatJobUpdate(const v1::JobUpdate& update);

// The summary of a succeeded job's result (as the synchronous commands print it); empty if none.
std::string FormatJobResult(const v1::JobUpdate& update);

// Prints the new job's id alone on its line, so that scripts can capture it.
absl::Status RunSubmit(Client& client, const v1::JobRequest& request, std::ostream& out);

// Prints each update as it comes and the result at the end. Returns the job's error when it
// failed or was cancelled, so that the exit status tells.
absl::Status RunWatch(Client& client, const std::string& job_id, std::ostream& out);

absl::Status RunCancel(Client& client, const std::string& job_id, std::ostream& out);

// Prints the job's state, and its result once it has succeeded.
absl::Status RunGetJob(Client& client, const std::string& job_id, std::ostream& out);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_JOB_COMMANDS_H_
