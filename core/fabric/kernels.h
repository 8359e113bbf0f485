#pragma once

#include "core/common/expected.h"
#include "core/common/names.h"
#include "core/fabric/staticcolorfabric.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::fabric {

// Kernels built the way the public SDK examples build them: routes per color plus data tasks
// on a rectangle of PEs (region rows x columns). In the order `fabric --kernel` lists them.
enum class KernelKind : std::uint8_t {
    Gemv, // y = A x: A block-distributed, x multicast down columns, partial y reduced west to east
    GemmStream, // Y = W X: activations resident, weights streamed in from the west edge (zeros skipped)
    RowBroadcast, // column 0 of each row sends a vector to every PE of its row
    ColumnBroadcast, // row 0 of each column sends a vector to every PE of its column
    RowReduce, // each row sums its PEs' vectors into the last column
    ColumnReduce, // each column sums its PEs' vectors into the last row
    GemvTree, // Gemv's y = A x, partial y reduced along each row by a binary tree into its first column
};
const char* kernelName(KernelKind kind);
std::optional<KernelKind> parseKernel(const std::string& name);
std::string kernelNames(); // "gemv|gemm_stream|..."

// A binary reduction tree over `count` PEs in a line, rooted at position 0 (MeshGEMV-style). At
// level l the PEs at odd multiples of 2^l send their vector 2^l positions towards the root, past
// the PEs between (whose routers only pass it on), and the receiver adds it to its own: the hops
// add up to count - 1, but a PE adds once a level, not once a position.
struct ReductionTreeNode {
    int sendLevel = -1; // the lowest set bit of the position; -1 at the root
    std::vector<int> childLevels; // ascending: the child at level l is 2^l positions farther
};
int reductionTreeLevels(int count); // ceil(log2 count)
ReductionTreeNode reductionTreeNode(int position, int count);

struct KernelConfig {
    KernelKind kind = KernelKind::Gemv;
    int matrixRows = 1024; // M (collectives: ignored)
    int matrixCols = 1024; // N (collectives: vector length)
    int regionRows = 32;
    int regionCols = 32;
    double sparsity = 0.0; // GemmStream: share of weights that are zero (only non-zeros are streamed)
    int tokensPerPe = 0; // GemmStream: activation columns per PE; 0 = the SIMD width
    int simdWidth = 8; // FP16 FMACs per PE per cycle, from the preset
    std::int64_t sramPerPeBytes = 48 * 1024;
    int queueDepth = 4;
    int threads = 1;
    std::uint64_t seed = 1;
};

struct KernelResult {
    KernelKind kind = KernelKind::Gemv;
    std::uint64_t cycles = 0; // cycle at which the last output element was final
    double maxAbsError = 0.0; // against a double-precision reference on the same FP16 operands
    double peBusyFraction = 0.0; // PE compute-busy cycles / (PEs x cycles)
    std::uint64_t linkWavelets = 0; // wavelets moved over mesh links
    double wallS = 0.0;
    std::uint64_t fmacs = 0; // FMACs executed by all PEs
    std::uint64_t fmacLowerBoundCycles = 0; // ceil(FMACs / (PEs x SIMD width))
    std::uint64_t streamedWavelets = 0; // GemmStream: weights and row markers sent in
    std::int64_t maxSramBytes = 0; // largest per-PE allocation
};

// What a kernel run holds at its peak, counted from its sizes before anything is allocated: the
// fabric's state (StaticColorFabric::estimateBytes), and the operands: the host's matrices and
// vectors, the PEs' shares of them in SRAM, the weight streams waiting at the edge, and the
// reference and gathered results the check compares. Heap blocks are counted as glibc takes them.
struct KernelFootprint {
    double stateBytes = 0.0;
    double operandBytes = 0.0;
    double bytes() const { return stateBytes + operandBytes; }
};
KernelFootprint estimateKernelFootprint(const KernelConfig& config);

// The fewest router-cycles (cycles x PEs) a run of this configuration can take, from its sizes:
// gemm_stream sends each row of PEs its band of W, at least floor(M / rows) x N x (1 - sparsity)
// wavelets in turn (0.9 of that, for the random sparsity pattern), each taking its PE
// max(1, tokens / SIMD) cycles; gemv's FMACs over every lane of the region; a collective moves
// its vector of N over one link a wavelet a cycle. runKernel refuses a configuration above
// kMaxRouterCyclesPerRun (fabric.h) before it builds anything.
double kernelRouterCyclesLowerBound(const KernelConfig& config);

// Builds the kernel on a region-sized fabric, runs it to completion and checks the result.
// Errors: bad sizes (Diagnostic on the option), a region whose PEs cannot hold their share
// (message starts with "does not fit"), or a run whose footprint exceeds the memory budget
// (exit 3 at --region, or at --matrix or --length when the operands weigh more).
Expected<KernelResult> runKernel(
    const KernelConfig& config, const FabricObserver& observer = {}, std::uint64_t observeEvery = 1024);

// Internal to the kernel builders (kernelbuild.cpp): the operands, the placed fabric and the
// reference result, so that tests can look at the fabric after a run.
struct KernelSetup {
    std::vector<double> reference; // expected outputs, row-major
    std::function<std::vector<double>(const StaticColorFabric&)> gather; // outputs read back from the PEs
    std::uint64_t streamedWavelets = 0;
};
KernelSetup buildKernel(const KernelConfig& config, StaticColorFabric& fabric);

} // namespace waferscope::core::fabric

namespace waferscope::core {

template <>
std::span<const EnumName<fabric::KernelKind>> nameTable<fabric::KernelKind>();

} // namespace waferscope::core
