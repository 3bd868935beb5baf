// matrixctl: the command-line client of matrixd.
//   matrixctl [flags] det|factorize|multiply|permanent|health|demo [FILE.npy|FILE.mtx|@HANDLE ...]
//   matrixctl [flags] upload FILE | download HANDLE --output F.npy | ls | rm HANDLE ...
//   matrixctl [flags] submit det|factorize|multiply|permanent [FILE ...] | watch|cancel|job ID
//   matrixctl [flags] load --op=det|lu|gemm|permanent --n=N --requests=R --concurrency=C
//   matrixctl [flags] shm list
// Errors print "matrixctl: <CODE>: <message>" and exit 1; usage errors exit 2.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/commands.h"
#include "client/demo.h"
#include "client/handle_prefix.h"
#include "client/job_commands.h"
#include "client/load_runner.h"
#include "client/matrix_files.h"
#include "client/matrix_generators.h"
#include "client/matrix_values.h"
#include "client/request_methods.h"
#include "client/resident_commands.h"
#include "client/shared_memory_commands.h"
#include "client/shared_memory_staging.h"

ABSL_FLAG(std::string, server, "localhost:50051", "matrixd address, host:port");
ABSL_FLAG(absl::Duration, deadline, absl::Minutes(5), "deadline of each call, e.g. 30s or 5m");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA bundle that signed the server's certificate; any --tls_* flag turns TLS on "
          "(without --tls_ca: the system's CAs)");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate, for a server with mutual TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "",
          "the name the server's certificate must carry, when --server is an address or another "
          "name");
ABSL_FLAG(bool, tls, false, "use TLS with the system's CAs (implied by any --tls_* flag)");
ABSL_FLAG(std::string, token, "",
          "bearer token for a server with --auth_tokens (else --token_file, else $MATRIXD_TOKEN)");
ABSL_FLAG(std::string, token_file, "", "file whose first line is the bearer token");
ABSL_FLAG(int64_t, random, 0, "use random N x N input(s) instead of files");
ABSL_FLAG(int64_t, hilbert, 0, "use the N x N Hilbert matrix as input instead of files");
ABSL_FLAG(std::string, dtype, "",
          "float64|float32|complex128|complex64|int64|uint32: the dtype of --random/--hilbert "
          "inputs (default float64); for file inputs, convert them to it");
ABSL_FLAG(std::string, layout, "single",
          "upload, generate: how the server stores the matrix: single (one device) or "
          "distributed (blocks of rows over all its GPUs; docs/distributed.md)");
ABSL_FLAG(uint64_t, seed, 1, "seed of --random and --rhs_random inputs, of the demo and of load");
ABSL_FLAG(std::string, method, "auto", "det: auto|lu|condensation; permanent: auto|ryser|glynn");
ABSL_FLAG(std::string, precision, "extended",
          "permanent: extended (double-double products, ~1e-14) | fast (plain double, ~1e-12)");
ABSL_FLAG(std::string, walk, "auto",
          "permanent: auto (sparse at <= 50% non-zeros) | dense | sparse");
ABSL_FLAG(uint64_t, modulus, 0, "det: a prime p < 2^62 for the determinant mod p (int64 input)");
ABSL_FLAG(bool, return_residues, false,
          "det, permanent: also print the residues behind an exact answer (its certificate)");
ABSL_FLAG(std::string, kind, "lu", "factorize: lu|cholesky|qr");
ABSL_FLAG(
    std::string, rhs, "",
    "factorize, solve: a right-hand side B (a file or @HANDLE); factorize also solves A X = B");
ABSL_FLAG(int64_t, rhs_random, 0, "factorize, solve: a random right-hand side with K columns");
ABSL_FLAG(bool, keep_input, false,
          "factorize --keep: keep A with the factorization, so that solve --residual can use it");
ABSL_FLAG(std::string, transpose, "none",
          "solve: none|transpose|conjugate, solving A X = B, A^T X = B or A^H X = B (LU only)");
ABSL_FLAG(bool, residual, false,
          "solve: report ||op(A) X - B|| / (||A|| ||X|| + ||B||) (needs factorize --keep_input)");
ABSL_FLAG(bool, transpose_a, false, "multiply: use A^T");
ABSL_FLAG(bool, transpose_b, false, "multiply: use B^T");
ABSL_FLAG(int64_t, block_size, 0, "multiply: block-sparse product with B x B blocks");
ABSL_FLAG(double, density, 1.0,
          "multiply with --random and --block_size: the fraction of non-zero blocks");
ABSL_FLAG(bool, allow_tf32, false, "multiply: float32 on a GPU may use TF32 tensor cores");
ABSL_FLAG(int, devices, 0,
          "det, factorize, multiply, permanent: one float64 job over this many GPUs of the "
          "server (det: our LU over the GPUs; factorize: cusolverMg's LU or Cholesky; multiply: "
          "Cannon over NCCL; permanent: the walk split in equal shares)");
ABSL_FLAG(std::string, multiply_method, "auto",
          "multiply with --devices: auto | cannon | cublasmp");
ABSL_FLAG(bool, estimate_condition, false,
          "factorize: also estimate the condition of the matrix and print rcond, the relative "
          "error bound of a solve, its meaningful digits and an ill-conditioned flag");
ABSL_FLAG(bool, verify, false,
          "multiply: also run Freivalds' check of C on the server and print its verdict");
ABSL_FLAG(bool, refine, false,
          "factorize --kind lu with a right-hand side: refine X iteratively to working precision "
          "and print what the refinement did");
ABSL_FLAG(std::string, refine_precision, "input",
          "factorize --refine: the factorization's precision: input | float32 | tf32 | float16 "
          "(tf32 and float16 on a GPU; the CPU backend runs float32)");
ABSL_FLAG(int, refine_max_iterations, 0,
          "factorize --refine: correction steps at most (0: the server's default)");
ABSL_FLAG(bool, deterministic, false,
          "det, factorize, solve, multiply, permanent: ask for a bit-identical repeat (fixed "
          "device, fixed Freivalds seed; refuses --allow_tf32, --refine_precision tf32|float16)");
ABSL_FLAG(double, job_timeout, 0,
          "submit: the job fails with DEADLINE_EXCEEDED unless done this many seconds after "
          "submission; 0 = no limit");
ABSL_FLAG(std::string, output, "",
          "write the result matrix as .npy: the product; the solution when there is a "
          "right-hand side; else LU's packed lu, Cholesky's L, or QR's Q (and R in FILE_r.npy)");
ABSL_FLAG(bool, keep, false,
          "factorize, multiply: keep the result matrices on the server and print their handles "
          "(also sent back inline with --output)");
