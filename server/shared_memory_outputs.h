// Results written into client shared memory instead of the response
// (ResultOptions.shared_memory_outputs): the targets are resolved and checked before a job is
// queued, and the job copies each result matrix into its target and leaves the inline field out.
// A target in a CUDA region can be lent to the operation as its resident output, so that a device
// backend writes the result there in place (device to device, no host copy).
#ifndef MATRIXD_SERVER_SHARED_MEMORY_OUTPUTS_H_
#define MATRIXD_SERVER_SHARED_MEMORY_OUTPUTS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/result_destinations.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/shared_memory_registry.h"

namespace matrixd::server {

class SharedMemoryOutputs {
 public:
  // The targets of options.shared_memory_outputs for a response of type `response_type`, held
  // (their regions stay mapped) until this is destroyed. INVALID_ARGUMENT naming the entry for a
  // name that is not one of the response's matrix fields, or with keep_result; FAILED_PRECONDITION
  // when `registry` is null; SharedMemoryRegistry::Resolve's errors (only `owner`'s regions).
  static absl::StatusOr<SharedMemoryOutputs> Resolve(
      const v1::ResultOptions& options, const google::protobuf::Descriptor& response_type,
      SharedMemoryRegistry* registry, const std::string& owner = {});

  bool empty() const { return targets_.empty(); }
  // Offers each target in host memory to the operation as the place to put its result
  // (core/result_destinations.h), index targets included, so that a backend that can writes it
  // there directly and Write (or WriteIndices) has nothing to copy.
  void OfferTo(ResultDestinations& destinations) const;

  // The device matrix of the target of result `field` when it is in a CUDA region, to pass as the
  // operation's output (MultiplyOptions::output, SolveOptions::output); null otherwise. Write then
  // takes an empty result for that field as written in place.
  ResidentMatrix* LendDeviceTarget(const std::string& field) const;

  // Index results (a response's repeated int64 fields, e.g. FactorizeResponse.permutation: a
  // batch's 3.2 M pivots cost more to encode and decode than the factors to copy) are targets too:
  // an INT64 matrix of exactly as many entries. If `field` is one, copies `values` there and
  // returns true (the caller then leaves the field out of the response); false when it is not a
  // target. INVALID_ARGUMENT naming the entry when the sizes differ. With `in_place`, the
  // operation has already written them into the target offered by OfferTo (`values` is empty):
  // only marks the target written.
  absl::StatusOr<bool> WriteIndices(const std::string& field, std::span<const int64_t> values,
                                    bool in_place = false) const;

  // Copies each target's matrix field of `response` into its target and clears the field; a field
  // with its shape but no data (the operation wrote it in place, see OfferTo) is only checked.
  // INVALID_ARGUMENT naming both when a result's shape or dtype is not its target's, or when the
  // operation produced no such result (e.g. "solution" without a right-hand side).
  absl::Status Write(google::protobuf::Message& response) const;

 private:
  struct Target {
    std::string field;
    SharedMemoryMatrix matrix;
    bool indices = false;          // a repeated int64 field (WriteIndices), not a Matrix field
    mutable bool lent = false;     // given to the operation as its output (LendDeviceTarget)
    mutable bool written = false;  // indices written by WriteIndices
  };
  std::vector<Target> targets_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_SHARED_MEMORY_OUTPUTS_H_
