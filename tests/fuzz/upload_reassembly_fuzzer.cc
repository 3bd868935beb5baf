// libFuzzer target: the reassembly of a streamed Upload (server/upload_assembler.h) must turn any
// sequence of UploadChunk messages into a resident matrix or an error, never a crash, and must
// leave the registry as it found it when the upload fails (nothing listed, no bytes held).
// Input: records of a 2-byte little-endian length and that many bytes; a record that parses as
// an UploadChunk is sent as it is, any other becomes a chunk whose data is the record, at the
// offset the stream has reached. At most 64 chunks; the registry holds up to 4 MiB.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/cpu/cpu_backend.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/resident_registry.h"
#include "server/upload_assembler.h"

namespace {

constexpr int kMaxChunks = 64;

// Aborts (a finding for libFuzzer and a failure for the corpus test) when `held` is false.
void Require(bool held) {
  if (!held) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<matrixd::Backend> backend = matrixd::MakeCpuBackend({.threads = 1});
  matrixd::server::ResidentRegistry registry(*backend, {}, {.limit_bytes = 1 << 22});
  absl::StatusOr<matrixd::server::ResidentInfo> info = absl::UnknownError("no chunk");
  {
    matrixd::server::UploadAssembler assembler(registry);
    size_t at = 0;
    for (int chunks = 0; chunks < kMaxChunks && at + 2 <= size; ++chunks) {
      const size_t length = std::min<size_t>(data[at] | (size_t{data[at + 1]} << 8), size - at - 2);
      const std::string record(reinterpret_cast<const char*>(data + at + 2), length);
      at += 2 + length;
      matrixd::v1::UploadChunk chunk;
      if (!chunk.ParseFromString(record)) {
        chunk.Clear();
        chunk.set_offset(assembler.bytes_received());
        chunk.set_data(record);
      }
      if (!assembler.Add(chunk).ok()) break;
    }
    info = assembler.Finish();
  }
  if (info.ok()) {
    Require(registry.List().size() == 1);
    Require(registry.resident_bytes() == info->bytes);
  } else {
    Require(registry.List().empty());
    Require(registry.resident_bytes() == 0);
  }
  return 0;
}