ABSL_FLAG(bool, shm, false,
          "det, factorize, solve, multiply, permanent: copy the inputs into a POSIX shared-memory "
          "region registered with the server (same host, shared /dev/shm) and send references; "
          "results come back through it too. Not with --keep");
ABSL_FLAG(int, streams, 4,
          "upload: matrices of 256 MiB or more go in this many parts at once, each on a "
          "connection of its own");
ABSL_FLAG(std::string, op, "det", "load: the operation of every request: det|lu|gemm|permanent");
ABSL_FLAG(int64_t, n, 32, "load: the size of the n x n matrices");
ABSL_FLAG(int64_t, requests, 10000, "load: requests to send; 0 = as many as fit in --duration");
ABSL_FLAG(int, concurrency, 16, "load: requests in flight at once");
ABSL_FLAG(int, connections, 1,
          "load: TCP connections the concurrent requests are spread over (1 to --concurrency)");
ABSL_FLAG(std::string, load_api, "callback",
          "load: callback (gRPC's callback API from one thread: the client's cost per request "
          "stays small), blocking (a thread per request in flight, each a blocking call) or queue "
          "(gRPC's completion queues, one per connection up to the hardware threads, the requests "
          "serialized once: the least client CPU a request)");
ABSL_FLAG(int64_t, batch, 1,
          "load: matrices per request; > 1 sends batched LU factorizations (--op=lu only)");
ABSL_FLAG(double, duration, 0,
          "load: seconds after which no new request starts; 0 = until --requests are sent");

namespace matrixd {
namespace {

constexpr absl::string_view kUsage =
    "matrixctl [flags] COMMAND [FILE.npy|FILE.mtx|@HANDLE ...]\n"
    "Commands:\n"
    "  det        determinant of one matrix (--method, --modulus, --return_residues,\n"
    "             --devices N: float64 LU over N GPUs)\n"
    "  factorize  LU, Cholesky or QR of one matrix (--kind, --rhs or --rhs_random; --keep\n"
    "             keeps the factorization for solve, --keep_input A too;\n"
    "             --estimate_condition: rcond and the error bound; --refine with\n"
    "             --refine_precision refines an LU solve; --devices N: LU or\n"
    "             Cholesky over N GPUs)\n"
    "  solve @FACTORIZATION  X for a kept factorization and --rhs or --rhs_random\n"
    "             (--transpose, --residual, --keep, --output)\n"
    "  multiply   product of two matrices (--transpose_a/b, --block_size, --density,\n"
    "             --devices N --multiply_method cannon: one product over N GPUs,\n"
    "             --verify: Freivalds' check of C)\n"
    "  permanent  permanent of one matrix (--method, --precision, --walk, --devices N,\n"
    "             --return_residues)\n"
    "  health     SERVING or NOT_SERVING; exits 0 only when serving\n"
    "  demo       a checked tour of every operation\n"
    "  submit OP  queue det|factorize|multiply|permanent|solve as a job; prints its id\n"
    "             (--job_timeout)\n"
    "  watch ID   follow a job's progress to its result; exits 0 only when it succeeded\n"
    "  cancel ID  stop a queued or running job\n"
    "  job ID     a job's state, and its result once done\n"
    "  upload FILE       keep a matrix on the server; prints its handle (--streams,\n"
    "                    --layout single|distributed)\n"
    "  download HANDLE   fetch a resident matrix into --output F.npy\n"
    "  generate KIND N   make a resident N x N random|identity|hilbert matrix on the server,\n"
    "                    no upload (--dtype, --seed, --layout); prints its handle\n"
    "  ls                the resident matrices\n"
    "  rm HANDLE ...     release resident matrices\n"
    "  shm list          the shared-memory regions registered with the server\n"
    "  load       many concurrent requests (--op, --n, --requests, --concurrency, --connections,\n"
    "             --load_api, --batch, --duration, --dtype, --method, --seed); prints throughput "
    "and latency;\n"
    "             exits 1 when any request failed\n"
    "Inputs are files, @HANDLE (a resident matrix; a unique prefix of its handle will do), or\n"
    "--random N (--dtype, --seed) or --hilbert N. --keep keeps results on the server.\n"
    "--shm (same host only) sends inputs and results through shared memory instead of gRPC.\n"
    "Security: --tls_ca, --tls_cert, --tls_key, --tls_server_name (TLS, mutual TLS), --token,\n"
    "--token_file or $MATRIXD_TOKEN (a server with --auth_tokens).";

// Usage errors carry this payload so that main() can tell them from failures (exit 2, not 1).
constexpr absl::string_view kUsagePayload = "matrixctl/usage";

absl::Status UsageError(absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kUsagePayload, absl::Cord("1"));
  return status;
}

bool IsUsageError(const absl::Status& status) {
  return status.GetPayload(kUsagePayload).has_value();
}

absl::StatusOr<v1::DType> GeneratedDType() {
  const std::string name = absl::GetFlag(FLAGS_dtype);
  absl::StatusOr<v1::DType> dtype = ParseDType(name.empty() ? "float64" : name);
  if (!dtype.ok()) return UsageError(absl::StrCat("--dtype: ", dtype.status().message()));
  return dtype;
}

// An operand: a matrix sent inline, or a resident matrix named by its handle.
struct Input {
  v1::Matrix matrix;
  std::optional<v1::ResidentMatrix> resident;

  int64_t rows() const { return resident ? resident->rows() : matrix.rows(); }
  v1::DType dtype() const { return resident ? resident->dtype() : matrix.dtype(); }

