#include "core/fabric/kernels.h"

#include "core/common/memorybudget.h"
#include "core/common/units.h"
#include "core/fabric/staticcolorfabric.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace waferscope::core {

namespace {

constexpr EnumName<fabric::KernelKind> kKernelKinds[] = { { fabric::KernelKind::Gemv, "gemv" },
    { fabric::KernelKind::GemmStream, "gemm_stream" }, { fabric::KernelKind::RowBroadcast, "row_broadcast" },
    { fabric::KernelKind::ColumnBroadcast, "column_broadcast" }, { fabric::KernelKind::RowReduce, "row_reduce" },
    { fabric::KernelKind::ColumnReduce, "column_reduce" }, { fabric::KernelKind::GemvTree, "gemv_tree" } };
static_assert(inDeclarationOrder(kKernelKinds) && namesUnique(kKernelKinds));

} // namespace

template <>
std::span<const EnumName<fabric::KernelKind>> nameTable<fabric::KernelKind>()
{
    return kKernelKinds;
}

} // namespace waferscope::core

namespace waferscope::core::fabric {

namespace {

Diagnostic optionError(const std::string& option, const std::string& message)
{
    return { option, 0, 0, message };
}

std::string size(int a, int b)
{
    return std::to_string(a) + "x" + std::to_string(b);
}

// The largest share of the operands one PE holds, in bytes, as the builders allocate it.
std::int64_t sramNeed(const KernelConfig& config)
{
    const auto ceilDiv = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
    const std::int64_t mr = ceilDiv(config.matrixRows, config.regionRows);
    const std::int64_t nc = ceilDiv(config.matrixCols, config.regionCols);
    const int tokens = config.tokensPerPe > 0 ? config.tokensPerPe : config.simdWidth;
    switch (config.kind) {
    case KernelKind::Gemv:
    case KernelKind::GemvTree:
        return mr * nc * 2 + mr * 4 + nc * 4; // A block (FP16), y, x block (top row)
    case KernelKind::GemmStream:
        return std::int64_t(config.matrixCols) * tokens * 2 + mr * tokens * 4; // activations, Y block
    default:
        return std::int64_t(config.matrixCols) * 4;
    }
}

// The fabric a kernel runs on: one multicast color and the two alternating reduction colors, or
// one color per tree level.
FabricConfig fabricConfigOf(const KernelConfig& config)
{
    FabricConfig fabric;
    fabric.width = config.regionCols;
    fabric.height = config.regionRows;
    fabric.colors = config.kind == KernelKind::GemvTree ? std::max(3, 1 + reductionTreeLevels(config.regionCols)) : 3;
    fabric.queueDepth = config.queueDepth;
    fabric.simdWidth = config.simdWidth;
    return fabric;
}

// A block distribution of `total` over `parts` (blockBegin in kernelbuild.cpp): parts of
// total / parts, and total % parts of them one more; the first part is a small one.
struct Shares {
    Shares(std::int64_t total, std::int64_t parts)
        : small(total / parts)
        , largeCount(total % parts)
        , smallCount(parts - total % parts)
    {
    }
    template <typename Each>
    void each(const Each& body) const // body(size, parts of that size)
    {
        body(small, smallCount);
        if (largeCount > 0)
            body(small + 1, largeCount);
    }
    std::int64_t small;
    std::int64_t largeCount;
    std::int64_t smallCount;
};

// `count` heap blocks of `bytes` each; nothing for empty vectors.
double blocks(std::int64_t count, double bytes)
{
    return bytes > 0.0 ? double(count) * heapBlockBytes(bytes) : 0.0;
}

// The host's operands, the reference and the gathered result, and the PEs' shares of y = A x:
// each PE holds its FP16 block of A and its FP32 rows of y; the top row also its block of x,
// appended to y (the vector grows to at least twice y).
double gemvOperandBytes(const KernelConfig& config)
{
    const std::int64_t m = config.matrixRows;
    const std::int64_t n = config.matrixCols;
    const std::int64_t pes = std::int64_t(config.regionRows) * config.regionCols;
    double bytes = heapBlockBytes(double(m) * double(n) * 4.0) + heapBlockBytes(double(n) * 4.0)
        + 2.0 * heapBlockBytes(double(m) * 8.0) + 2.0 * heapBlockBytes(double(pes) * 4.0);
    const Shares rows(m, config.regionRows);
    const Shares cols(n, config.regionCols);
    rows.each([&](std::int64_t mr, std::int64_t rowCount) {
        cols.each([&](std::int64_t nc, std::int64_t colCount) {
            bytes += blocks(rowCount * colCount, double(mr) * double(nc) * 2.0);
        });
        bytes += blocks(rowCount * config.regionCols, double(mr) * 4.0);
    });
    const std::int64_t topRows = rows.small;
    cols.each([&](std::int64_t nc, std::int64_t count) {
        bytes
            += blocks(count, double(std::max(topRows + nc, 2 * topRows)) * 4.0) - blocks(count, double(topRows) * 4.0);
    });
    if (config.kind == KernelKind::GemvTree) // each row's offsets and work flags while its tree is wired
        bytes += 2.0 * heapBlockBytes(double(config.regionCols) * 4.0);
    return bytes;
}

// Y = W X: the host's W, X, the reference and the gathered Y; each PE's activations (FP16, all N
// inputs of its tokens) and its FP32 rows of Y; and the weight streams, a wavelet for every
// non-zero weight (the mask is Bernoulli: the expected count and four standard deviations) and
// a row marker per output row.
double gemmStreamOperandBytes(const KernelConfig& config)
{
    const double m = config.matrixRows;
    const double n = config.matrixCols;
    const double tokens = config.tokensPerPe > 0 ? config.tokensPerPe : config.simdWidth;
    const double batch = tokens * config.regionCols;
    const std::int64_t pes = std::int64_t(config.regionRows) * config.regionCols;
    double bytes = heapBlockBytes(m * n * 4.0) + heapBlockBytes(n * batch * 4.0) + 2.0 * heapBlockBytes(m * batch * 8.0)
        + 2.0 * heapBlockBytes(double(pes) * 4.0) + blocks(pes, n * tokens * 2.0);
    Shares(config.matrixRows, config.regionRows).each([&](std::int64_t mr, std::int64_t count) {
        bytes += blocks(count * config.regionCols, double(mr) * tokens * 4.0);
    });
    const double weights = m * n;
    const double nonzero
        = weights * (1.0 - config.sparsity) + 4.0 * std::sqrt(weights * config.sparsity * (1.0 - config.sparsity));
    return bytes + (std::min(weights, nonzero) + m) * double(sizeof(Wavelet)) + blocks(config.regionRows, 1.0);
}

// Broadcasts and reductions: each PE's FP32 vector, the reference and the gathered values for
// every PE, and the offsets (appended one by one, and copied for the gather).
double collectiveOperandBytes(const KernelConfig& config)
{
    const std::int64_t pes = std::int64_t(config.regionRows) * config.regionCols;
    const double n = config.matrixCols;
    const int longest = std::max(config.regionRows, config.regionCols);
    return 2.0 * heapBlockBytes(double(pes) * n * 8.0) + blocks(pes, n * 4.0)
        + heapBlockBytes(double(std::bit_ceil(std::uint64_t(pes))) * 4.0) + heapBlockBytes(double(pes) * 4.0)
        + 2.0 * heapBlockBytes(double(std::bit_ceil(unsigned(longest))) * 8.0); // a line's PEs
}

} // namespace

KernelFootprint estimateKernelFootprint(const KernelConfig& config)
{
    KernelFootprint footprint;
    const bool stream = config.kind == KernelKind::GemmStream;
    footprint.stateBytes = StaticColorFabric::estimateBytes(fabricConfigOf(config), stream ? config.regionRows : 0);
    switch (config.kind) {
    case KernelKind::Gemv:
    case KernelKind::GemvTree:
        footprint.operandBytes = gemvOperandBytes(config);
        break;
    case KernelKind::GemmStream:
        footprint.operandBytes = gemmStreamOperandBytes(config);
        break;
    default:
        footprint.operandBytes = collectiveOperandBytes(config);
        break;
    }
    return footprint;
}

double kernelRouterCyclesLowerBound(const KernelConfig& config)
{
    const double rows = config.regionRows;
    const double pes = rows * double(config.regionCols);
    const double m = config.matrixRows;
    const double n = config.matrixCols;
    const double simd = std::max(1, config.simdWidth);
    double cycles = 0.0;
    switch (config.kind) {
    case KernelKind::GemmStream:
        cycles = std::floor(m / rows) * n * (1.0 - config.sparsity) * 0.9
            * std::max(1.0, double(std::max(1, config.tokensPerPe)) / simd);
        break;
    case KernelKind::Gemv:
    case KernelKind::GemvTree:
        cycles = std::ceil(m * n / (pes * simd));
        break;
    default:
        cycles = n;
        break;
    }
    return cycles * pes;
}

const char* kernelName(KernelKind kind)
{
    return nameOf(kind);
}

std::optional<KernelKind> parseKernel(const std::string& name)
{
    return fromName<KernelKind>(name);
}

std::string kernelNames()
{
    std::string names;
    for (const EnumName<KernelKind>& entry : nameTable<KernelKind>())
        names += (names.empty() ? "" : "|") + std::string(entry.name);
    return names;
}

namespace {

// The options a user can get wrong, each refused with what to change.
std::optional<Diagnostic> optionProblem(const KernelConfig& config)
{
    const bool gemv = config.kind == KernelKind::Gemv || config.kind == KernelKind::GemvTree;
    const bool collective = !gemv && config.kind != KernelKind::GemmStream;
    const int maxCoord = 2047;
    if (config.regionRows < 1 || config.regionCols < 1 || config.regionRows > maxCoord || config.regionCols > maxCoord)
        return optionError(
            "--region", "region " + size(config.regionRows, config.regionCols) + " is outside 1x1..2047x2047");
    if (config.matrixCols < 1 || config.matrixCols > 65534
        || (!collective && (config.matrixRows < 1 || config.matrixRows > 1'000'000)))
        return optionError(collective ? "--length" : "--matrix",
            "size " + (collective ? std::to_string(config.matrixCols) : size(config.matrixRows, config.matrixCols))
                + " is out of range (N is 1..65534, M is 1..1000000)");
    if (!(config.sparsity >= 0.0 && config.sparsity < 1.0))
        return optionError("--sparsity", "sparsity must be at least 0 and below 1");
    if (config.sparsity > 0.0 && config.kind != KernelKind::GemmStream)
        return optionError("--sparsity", "only gemm_stream streams sparse weights");
    if (config.threads < 1 || config.threads > 1024)
        return optionError("--threads", "threads must be between 1 and 1024");
    if (config.tokensPerPe < 0 || config.tokensPerPe > 1024)
        return optionError("--tokens", "tokens per PE must be between 1 and 1024");
    const bool rowWise = config.kind == KernelKind::RowBroadcast || config.kind == KernelKind::RowReduce;
    if (collective && (rowWise ? config.regionCols : config.regionRows) < 2)
        return optionError("--region",
            std::string(kernelName(config.kind)) + " needs at least two PEs along each "
                + (rowWise ? "row" : "column"));
    // Weight streaming gives each row of PEs its own rows of W (a band of the outputs): a row of
    // PEs without one would wait for a stream that never comes.
    if (config.kind == KernelKind::GemmStream && config.regionRows > config.matrixRows)
        return optionError("--region",
            "gemm_stream streams each row of PEs its own rows of the " + size(config.matrixRows, config.matrixCols)
                + " weights, so the region needs at most M = " + std::to_string(config.matrixRows) + " rows, got "
                + std::to_string(config.regionRows) + "; use --region " + size(config.matrixRows, config.regionCols)
                + " or a taller --matrix");
    if (const std::int64_t need = sramNeed(config); need > config.sramPerPeBytes)
        return Diagnostic { "--region", 0, 0,
            "does not fit: " + std::string(kernelName(config.kind)) + " on a "
                + size(config.regionRows, config.regionCols) + " region needs " + std::to_string(need)
                + " bytes of SRAM per PE, more than the " + std::to_string(config.sramPerPeBytes)
                + " a PE has; use a larger region",
            Diagnostic::Kind::CannotMap };

    return std::nullopt;
}

// Work, then memory: a run too long or too large, refused before anything is allocated.
std::optional<Diagnostic> resourceProblem(const KernelConfig& config)
{
    const bool gemv = config.kind == KernelKind::Gemv || config.kind == KernelKind::GemvTree;
    const bool collective = !gemv && config.kind != KernelKind::GemmStream;
    if (const double work = kernelRouterCyclesLowerBound(config); work > kMaxRouterCyclesPerRun) {
        std::ostringstream message;
        message << std::setprecision(2) << kernelName(config.kind) << " of "
                << (collective ? "length " + std::to_string(config.matrixCols)
                               : size(config.matrixRows, config.matrixCols))
                << " on a " << size(config.regionRows, config.regionCols) << " region steps at least " << work
                << " router-cycles (cycles x PEs), more than the " << kMaxRouterCyclesPerRun
                << " one run may take (under an hour on one core); use a smaller "
                << (collective ? "--length" : "--matrix");
        return optionError(collective ? "--length" : "--matrix", message.str());
    }

    // Refused before anything is allocated, at the option that weighs most.
    const KernelFootprint footprint = estimateKernelFootprint(config);
    const std::string heaviest
        = footprint.stateBytes >= footprint.operandBytes ? "--region" : (collective ? "--length" : "--matrix");
    if (std::optional<Diagnostic> refused
        = checkMemory(std::string(kernelName(config.kind)) + " on a " + size(config.regionRows, config.regionCols)
                + " region (its fabric state " + formatBytes(footprint.stateBytes) + ", operands and results "
                + formatBytes(footprint.operandBytes) + ")",
            footprint.bytes(), "use a smaller " + heaviest, Diagnostic { heaviest, 0, 0, {} }))
        return *refused;

    return std::nullopt;
}

// Runs the built kernel until every result is in; a livelock, a stall or a cancel by `observer`
// (called every `observeEvery` cycles) is the diagnostic returned.
std::optional<Diagnostic> runToCompletion(StaticColorFabric& fabric, const KernelSetup& setup,
    const KernelConfig& config, const FabricObserver& observer, std::uint64_t observeEvery)
{
    // Completion is checked every 16 cycles (the result's cycle is recorded exactly by the PEs);
    // a fabric with nothing left in flight while results are missing has deadlocked.
    const std::string name = "<kernel " + std::string(kernelName(config.kind)) + ">";
    const std::uint64_t every = std::max<std::uint64_t>(1, observeEvery);
    std::optional<Diagnostic> failure;
    // A livelock (wavelets circling with results still missing) is caught by a bound far above
    // any legitimate run: every streamed wavelet, matrix element of a PE and hop, 64 times over.
    const auto m = std::uint64_t(config.matrixRows);
    const auto n = std::uint64_t(config.matrixCols);
    const auto pes = std::uint64_t(config.regionRows) * std::uint64_t(config.regionCols);
    const std::uint64_t perWavelet
        = std::max<std::uint64_t>(1, std::uint64_t(std::max(1, config.tokensPerPe)) / std::max(1, config.simdWidth));
    const std::uint64_t limit = 100'000
        + 64 * perWavelet
            * (setup.streamedWavelets + m * n / pes + m + n + std::uint64_t(config.regionRows + config.regionCols));
    if (fabric.pendingResults() > 0) {
        fabric.runWhile([&] {
            const std::uint64_t cycle = fabric.cycle();
            if (observer && cycle % every == 0 && !observer(fabric)) {
                failure = optionError("--kernel", "run cancelled at cycle " + std::to_string(cycle));
                return false;
            }
            if (cycle % 16 != 0)
                return true;
            const int pending = fabric.pendingResults();
            if (pending > 0 && cycle > limit) {
                failure = Diagnostic { name, 0, 0,
                    "internal error: no result after " + std::to_string(cycle) + " cycles (" + std::to_string(pending)
                        + " PEs waiting); the kernel's routes livelock on this region shape",
                    Diagnostic::Kind::Internal };
                return false;
            }
            if (pending > 0 && fabric.quiescent()) {
                failure = Diagnostic { name, 0, 0,
                    "internal error: stalled at cycle " + std::to_string(cycle) + " with " + std::to_string(pending)
                        + " PEs waiting for data",
                    Diagnostic::Kind::Internal };
                return false;
            }
            return pending > 0;
        });
    }
    return failure;
}

// What the finished run measured, and how far its results are from the reference.
KernelResult measuredResult(const StaticColorFabric& fabric, const KernelSetup& setup, const KernelConfig& config)
{
    KernelResult result;
    result.kind = config.kind;
    std::uint64_t busy = 0;
    for (int y = 0; y < fabric.height(); ++y) {
        for (int x = 0; x < fabric.width(); ++x) {
            const PeState& pe = fabric.pe(x, y);
            result.cycles = std::max<std::uint64_t>(result.cycles, std::uint64_t(std::max<std::int64_t>(0, pe.doneAt)));
            result.fmacs += pe.fmacs;
            busy += pe.busyCycles;
            result.maxSramBytes = std::max(result.maxSramBytes, pe.sramBytes());
        }
    }
    const std::vector<double> values = setup.gather(fabric);
    for (std::size_t i = 0; i < values.size(); ++i)
        result.maxAbsError = std::max(result.maxAbsError, std::abs(values[i] - setup.reference[i]));
    const double peCycles = double(fabric.peCount()) * double(std::max<std::uint64_t>(1, result.cycles));
    result.peBusyFraction = std::min(1.0, double(busy) / peCycles);
    result.linkWavelets = fabric.totalLinkWavelets();
    const std::uint64_t lanes = std::uint64_t(fabric.peCount()) * std::uint64_t(config.simdWidth);
    result.fmacLowerBoundCycles = (result.fmacs + lanes - 1) / lanes;
    result.streamedWavelets = setup.streamedWavelets;
    return result;
}

} // namespace

Expected<KernelResult> runKernel(const KernelConfig& config, const FabricObserver& observer, std::uint64_t observeEvery)
{
    if (std::optional<Diagnostic> problem = optionProblem(config))
        return *problem;
    if (std::optional<Diagnostic> problem = resourceProblem(config))
        return *problem;
    StaticColorFabric fabric(fabricConfigOf(config));
    fabric.setThreads(config.threads);
    const KernelSetup setup = buildKernel(config, fabric);
    // The options were checked above: a kernel that still cannot route, stalls or livelocks is a
    // defect of its builder, not the user's input.
    if (const std::optional<std::string> error = fabric.validateRoutes())
        return Diagnostic { "<kernel " + std::string(kernelName(config.kind)) + ">", 0, 0,
            "internal error: the kernel's routes on a " + size(config.regionRows, config.regionCols) + " region for "
                + size(config.matrixRows, config.matrixCols) + " are broken: " + *error,
            Diagnostic::Kind::Internal };

    // Generous bound: every wavelet could wait for every FMAC of its PE.
    const auto start = std::chrono::steady_clock::now();
    if (std::optional<Diagnostic> failure = runToCompletion(fabric, setup, config, observer, observeEvery))
        return *failure;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    KernelResult result = measuredResult(fabric, setup, config);
    result.wallS = wall;
    return result;
}

int reductionTreeLevels(int count)
{
    int levels = 0;
    while ((1 << levels) < count)
        ++levels;
    return levels;
}

ReductionTreeNode reductionTreeNode(int position, int count)
{
    ReductionTreeNode node;
    const int levels = reductionTreeLevels(count);
    for (int l = 0; l < levels; ++l) {
        if (position != 0 && (position >> l) & 1) {
            node.sendLevel = l;
            break;
        }
        if (position + (1 << l) < count)
            node.childLevels.push_back(l);
    }
    return node;
}

} // namespace waferscope::core::fabric
