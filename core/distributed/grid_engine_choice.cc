#include "core/distributed/grid_engine_choice.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/distributed/device_grid_engine.h"
#include "core/distributed/mpi_status.h"
#include "core/status_macros.h"

namespace matrixd::distributed {
namespace {

constexpr int kRoot = 0;
constexpr size_t kReasonBytes = 512;

// This process's rank among the ranks of its node: the GPU it takes.
absl::StatusOr<int> LocalRank() {
  MPI_Comm node = MPI_COMM_NULL;
  MATRIXD_RETURN_IF_ERROR(
      MpiStatus(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                "MPI_Comm_split_type"));
  int local = 0;
  const absl::Status ranked = MpiStatus(MPI_Comm_rank(node, &local), "MPI_Comm_rank(node)");
  MPI_Comm_free(&node);
  MATRIXD_RETURN_IF_ERROR(ranked);
  return local;
}

// OK when this rank can run the GPU engine (and sets *plugin), else why not.
absl::Status LocalReadiness(GridEngineKind wanted, bool cuda_backend, int local_rank,
                            const DeviceGridPlugin** plugin) {
  if (wanted == GridEngineKind::kScalapack) {
    return absl::FailedPreconditionError("--distributed_engine=scalapack");
  }
  if (!cuda_backend) return absl::FailedPreconditionError("the server runs the cpu backend");
  MATRIXD_ASSIGN_OR_RETURN(*plugin, LoadDeviceGridPlugin());
  const int devices = (*plugin)->DeviceCount();
  if (local_rank >= devices) {
    return absl::FailedPreconditionError(
        absl::StrCat("no GPU for local rank ", local_rank, " (", devices, " visible)"));
  }
  return absl::OkStatus();
}

// Every rank's `local` combined: OK on every rank when it is OK on every rank, else the first
// failing rank's message on every rank. The outer status is MPI's.
absl::StatusOr<absl::Status> Agree(const absl::Status& local, int rank, int ranks) {
  int first = local.ok() ? ranks : rank;
  MATRIXD_RETURN_IF_ERROR(
      MpiStatus(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD),
                "MPI_Allreduce(engine readiness)"));
  if (first == ranks) return absl::OkStatus();
  std::array<char, kReasonBytes> reason{};
  if (rank == first) {
    const std::string text = absl::StrCat("rank ", rank, ": ", local.message());
    std::copy_n(text.begin(), std::min(text.size(), kReasonBytes - 1), reason.begin());
  }
  MATRIXD_RETURN_IF_ERROR(MpiStatus(
      MPI_Bcast(reason.data(), static_cast<int>(kReasonBytes), MPI_CHAR, first, MPI_COMM_WORLD),
      "MPI_Bcast(engine readiness)"));
  return absl::FailedPreconditionError(reason.data());
}

}  // namespace

absl::StatusOr<GridEngineKind> ParseGridEngine(absl::string_view name) {
  if (name == "auto") return GridEngineKind::kAuto;
  if (name == "scalapack") return GridEngineKind::kScalapack;
  if (name == "nvidia_mp") return GridEngineKind::kNvidiaMp;
  return absl::InvalidArgumentError(
      absl::StrCat("--distributed_engine is \"", name, "\"; want auto, scalapack or nvidia_mp"));
}

absl::StatusOr<std::string> ChooseGridEngine(GridEngineKind wanted, bool cuda_backend,
                                             ScalapackGrid& grid) {
  const int rank = grid.rank();
  const int ranks = grid.shape().size();
  MATRIXD_ASSIGN_OR_RETURN(const int local_rank, LocalRank());
  const DeviceGridPlugin* plugin = nullptr;
  MATRIXD_ASSIGN_OR_RETURN(
      absl::Status agreed,
      Agree(LocalReadiness(wanted, cuda_backend, local_rank, &plugin), rank, ranks));
  if (agreed.ok()) {
    CommunicatorId id{};
    absl::Status made;
    if (rank == kRoot) {
      absl::StatusOr<CommunicatorId> fresh = plugin->NewCommunicatorId();
      made = fresh.status();
      if (fresh.ok()) id = *fresh;
    }
    MATRIXD_ASSIGN_OR_RETURN(agreed, Agree(made, rank, ranks));
    if (agreed.ok()) {
      MATRIXD_RETURN_IF_ERROR(MpiStatus(
          MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, kRoot, MPI_COMM_WORLD),
          "MPI_Bcast(NCCL id)"));
      absl::StatusOr<std::unique_ptr<DeviceGridEngine>> joined =
          plugin->Join(id, ranks, rank, local_rank);
      MATRIXD_ASSIGN_OR_RETURN(agreed, Agree(joined.status(), rank, ranks));
      if (agreed.ok()) {
        const std::string device = (*joined)->device();
        grid.SetDeviceEngine(*std::move(joined));
        return absl::StrCat("cuBLASMp/cuSOLVERMp, one GPU per rank (this rank: ", device,
                            "); Factorize on ScaLAPACK");
      }
    }
  }
  if (wanted == GridEngineKind::kNvidiaMp) {
    return absl::FailedPreconditionError(
        absl::StrCat("--distributed_engine=nvidia_mp: ", agreed.message()));
  }
  if (wanted == GridEngineKind::kScalapack) return std::string("ScaLAPACK");
  return absl::StrCat("ScaLAPACK (the GPUs are not used: ", agreed.message(), ")");
}

}  // namespace matrixd::distributed