  static Input Inline(v1::Matrix matrix) { return {std::move(matrix), std::nullopt}; }
  static Input Resident(v1::ResidentMatrix resident) { return {{}, std::move(resident)}; }
};

// Puts the input in the request's inline field or, for a resident one, its reference field.
void SetOperand(Input input, const std::function<v1::Matrix*()>& inline_field,
                const std::function<v1::MatrixRef*()>& ref_field) {
  if (input.resident) {
    ref_field()->set_handle(input.resident->handle());
  } else {
    *inline_field() = std::move(input.matrix);
  }
}

// A file, or "@HANDLE" resolved on the server.
absl::StatusOr<Input> ReadInput(Client& client, const std::string& argument) {
  if (std::optional<std::string> prefix = HandleArgument(argument)) {
    if (!absl::GetFlag(FLAGS_dtype).empty()) {
      return UsageError(absl::StrCat("--dtype cannot convert the resident matrix ", argument));
    }
    absl::StatusOr<v1::ResidentMatrix> resident = ResolveHandle(client, *prefix);
    if (!resident.ok()) return resident.status();
    return Input::Resident(*std::move(resident));
  }
  absl::StatusOr<v1::Matrix> matrix = ReadMatrixFile(argument);
  if (!matrix.ok()) return matrix.status();
  return Input::Inline(*std::move(matrix));
}

// The command's `count` inputs, from files or handles, or from --random / --hilbert.
absl::StatusOr<std::vector<Input>> LoadInputs(Client& client, const std::vector<std::string>& files,
                                              size_t count) {
  const int64_t random = absl::GetFlag(FLAGS_random);
  const int64_t hilbert = absl::GetFlag(FLAGS_hilbert);
  if (random < 0 || hilbert < 0) return UsageError("--random and --hilbert take a size N > 0");
  if (random > 0 && hilbert > 0) return UsageError("give --random or --hilbert, not both");
  const bool generated = random > 0 || hilbert > 0;
  if (generated && !files.empty()) {
    return UsageError("give input files or --random/--hilbert, not both");
  }
  std::vector<Input> inputs;
  if (!generated) {
    if (files.size() != count) {
      return UsageError(absl::StrCat("this command takes ", count, " input file(s), got ",
                                     files.size(), " (or use --random N / --hilbert N)"));
    }
    const std::string dtype_name = absl::GetFlag(FLAGS_dtype);
    for (const std::string& file : files) {
      absl::StatusOr<Input> input = ReadInput(client, file);
      if (!input.ok()) return input.status();
      if (input->resident) {
        inputs.push_back(*std::move(input));
        continue;
      }
      absl::StatusOr<v1::Matrix> matrix = std::move(input->matrix);
      if (!dtype_name.empty()) {
        absl::StatusOr<v1::DType> dtype = GeneratedDType();
        if (!dtype.ok()) return dtype.status();
        matrix = ConvertMatrix(*matrix, *dtype);
        if (!matrix.ok()) {
          return absl::Status(matrix.status().code(),
                              absl::StrCat(file, ": --dtype: ", matrix.status().message()));
        }
      }
      inputs.push_back(Input::Inline(*std::move(matrix)));
    }
    return inputs;
  }
  absl::StatusOr<v1::DType> dtype = GeneratedDType();
  if (!dtype.ok()) return dtype.status();
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const int64_t block_size = absl::GetFlag(FLAGS_block_size);
  const double density = absl::GetFlag(FLAGS_density);
  for (size_t k = 0; k < count; ++k) {
    if (hilbert > 0) {
      absl::StatusOr<v1::Matrix> matrix = HilbertMatrix(hilbert, *dtype);
      if (!matrix.ok()) return UsageError(matrix.status().message());
      inputs.push_back(Input::Inline(*std::move(matrix)));
    } else if (density < 1.0) {
      inputs.push_back(Input::Inline(
          RandomBlockSparseMatrix(random, random, *dtype, seed + k, block_size, density)));
    } else {
      inputs.push_back(Input::Inline(RandomMatrix(random, random, *dtype, seed + k)));
    }
  }
  return inputs;
}

absl::Status WriteOutput(const v1::Matrix& matrix, const std::string& path) {
  if (absl::Status status = WriteNpyFile(matrix, path); !status.ok()) return status;
  std::cout << "wrote " << matrix.rows() << " x " << matrix.cols() << " "
            << DTypeFlagName(matrix.dtype()) << " to " << path << "\n";
  return absl::OkStatus();
}

absl::Status NoOutputFor(absl::string_view command) {
  if (absl::GetFlag(FLAGS_output).empty()) return absl::OkStatus();
  return UsageError(absl::StrCat("--output: ", command, " has no result matrix to write"));
}

absl::Status NoResultFor(absl::string_view command) {
  if (absl::GetFlag(FLAGS_keep)) {
    return UsageError(absl::StrCat("--keep: ", command, " has no result matrix to keep"));
  }
  return NoOutputFor(command);
}

// --keep: results stay on the server; they come back inline too when --output wants them.
v1::ResultOptions ResultOptionsFromFlags() {
  v1::ResultOptions options;
  options.set_keep_result(absl::GetFlag(FLAGS_keep));
  options.set_also_inline(options.keep_result() && !absl::GetFlag(FLAGS_output).empty());
  return options;
}

// The shape of an operand the request carries inline or names by handle.
absl::StatusOr<ResultShape> OperandShape(Client& client, bool is_inline, const v1::Matrix& matrix,
                                         const v1::MatrixRef& ref) {
  if (is_inline) return ResultShape{"", matrix.rows(), matrix.cols(), matrix.dtype()};
  absl::StatusOr<v1::ResidentMatrix> resident = ResolveHandle(client, ref.handle());
  if (!resident.ok()) return resident.status();
  return ResultShape{"", resident->rows(), resident->cols(), resident->dtype()};
}

// --shm: the request's inline inputs moved into a new region (it says so on stderr) and its
// `results` pointed there; nullopt without --shm. The region is removed when destroyed.
absl::StatusOr<std::optional<SharedMemoryRegion>> StageIfAsked(
    Client& client, google::protobuf::Message& request, const std::vector<ResultShape>& results) {
  if (!absl::GetFlag(FLAGS_shm)) return std::nullopt;
  if (absl::GetFlag(FLAGS_keep)) {
    return UsageError("--shm and --keep: results go into shared memory or stay on the server");
  }
  absl::StatusOr<SharedMemoryRegion> region = StageInSharedMemory(
      client, request, results, absl::StrCat("matrixctl-", getpid()), std::cerr);
  if (!region.ok()) return region.status();
  return std::optional<SharedMemoryRegion>(*std::move(region));
}

const SharedMemoryRegion* RegionOf(const std::optional<SharedMemoryRegion>& region) {
  return region ? &*region : nullptr;
}

// What det, factorize and permanent share: --devices, and the one input (a file, a generator or
// @HANDLE) in the request's `matrix` or `matrix_ref` field. Returns the input's rows and dtype.
struct OperandFacts {
  int64_t rows = 0;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
};
template <typename Request>
absl::StatusOr<OperandFacts> SetDevicesAndMatrix(Client& client,
                                                 const std::vector<std::string>& files,
                                                 Request& request) {
  if (absl::GetFlag(FLAGS_devices) < 0) return UsageError("--devices must be >= 0");
  request.set_devices(absl::GetFlag(FLAGS_devices));
  absl::StatusOr<std::vector<Input>> inputs = LoadInputs(client, files, 1);
  if (!inputs.ok()) return inputs.status();
  const OperandFacts facts{.rows = (*inputs)[0].rows(), .dtype = (*inputs)[0].dtype()};
  SetOperand(
      std::move((*inputs)[0]), [&] { return request.mutable_matrix(); },
      [&] { return request.mutable_matrix_ref(); });
  return facts;
}

absl::StatusOr<v1::DeterminantRequest> DeterminantRequestFromFlags(
    Client& client, const std::vector<std::string>& files) {
  v1::DeterminantRequest request;
  absl::StatusOr<v1::DeterminantMethod> method =
      ParseDeterminantMethod(absl::GetFlag(FLAGS_method));
  if (!method.ok()) return UsageError(method.status().message());
  request.set_method(*method);
  request.set_modulus(absl::GetFlag(FLAGS_modulus));
  request.set_return_residues(absl::GetFlag(FLAGS_return_residues));
  request.set_deterministic(absl::GetFlag(FLAGS_deterministic));
  absl::StatusOr<OperandFacts> operand = SetDevicesAndMatrix(client, files, request);
  if (!operand.ok()) return operand.status();
  return request;
}

absl::Status Determinant(Client& client, const std::vector<std::string>& files) {
  if (absl::Status status = NoResultFor("det"); !status.ok()) return status;
  absl::StatusOr<v1::DeterminantRequest> request = DeterminantRequestFromFlags(client, files);
  if (!request.ok()) return request.status();
  absl::StatusOr<std::optional<SharedMemoryRegion>> region = StageIfAsked(client, *request, {});
  if (!region.ok()) return region.status();
  return RunDeterminant(client, *request, std::cout).status();
}

// --rhs (a file converted to `dtype`, or @HANDLE) or --rhs_random (`rows` x K of `dtype`) into
// the request's inline or reference field; nothing when neither flag is given.
absl::Status SetRhsFromFlags(Client& client, int64_t rows, v1::DType dtype,
                             const std::function<v1::Matrix*()>& inline_field,
                             const std::function<v1::MatrixRef*()>& ref_field) {
  const std::string rhs_file = absl::GetFlag(FLAGS_rhs);
  const int64_t rhs_random = absl::GetFlag(FLAGS_rhs_random);
  if (!rhs_file.empty() && rhs_random != 0) {
    return UsageError("give --rhs or --rhs_random, not both");
  }
  if (rhs_random < 0) return UsageError("--rhs_random takes a column count K > 0");
  if (std::optional<std::string> prefix = HandleArgument(rhs_file)) {
    absl::StatusOr<v1::ResidentMatrix> rhs = ResolveHandle(client, *prefix);
    if (!rhs.ok()) return rhs.status();
    ref_field()->set_handle(rhs->handle());
  } else if (!rhs_file.empty()) {
    absl::StatusOr<v1::Matrix> rhs = ReadMatrixFile(rhs_file);
    if (!rhs.ok()) return rhs.status();
    // The server wants the right-hand side in the matrix's dtype; convert here, once.
    rhs = ConvertMatrix(*rhs, dtype);
    if (!rhs.ok()) {
      return absl::Status(rhs.status().code(),
                          absl::StrCat(rhs_file, ": ", rhs.status().message()));
    }
    *inline_field() = *std::move(rhs);
  } else if (rhs_random > 0) {
    *inline_field() = RandomMatrix(rows, rhs_random, dtype, absl::GetFlag(FLAGS_seed) + 1000);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::FactorizeRequest> FactorizeRequestFromFlags(
    Client& client, const std::vector<std::string>& files) {
  v1::FactorizeRequest request;
  const std::string kind = absl::GetFlag(FLAGS_kind);
  if (kind == "lu") {
    request.set_kind(v1::FACTORIZATION_KIND_LU);
  } else if (kind == "cholesky") {
    request.set_kind(v1::FACTORIZATION_KIND_CHOLESKY);
  } else if (kind == "qr") {
    request.set_kind(v1::FACTORIZATION_KIND_QR);
  } else {
    return UsageError(absl::StrCat("--kind '", kind, "': want lu, cholesky or qr"));
  }
  if (absl::GetFlag(FLAGS_keep_input) && !absl::GetFlag(FLAGS_keep)) {
    return UsageError("--keep_input needs --keep");
  }
  request.set_keep_input(absl::GetFlag(FLAGS_keep_input));
  request.set_estimate_condition(absl::GetFlag(FLAGS_estimate_condition));
  request.set_deterministic(absl::GetFlag(FLAGS_deterministic));
  const std::string refine_precision = absl::GetFlag(FLAGS_refine_precision);
  if (refine_precision == "float32") {
    request.set_refine_factor_precision(v1::REFINE_PRECISION_FLOAT32);
  } else if (refine_precision == "tf32") {
    request.set_refine_factor_precision(v1::REFINE_PRECISION_TF32);
  } else if (refine_precision == "float16") {
    request.set_refine_factor_precision(v1::REFINE_PRECISION_FLOAT16);
  } else if (refine_precision != "input") {
    return UsageError(absl::StrCat("--refine_precision '", refine_precision,
                                   "': want input, float32, tf32 or float16"));
  }
  const bool refine = absl::GetFlag(FLAGS_refine);
  if (!refine && (refine_precision != "input" || absl::GetFlag(FLAGS_refine_max_iterations) != 0)) {
    return UsageError("--refine_precision and --refine_max_iterations need --refine");
  }
  request.set_refine(refine);
  request.set_refine_max_iterations(absl::GetFlag(FLAGS_refine_max_iterations));
  absl::StatusOr<OperandFacts> a = SetDevicesAndMatrix(client, files, request);
  if (!a.ok()) return a.status();
  *request.mutable_result_options() = ResultOptionsFromFlags();
  if (absl::Status status = SetRhsFromFlags(
          client, a->rows, a->dtype, [&] { return request.mutable_rhs(); },
          [&] { return request.mutable_rhs_ref(); });
      !status.ok()) {
    return status;
  }
  return request;
}

absl::StatusOr<v1::SolveTranspose> ParseSolveTranspose(absl::string_view name) {
  if (name == "none") return v1::SOLVE_TRANSPOSE_NONE;
  if (name == "transpose") return v1::SOLVE_TRANSPOSE_TRANSPOSE;
  if (name == "conjugate") return v1::SOLVE_TRANSPOSE_CONJUGATE;
  return UsageError(absl::StrCat("--transpose '", name, "': want none, transpose or conjugate"));
}

// solve @FACTORIZATION: op(A) X = B with a factorization that factorize --keep made.
absl::StatusOr<v1::SolveRequest> SolveRequestFromFlags(Client& client,
                                                       const std::vector<std::string>& args) {
  std::optional<std::string> prefix = args.size() == 1 ? HandleArgument(args[0]) : std::nullopt;
  if (!prefix) {
    return UsageError("solve takes one @HANDLE: the factorization that factorize --keep kept");
  }
  absl::StatusOr<v1::ResidentMatrix> factorization = ResolveHandle(client, *prefix);
  if (!factorization.ok()) return factorization.status();
  if (absl::GetFlag(FLAGS_rhs).empty() && absl::GetFlag(FLAGS_rhs_random) == 0) {
    return UsageError("solve needs a right-hand side: --rhs FILE|@HANDLE or --rhs_random K");
  }
  v1::SolveRequest request;
  request.mutable_factorization()->set_handle(factorization->handle());
  absl::StatusOr<v1::SolveTranspose> transpose =
      ParseSolveTranspose(absl::GetFlag(FLAGS_transpose));
  if (!transpose.ok()) return transpose.status();
  request.set_transpose(*transpose);
  request.set_residual(absl::GetFlag(FLAGS_residual));
  request.set_deterministic(absl::GetFlag(FLAGS_deterministic));
  *request.mutable_result_options() = ResultOptionsFromFlags();
  // B has op(A)'s rows: A's rows, or its columns when transposed.
  const int64_t rows =
      *transpose == v1::SOLVE_TRANSPOSE_NONE ? factorization->rows() : factorization->cols();
  if (absl::Status status = SetRhsFromFlags(
          client, rows, factorization->dtype(), [&] { return request.mutable_rhs(); },
          [&] { return request.mutable_rhs_ref(); });
      !status.ok()) {
    return status;
  }
  return request;
}

absl::Status Solve(Client& client, const std::vector<std::string>& args) {
  absl::StatusOr<v1::SolveRequest> request = SolveRequestFromFlags(client, args);
  if (!request.ok()) return request.status();
  std::vector<ResultShape> results;
  if (absl::GetFlag(FLAGS_shm)) {
    // X has op(A)'s columns as rows (the factor's columns; its rows when transposed) and B's
    // columns.
    absl::StatusOr<v1::ResidentMatrix> factorization =
        ResolveHandle(client, request->factorization().handle());
    if (!factorization.ok()) return factorization.status();
    absl::StatusOr<ResultShape> rhs =
        OperandShape(client, request->has_rhs(), request->rhs(), request->rhs_ref());
    if (!rhs.ok()) return rhs.status();
    results.push_back({"solution",
                       request->transpose() == v1::SOLVE_TRANSPOSE_NONE ? factorization->cols()
                                                                        : factorization->rows(),
                       rhs->cols, factorization->dtype()});
  }
  absl::StatusOr<std::optional<SharedMemoryRegion>> region =
      StageIfAsked(client, *request, results);
  if (!region.ok()) return region.status();
  absl::StatusOr<v1::SolveResponse> response =
      RunSolve(client, *request, std::cout, RegionOf(*region));
  if (!response.ok()) return response.status();
  const std::string output = absl::GetFlag(FLAGS_output);
  return output.empty() ? absl::OkStatus() : WriteOutput(response->solution(), output);
}

// The result matrices of a factorization: LU's lu, Cholesky's l, QR's q and r; the solution
// when there is a right-hand side.
absl::StatusOr<std::vector<ResultShape>> FactorizeResultShapes(
    Client& client, const v1::FactorizeRequest& request) {
  absl::StatusOr<ResultShape> a =
      OperandShape(client, request.has_matrix(), request.matrix(), request.matrix_ref());
  if (!a.ok()) return a.status();
  const int64_t m = a->rows;
  const int64_t n = a->cols;
  const int64_t k = std::min(m, n);
  std::vector<ResultShape> results;
  switch (request.kind()) {
    case v1::FACTORIZATION_KIND_LU:
      results.push_back({"lu", m, n, a->dtype});
      break;
    case v1::FACTORIZATION_KIND_CHOLESKY:
      results.push_back({"l", n, n, a->dtype});
      break;
    default:
      results.push_back({"q", m, k, a->dtype});
      results.push_back({"r", k, n, a->dtype});
  }
  if (request.has_rhs() || request.has_rhs_ref()) {
    absl::StatusOr<ResultShape> rhs =
        OperandShape(client, request.has_rhs(), request.rhs(), request.rhs_ref());
    if (!rhs.ok()) return rhs.status();
    results.push_back({"solution", n, rhs->cols, a->dtype});
  }
  return results;
}

absl::Status Factorize(Client& client, const std::vector<std::string>& files) {
  absl::StatusOr<v1::FactorizeRequest> built = FactorizeRequestFromFlags(client, files);
  if (!built.ok()) return built.status();
  std::vector<ResultShape> results;
  if (absl::GetFlag(FLAGS_shm)) {
    absl::StatusOr<std::vector<ResultShape>> shapes = FactorizeResultShapes(client, *built);
    if (!shapes.ok()) return shapes.status();
    results = *std::move(shapes);
  }
  absl::StatusOr<std::optional<SharedMemoryRegion>> region = StageIfAsked(client, *built, results);
  if (!region.ok()) return region.status();
  const v1::FactorizeRequest& request = *built;
  absl::StatusOr<FactorizeReport> report =
      RunFactorize(client, request, std::cout, RegionOf(*region));
  if (!report.ok()) return report.status();
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output.empty()) return absl::OkStatus();
  const v1::FactorizeResponse& response = report->response;
  if (response.has_solution()) return WriteOutput(response.solution(), output);
  switch (request.kind()) {
    case v1::FACTORIZATION_KIND_LU:
      return WriteOutput(response.lu(), output);
    case v1::FACTORIZATION_KIND_CHOLESKY:
      return WriteOutput(response.l(), output);
    default: {
      if (absl::Status status = WriteOutput(response.q(), output); !status.ok()) return status;
      std::string r_path = output;
      if (absl::EndsWith(r_path, ".npy")) r_path.resize(r_path.size() - 4);
      return WriteOutput(response.r(), absl::StrCat(r_path, "_r.npy"));
    }
  }
}

absl::StatusOr<v1::MultiplyRequest> MultiplyRequestFromFlags(
    Client& client, const std::vector<std::string>& files) {
  v1::MultiplyRequest request;
  request.set_transpose_a(absl::GetFlag(FLAGS_transpose_a));
  request.set_transpose_b(absl::GetFlag(FLAGS_transpose_b));
  request.set_allow_tf32(absl::GetFlag(FLAGS_allow_tf32));
  request.set_verify(absl::GetFlag(FLAGS_verify));
  request.set_deterministic(absl::GetFlag(FLAGS_deterministic));
  const int64_t block_size = absl::GetFlag(FLAGS_block_size);
  const double density = absl::GetFlag(FLAGS_density);
  if (block_size < 0) return UsageError("--block_size must be >= 0");
  if (!(density >= 0 && density <= 1)) return UsageError("--density must be in [0, 1]");
  if (density < 1 && (block_size == 0 || absl::GetFlag(FLAGS_random) == 0)) {
    return UsageError("--density needs --random N and --block_size B");
  }
  request.set_block_size(block_size);
  const int devices = absl::GetFlag(FLAGS_devices);
  if (devices < 0) return UsageError("--devices must be >= 0");
  request.set_devices(devices);
  const std::string method = absl::GetFlag(FLAGS_multiply_method);
  if (method == "cannon") {
    request.set_method(v1::MULTIPLY_METHOD_CANNON);
  } else if (method == "cublasmp") {
    request.set_method(v1::MULTIPLY_METHOD_CUBLASMP);
  } else if (method != "auto") {
    return UsageError("--multiply_method must be auto, cannon or cublasmp");
  }
  absl::StatusOr<std::vector<Input>> inputs = LoadInputs(client, files, 2);
  if (!inputs.ok()) return inputs.status();
  SetOperand(
      std::move((*inputs)[0]), [&] { return request.mutable_a(); },
      [&] { return request.mutable_a_ref(); });
  SetOperand(
      std::move((*inputs)[1]), [&] { return request.mutable_b(); },
      [&] { return request.mutable_b_ref(); });
  *request.mutable_result_options() = ResultOptionsFromFlags();
  return request;
}

absl::Status Multiply(Client& client, const std::vector<std::string>& files) {
  absl::StatusOr<v1::MultiplyRequest> request = MultiplyRequestFromFlags(client, files);
  if (!request.ok()) return request.status();
  std::vector<ResultShape> results;
  if (absl::GetFlag(FLAGS_shm)) {
    absl::StatusOr<ResultShape> a =
        OperandShape(client, request->has_a(), request->a(), request->a_ref());
    if (!a.ok()) return a.status();
    absl::StatusOr<ResultShape> b =
        OperandShape(client, request->has_b(), request->b(), request->b_ref());
    if (!b.ok()) return b.status();
    results.push_back({"c", request->transpose_a() ? a->cols : a->rows,
                       request->transpose_b() ? b->rows : b->cols, a->dtype});
  }
  absl::StatusOr<std::optional<SharedMemoryRegion>> region =
      StageIfAsked(client, *request, results);
  if (!region.ok()) return region.status();
  absl::StatusOr<v1::MultiplyResponse> response =
      RunMultiply(client, *request, std::cout, RegionOf(*region));
  if (!response.ok()) return response.status();
  const std::string output = absl::GetFlag(FLAGS_output);
  return output.empty() ? absl::OkStatus() : WriteOutput(response->c(), output);
}

absl::StatusOr<v1::PermanentRequest> PermanentRequestFromFlags(
    Client& client, const std::vector<std::string>& files) {
  v1::PermanentRequest request;
  absl::StatusOr<v1::PermanentMethod> method = ParsePermanentMethod(absl::GetFlag(FLAGS_method));
  if (!method.ok()) return UsageError(method.status().message());
  request.set_method(*method);
  request.set_deterministic(absl::GetFlag(FLAGS_deterministic));
  absl::StatusOr<v1::PermanentPrecision> precision =
      ParsePermanentPrecision(absl::GetFlag(FLAGS_precision));
  if (!precision.ok()) return UsageError(precision.status().message());
  request.set_precision(*precision);
  absl::StatusOr<v1::PermanentWalk> walk = ParsePermanentWalk(absl::GetFlag(FLAGS_walk));
  if (!walk.ok()) return UsageError(walk.status().message());
  request.set_walk(*walk);
  request.set_return_residues(absl::GetFlag(FLAGS_return_residues));
  absl::StatusOr<OperandFacts> operand = SetDevicesAndMatrix(client, files, request);
  if (!operand.ok()) return operand.status();
  return request;
}

absl::Status Permanent(Client& client, const std::vector<std::string>& files) {
  if (absl::Status status = NoResultFor("permanent"); !status.ok()) return status;
  absl::StatusOr<v1::PermanentRequest> request = PermanentRequestFromFlags(client, files);
  if (!request.ok()) return request.status();
  absl::StatusOr<std::optional<SharedMemoryRegion>> region = StageIfAsked(client, *request, {});
  if (!region.ok()) return region.status();
  return RunPermanent(client, *request, std::cout).status();
}

// submit OP [inputs]: the request OP would send, queued as a job.
absl::Status Submit(Client& client, const std::vector<std::string>& args) {
  if (args.empty()) {
    return UsageError("submit takes an operation: det|factorize|multiply|permanent|solve");
  }
  if (absl::Status status = NoOutputFor("submit"); !status.ok()) return status;
  const std::string& op = args[0];
  const std::vector<std::string> files(args.begin() + 1, args.end());
  v1::JobRequest job;
  job.set_timeout_seconds(absl::GetFlag(FLAGS_job_timeout));
  if (!(job.timeout_seconds() >= 0)) return UsageError("--job_timeout must be >= 0");
  absl::Status built;
  if (op == "det") {
    absl::StatusOr<v1::DeterminantRequest> request = DeterminantRequestFromFlags(client, files);
    if (request.ok()) *job.mutable_determinant() = *std::move(request);
    built = request.status();
  } else if (op == "factorize") {
    absl::StatusOr<v1::FactorizeRequest> request = FactorizeRequestFromFlags(client, files);
    if (request.ok()) *job.mutable_factorize() = *std::move(request);
    built = request.status();
  } else if (op == "multiply") {
    absl::StatusOr<v1::MultiplyRequest> request = MultiplyRequestFromFlags(client, files);
    if (request.ok()) *job.mutable_multiply() = *std::move(request);
    built = request.status();
  } else if (op == "permanent") {
    absl::StatusOr<v1::PermanentRequest> request = PermanentRequestFromFlags(client, files);
    if (request.ok()) *job.mutable_permanent() = *std::move(request);
    built = request.status();
  } else if (op == "solve") {
    absl::StatusOr<v1::SolveRequest> request = SolveRequestFromFlags(client, files);
    if (request.ok()) *job.mutable_solve() = *std::move(request);
    built = request.status();
  } else {
    return UsageError(absl::StrCat("submit: unknown operation '", op,
                                   "'; want det|factorize|multiply|permanent|solve"));
  }
  if (!built.ok()) return built;
  return RunSubmit(client, job, std::cout);
}

TransferDisplay TerminalDisplay() {
  return {.out = &std::cout, .terminal = isatty(STDOUT_FILENO) == 1};
}

// --layout as the proto enum.
absl::StatusOr<v1::ResidentLayout> LayoutFlag() {
  const std::string layout = absl::GetFlag(FLAGS_layout);
  if (layout == "single") return v1::RESIDENT_LAYOUT_SINGLE_DEVICE;
  if (layout == "distributed") return v1::RESIDENT_LAYOUT_DISTRIBUTED;
  return UsageError(absl::StrCat("--layout is '", layout, "'; want single or distributed"));
}

// upload FILE (or --random N / --hilbert N).
absl::Status Upload(Client& client, const std::vector<std::string>& files) {
  if (absl::Status status = NoResultFor("upload"); !status.ok()) return status;
  if (files.size() == 1 && HandleArgument(files[0])) {
    return UsageError("upload takes a file; " + files[0] + " is already on the server");
  }
  const int streams = absl::GetFlag(FLAGS_streams);
  if (streams < 1) return UsageError("--streams must be >= 1");
  absl::StatusOr<std::vector<Input>> inputs = LoadInputs(client, files, 1);
  if (!inputs.ok()) return inputs.status();
  absl::StatusOr<v1::ResidentLayout> layout = LayoutFlag();
  if (!layout.ok()) return layout.status();
  UploadOptions options;
  options.parallel_streams = streams;
  options.layout = *layout;
  if (files.size() == 1) options.label = files[0];
  return RunUpload(client, (*inputs)[0].matrix, options, TerminalDisplay(), std::cout, std::cerr);
}

// generate random|identity|hilbert N.
absl::Status Generate(Client& client, const std::vector<std::string>& args) {
  if (absl::Status status = NoResultFor("generate"); !status.ok()) return status;
  if (args.size() != 2) return UsageError("generate takes KIND N (random|identity|hilbert)");
  static const auto* const kGenerators =
      new std::map<std::string, v1::Generator>{{"random", v1::GENERATOR_RANDOM},
                                               {"identity", v1::GENERATOR_IDENTITY},
                                               {"hilbert", v1::GENERATOR_HILBERT}};
  const auto generator = kGenerators->find(args[0]);
  if (generator == kGenerators->end()) {
    return UsageError(
        absl::StrCat("generate: unknown kind '", args[0], "'; want random|identity|hilbert"));
  }
  int64_t n = 0;
  if (!absl::SimpleAtoi(args[1], &n) || n < 1) {
    return UsageError(absl::StrCat("generate: N must be a positive integer, not '", args[1], "'"));
  }
  absl::StatusOr<v1::DType> dtype = GeneratedDType();
  if (!dtype.ok()) return dtype.status();
  absl::StatusOr<v1::ResidentLayout> layout = LayoutFlag();
  if (!layout.ok()) return layout.status();
  v1::GenerateRequest request;
  request.set_layout(*layout);
  request.set_rows(n);
  request.set_cols(n);
  request.set_dtype(*dtype);
  request.set_generator(generator->second);
  request.set_seed(absl::GetFlag(FLAGS_seed));
  request.set_label(absl::StrCat(args[0], " ", n));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<v1::ResidentMatrix> made = client.Generate(request);
  if (!made.ok()) return made.status();
  std::cout << made->handle() << std::endl;
  std::cerr << "generated " << args[0] << " " << n << " x " << n << " on the server in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s (" << made->device() << ")" << std::endl;
  return absl::OkStatus();
}

// download HANDLE --output F.npy.
absl::Status Download(Client& client, const std::vector<std::string>& args) {
  if (args.size() != 1) return UsageError("download takes one handle");
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output.empty()) return UsageError("download needs --output F.npy");
  const std::string handle = HandleArgument(args[0]).value_or(args[0]);
  return RunDownload(client, handle, output, TerminalDisplay(), std::cout);
}

// rm HANDLE ...
absl::Status Remove(Client& client, const std::vector<std::string>& args) {
  if (args.empty()) return UsageError("rm takes one or more handles");
  std::vector<std::string> handles;
  for (const std::string& arg : args) handles.push_back(HandleArgument(arg).value_or(arg));
  return RunRelease(client, handles, std::cout);
}

// watch|cancel|job ID.
absl::StatusOr<std::string> JobIdArgument(absl::string_view command,
                                          const std::vector<std::string>& args) {
  if (args.size() != 1) return UsageError(absl::StrCat(command, " takes one job id"));
  return args[0];
}

// Exit status of `health`: 0 only when the server reports SERVING.
absl::StatusOr<bool> Health(Client& client, const std::vector<std::string>& files) {
  if (!files.empty()) return UsageError("health takes no inputs");
  absl::StatusOr<bool> serving = client.Healthy();
  if (!serving.ok()) return serving.status();
  std::cout << (*serving ? "SERVING" : "NOT_SERVING") << "\n";
  return *serving;
}

absl::Status Demo(Client& client, const std::vector<std::string>& files) {
  if (!files.empty()) return UsageError("demo takes no inputs");
  if (absl::Status status = NoResultFor("demo"); !status.ok()) return status;
  return RunDemo(client, std::cout, absl::GetFlag(FLAGS_seed));
}

// load: the whole run; FAILED_PRECONDITION after printing the table when any request failed.
// TLS and the token from --tls_*, --token, --token_file and MATRIXD_TOKEN.
absl::Status SetSecurityFromFlags(ClientOptions& options) {
  const std::string ca = absl::GetFlag(FLAGS_tls_ca);
  const std::string cert = absl::GetFlag(FLAGS_tls_cert);
  const std::string key = absl::GetFlag(FLAGS_tls_key);
  const std::string server_name = absl::GetFlag(FLAGS_tls_server_name);
  if (absl::GetFlag(FLAGS_tls) || !ca.empty() || !cert.empty() || !key.empty() ||
      !server_name.empty()) {
    absl::StatusOr<ClientTls> tls = ReadClientTls(ca, cert, key, server_name);
    if (!tls.ok()) return UsageError(tls.status().message());
    options.tls = *std::move(tls);
  }
  absl::StatusOr<std::string> token =
      ResolveToken(absl::GetFlag(FLAGS_token), absl::GetFlag(FLAGS_token_file));
  if (!token.ok()) return UsageError(token.status().message());
  options.token = *std::move(token);
  return absl::OkStatus();
}

absl::Status Load(const ClientOptions& client_options, const std::vector<std::string>& args) {
  if (!args.empty()) return UsageError("load takes no inputs; it generates them (--n, --dtype)");
  if (absl::Status status = NoResultFor("load"); !status.ok()) return status;
  LoadOptions options;
  absl::StatusOr<LoadOp> op = ParseLoadOp(absl::GetFlag(FLAGS_op));
  if (!op.ok()) return UsageError(op.status().message());
  absl::StatusOr<v1::DType> dtype = GeneratedDType();
  if (!dtype.ok()) return dtype.status();
  const double duration = absl::GetFlag(FLAGS_duration);
  if (!(duration >= 0)) return UsageError("--duration must be >= 0");
  options.op = *op;
  options.n = absl::GetFlag(FLAGS_n);
  options.dtype = *dtype;
  options.method = absl::GetFlag(FLAGS_method);
  options.requests = absl::GetFlag(FLAGS_requests);
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.connections = absl::GetFlag(FLAGS_connections);
  absl::StatusOr<LoadApi> api = ParseLoadApi(absl::GetFlag(FLAGS_load_api));
  if (!api.ok()) return UsageError(api.status().message());
  options.api = *api;
  options.batch = absl::GetFlag(FLAGS_batch);
  options.duration = absl::Seconds(duration);
  options.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status status = ValidateLoadOptions(options); !status.ok()) {
    return UsageError(status.message());
  }
  absl::StatusOr<LoadReport> report = RunLoad(absl::GetFlag(FLAGS_server), client_options, options);
  if (!report.ok()) return report.status();
  std::cout << FormatLoadReport(*report);
  const int64_t failed = report->tally.requests - report->tally.ok_requests;
  if (failed == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(failed, " of ", report->tally.requests, " requests failed"));
}

