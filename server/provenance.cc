#include "server/provenance.h"

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "core/crc32c.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream.h"

namespace matrixd::server {
namespace {

// A ZeroCopyOutputStream that only checksums what is written into its one buffer.
class Crc32cOutputStream final : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  bool Next(void** data, int* size) override {
    Flush();
    *data = buffer_.data();
    *size = static_cast<int>(buffer_.size());
    pending_ = buffer_.size();
    return true;
  }
  void BackUp(int count) override { pending_ -= static_cast<size_t>(count); }
  int64_t ByteCount() const override { return static_cast<int64_t>(written_ + pending_); }

  uint32_t Finish() {
    Flush();
    return crc_;
  }

 private:
  void Flush() {
    crc_ = Crc32c(crc_, std::span<const std::byte>(buffer_.data(), pending_));
    written_ += pending_;
    pending_ = 0;
  }

  std::array<std::byte, 64 << 10> buffer_;
  size_t pending_ = 0;
  size_t written_ = 0;
  uint32_t crc_ = 0;
};

// What ResultCrc32c needs of one response type, looked up once per type and thread (a response is
// stamped on the thread that ran its job): the fields left out of the hash, and an empty message
// of the type to swap them into. The aside message is empty again after each use.
struct HashedType {
  std::vector<const google::protobuf::FieldDescriptor*> excluded;
  std::unique_ptr<google::protobuf::Message> aside;
};

HashedType& HashedTypeOf(const google::protobuf::Message& response) {
  // Keyed by the descriptor, which lives as long as its pool (the generated pool: the process).
  thread_local absl::flat_hash_map<const google::protobuf::Descriptor*, HashedType> types;
  const google::protobuf::Descriptor* descriptor = response.GetDescriptor();
  const auto [it, inserted] = types.try_emplace(descriptor);
  if (inserted) {
    for (const char* name : {"stats", "kept"}) {
      if (const auto* field = descriptor->FindFieldByName(name); field != nullptr) {
        it->second.excluded.push_back(field);
      }
    }
    it->second.aside.reset(response.New());
  }
  return it->second;
}

}  // namespace

uint32_t ResultCrc32c(google::protobuf::Message& response) {
  HashedType& type = HashedTypeOf(response);
  google::protobuf::Message* const aside = type.aside.get();
  // Swapping message and map fields moves pointers, not the result.
  const google::protobuf::Reflection* reflection = response.GetReflection();
  reflection->SwapFields(&response, aside, type.excluded);
  Crc32cOutputStream stream;
  {
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    response.SerializeToCodedStream(&coded);
  }
  reflection->SwapFields(&response, aside, type.excluded);
  return stream.Finish();
}

void StampProvenance(const Backend& backend, DType input, google::protobuf::Message& response,
                     v1::ComputeStats* stats) {
  auto& versions = *stats->mutable_versions();
  for (auto& [name, version] : backend.Versions()) versions[std::move(name)] = std::move(version);
  if (stats->precision().empty()) stats->set_precision(DTypeName(input));
  stats->set_result_crc32c(absl::StrFormat("%08x", ResultCrc32c(response)));
}

}  // namespace matrixd::server
