// Turns MPI return codes into absl::Status values naming the failed call. The grid's
// communicator returns errors instead of aborting (MPI_ERRORS_RETURN), and a failed call almost
// always means a rank is gone: UNAVAILABLE.
#ifndef MATRIXD_CORE_DISTRIBUTED_MPI_STATUS_H_
#define MATRIXD_CORE_DISTRIBUTED_MPI_STATUS_H_

#include <mpi.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace matrixd::distributed {

inline absl::Status MpiStatus(int code, const char* call) {
  if (code == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return absl::UnavailableError(
      absl::StrCat(call, " failed: ", std::string(text, static_cast<size_t>(length)),
                   " (a rank of the grid is gone?)"));
}

}  // namespace matrixd::distributed

#endif  // MATRIXD_CORE_DISTRIBUTED_MPI_STATUS_H_
