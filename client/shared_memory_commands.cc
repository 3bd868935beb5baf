#include "client/shared_memory_commands.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/result_format.h"

namespace matrixd {

absl::Status RunSharedMemoryList(Client& client, std::ostream& out) {
  absl::StatusOr<v1::ListSharedMemoryResponse> listed = client.ListSharedMemory();
  if (!listed.ok()) return listed.status();
  uint64_t total = 0;
  for (const v1::SharedMemoryRegion& region : listed->regions()) {
    if (region.kind() == v1::SHARED_MEMORY_KIND_CUDA) {
      out << absl::StrFormat("%-24s %-6s %-25s %10s %-10s age %s\n", region.name(), "cuda",
                             absl::StrCat("device ", region.device_id()), "",
                             FormatBytes(region.byte_size()), FormatSeconds(region.age_seconds()));
    } else {
      out << absl::StrFormat(
          "%-24s %-6s %-25s offset %-10u %10s %-10s age %s\n", region.name(), "system",
          region.key(), region.offset(), FormatBytes(region.byte_size()),
          region.pinned() ? "pinned" : "not-pinned", FormatSeconds(region.age_seconds()));
    }
    total += region.byte_size();
  }
  out << listed->regions_size() << " shared-memory region(s), " << FormatBytes(total) << "\n";
  return absl::OkStatus();
}

}  // namespace matrixd
