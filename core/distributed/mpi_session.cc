#include "core/distributed/mpi_session.h"

#include <mpi.h>

#include "absl/strings/str_cat.h"

namespace matrixd::distributed {

absl::StatusOr<std::unique_ptr<MpiSession>> MpiSession::Init(int* argc, char*** argv) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    return absl::FailedPreconditionError("MPI_Init_thread failed");
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return absl::FailedPreconditionError(
        absl::StrCat("MPI gives thread level ", provided, ", want MPI_THREAD_SERIALIZED"));
  }
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiSession>(new MpiSession(rank, size));
}

absl::StatusOr<bool> MpiSession::RootReady(bool ready) {
  int flag = ready ? 1 : 0;
  if (MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return absl::UnavailableError("MPI_Bcast(root ready) failed");
  }
  return flag != 0;
}

MpiSession::~MpiSession() {
  if (!lost_->load()) MPI_Finalize();
}

}  // namespace matrixd::distributed