// absl::ParseCommandLine exits with status 1 on an unknown flag or a bad value; matrixctl's
// contract is 2 for usage errors, so the flags are checked first.
absl::Status CheckFlagSyntax(int argc, char** argv) {
  for (int k = 1; k < argc; ++k) {
    absl::string_view arg = argv[k];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    const size_t equals = arg.find('=');
    const absl::string_view name = arg.substr(0, equals);
    // The usage flags (--help, --helpfull, --version...) are not registered flags.
    if (absl::StartsWith(name, "help") || name == "version" || name == "only_check_args") {
      continue;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>() && equals == absl::string_view::npos) {
        continue;
      }
    }
    if (flag == nullptr) return UsageError(absl::StrCat("unknown flag --", name));
    std::string value;
    if (equals != absl::string_view::npos) {
      value = std::string(arg.substr(equals + 1));
    } else if (flag->IsOfType<bool>()) {
      continue;
    } else if (k + 1 < argc) {
      value = argv[++k];
    } else {
      return UsageError(absl::StrCat("flag --", name, " needs a value"));
    }
    // Parsing into the flag is harmless: ParseCommandLine parses the same text again.
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return UsageError(absl::StrCat("--", name, "=", value, ": ", error));
    }
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  auto fail = [](const absl::Status& status) {
    std::cout.flush();
    if (IsUsageError(status)) {
      std::cerr << "matrixctl: usage: " << status.message() << "\nRun 'matrixctl --help'.\n";
      return 2;
    }
    std::cerr << "matrixctl: " << absl::StatusCodeToString(status.code()) << ": "
              << status.message() << "\n";
    return 1;
  };
  if (absl::Status status = CheckFlagSyntax(argc, argv); !status.ok()) return fail(status);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  // Debian's Abseil keeps Mutex deadlock detection on (as server/main.cc says); gRPC's own locks
  // then feed a global lock-order graph on every call (~2-3 % of `load`'s CPU on the VM).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (args.size() < 2) return fail(UsageError(absl::StrCat("no command\n", kUsage)));
  const std::string command = args[1];
  const std::vector<std::string> files(args.begin() + 2, args.end());
  if (absl::GetFlag(FLAGS_deadline) <= absl::ZeroDuration()) {
    return fail(UsageError("--deadline must be positive"));
  }
  if (absl::GetFlag(FLAGS_shm) && command != "det" && command != "factorize" &&
      command != "solve" && command != "multiply" && command != "permanent") {
    return fail(UsageError(absl::StrCat(
        "--shm is for det, factorize, solve, multiply and permanent, not ", command,
        command == "submit" ? " (the region would be gone before the job runs)" : "")));
  }
  ClientOptions options;
  options.deadline = absl::GetFlag(FLAGS_deadline);
  if (absl::Status set = SetSecurityFromFlags(options); !set.ok()) return fail(set);
  Client client(absl::GetFlag(FLAGS_server), options);

  absl::Status status;
  if (command == "det") {
    status = Determinant(client, files);
  } else if (command == "factorize") {
    status = Factorize(client, files);
  } else if (command == "solve") {
    status = Solve(client, files);
  } else if (command == "multiply") {
    status = Multiply(client, files);
  } else if (command == "permanent") {
    status = Permanent(client, files);
  } else if (command == "demo") {
    status = Demo(client, files);
  } else if (command == "submit") {
    status = Submit(client, files);
  } else if (command == "upload") {
    status = Upload(client, files);
  } else if (command == "generate") {
    status = Generate(client, files);
  } else if (command == "download") {
    status = Download(client, files);
  } else if (command == "ls") {
    status = files.empty() ? RunList(client, std::cout) : UsageError("ls takes no arguments");
  } else if (command == "rm") {
    status = Remove(client, files);
  } else if (command == "shm") {
    status = files.size() == 1 && files[0] == "list" ? RunSharedMemoryList(client, std::cout)
                                                     : UsageError("shm takes one subcommand: list");
  } else if (command == "load") {
    status = Load(options, files);
  } else if (command == "watch" || command == "cancel" || command == "job") {
    absl::StatusOr<std::string> id = JobIdArgument(command, files);
    if (!id.ok()) return fail(id.status());
    status = command == "watch"    ? RunWatch(client, *id, std::cout)
             : command == "cancel" ? RunCancel(client, *id, std::cout)
                                   : RunGetJob(client, *id, std::cout);
  } else if (command == "health") {
    absl::StatusOr<bool> serving = Health(client, files);
    if (!serving.ok()) return fail(serving.status());
    return *serving ? 0 : 1;
  } else {
    return fail(UsageError(absl::StrCat("unknown command '", command, "'\n", kUsage)));
  }
  return status.ok() ? 0 : fail(status);
}

}  // namespace
}  // namespace matrixd

int main(int argc, char** argv) { return matrixd::Main(argc, argv); }
