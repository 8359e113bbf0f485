// No header of its own: defines runFabricCommand, declared with every subcommand in app/cli/commands.h.
#include "app/cli/argparser.h"
#include "app/cli/commands.h"
#include "app/cli/exitcode.h"

#include "core/common/units.h"
#include "core/fabric/kernels.h"
#include "core/fabric/traffic.h"
#include "core/hardware/builtinpresets.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <optional>
#include <ostream>

namespace waferscope::cli {

namespace {

std::int64_t parseInteger(const std::string& option, const std::string& text, std::int64_t min, std::int64_t max)
{
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < min || value > max)
        throw UsageError { "--" + option + " expects an integer " + std::to_string(min) + ".." + std::to_string(max)
            + ", got '" + text + "'" };
    return value;
}

double parseNumber(const std::string& option, const std::string& text)
{
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
        throw UsageError { "--" + option + " expects a number, got '" + text + "'" };
    return value;
}

// "WxH" (also "W*H"): two positive integers.
std::pair<int, int> parseDims(const std::string& option, const std::string& text)
{
    const std::size_t cross = text.find_first_of("xX*");
    if (cross == std::string::npos)
        throw UsageError { "--" + option + " expects AxB (for example 32x32), got '" + text + "'" };
    return { int(parseInteger(option, text.substr(0, cross), 1, 1'000'000)),
        int(parseInteger(option, text.substr(cross + 1), 1, 1'000'000)) };
}

int runTrafficMode(const ArgParser& parser, const core::SystemSpec& system, std::ostream& out, std::ostream& err)
{
    core::fabric::TrafficConfig config;
    const std::string mesh = parser.value("mesh").value_or("32x32");
    if (mesh == "wafer") {
        config.width = system.wafer.fabricWidth;
        config.height = system.wafer.fabricHeight;
    } else {
        std::tie(config.width, config.height) = parseDims("mesh", mesh);
    }
    const std::string pattern = parser.value("traffic").value_or("uniform");
    const std::optional<core::fabric::TrafficPattern> parsed = core::fabric::parseTrafficPattern(pattern);
    if (!parsed)
        throw UsageError { "--traffic expects " + core::choiceList(core::allNames<core::fabric::TrafficPattern>())
            + ", got '" + pattern + "'" };
    config.pattern = *parsed;
    if (auto rate = parser.value("rate"))
        config.rate = parseNumber("rate", *rate);
    if (auto cycles = parser.value("cycles"))
        config.cycles = std::uint64_t(parseInteger("cycles", *cycles, 2, 4'294'967'295));
    if (auto warmup = parser.value("warmup"))
        config.warmup = std::uint64_t(parseInteger("warmup", *warmup, 1, 4'294'967'295));
    if (auto threads = parser.value("threads"))
        config.threads = int(parseInteger("threads", *threads, 1, 1024));
    if (auto seed = parser.value("seed"))
        config.seed = std::uint64_t(parseInteger("seed", *seed, 0, std::numeric_limits<std::int64_t>::max()));
    if (auto depth = parser.value("queue-depth"))
        config.queueDepth = int(parseInteger("queue-depth", *depth, 2, 64));
    if (auto fraction = parser.value("hotspot-fraction"))
        config.hotspotFraction = parseNumber("hotspot-fraction", *fraction);

    const core::Expected<core::fabric::TrafficResult> result = core::fabric::runTraffic(config);
    if (!result)
        return printDiagnostic(err, result.error());
    const core::fabric::TrafficResult& r = *result;
    // Theory for uniform traffic with XY routing (Dally and Towles, Principles and Practices of Interconnection
    // Networks): mean hops (W^2-1)/(3W) + (H^2-1)/(3H) (2(k^2-1)/(3k) on k x k), bisection bound 4/max(W, H) per PE per
    // cycle.
    const double theoryHops
        = (double(r.width) * r.width - 1) / (3.0 * r.width) + (double(r.height) * r.height - 1) / (3.0 * r.height);
    const double bisectionBound = 4.0 / double(std::max(r.width, r.height));
    if (parser.has("json")) {
        nlohmann::ordered_json json;
        json["mesh"] = { r.width, r.height };
        json["cycles"] = r.cycles;
        json["avg_hops"] = r.avgHops;
        json["avg_latency_cycles"] = r.avgLatencyCycles;
        json["offered_rate"] = r.offeredRate;
        json["accepted_rate"] = r.acceptedRate;
        json["router_cycles_per_s"] = r.routerCyclesPerS;
        json["wall_s"] = r.wallS;
        json["traffic"] = core::fabric::trafficPatternName(config.pattern);
        json["rate"] = config.rate;
        json["warmup_cycles"] = r.warmup;
        json["threads"] = config.threads;
        json["queue_depth"] = config.queueDepth;
        json["packets_measured"] = r.packetsMeasured;
        json["link_wavelets"] = r.linkWavelets;
        json["theory"] = { { "uniform_avg_hops", theoryHops }, { "uniform_bisection_rate", bisectionBound } };
        out << json.dump(2) << "\n";
        return kExitOk;
    }
    out << "Synthetic traffic: " << core::fabric::trafficPatternName(config.pattern) << " on a " << r.width << " x "
        << r.height << " mesh, XY routing, " << config.threads << " thread(s)\n"
        << "  cycles            " << r.cycles << " (" << r.warmup << " warm-up)\n"
        << "  offered rate      " << core::formatFixed(r.offeredRate, 4) << " packets/PE/cycle\n"
        << "  accepted rate     " << core::formatFixed(r.acceptedRate, 4) << " packets/PE/cycle   (bisection bound "
        << core::formatFixed(bisectionBound, 4) << " for uniform)\n"
        << "  mean hops         " << core::formatFixed(r.avgHops, 2) << "   (uniform theory "
        << core::formatFixed(theoryHops, 2) << ")\n"
        << "  mean latency      " << core::formatFixed(r.avgLatencyCycles, 2) << " cycles over " << r.packetsMeasured
        << " packets\n"
        << "  speed             " << core::formatFixed(r.routerCyclesPerS / 1e6, 1) << " M router-cycles/s ("
        << core::formatFixed(r.wallS, 3) << " s)\n";
    return kExitOk;
}

// An option the chosen run would ignore, refused at the option: what it is for, or nothing.
std::optional<core::Diagnostic> ignoredOption(const ArgParser& parser)
{
    using core::fabric::KernelKind;
    const auto refuse = [](const char* option, const std::string& why) {
        return core::Diagnostic { std::string("--") + option, 0, 0, why };
    };
    const std::optional<std::string> name = parser.value("kernel");
    for (const char* option : { "mesh", "traffic", "rate", "cycles", "warmup", "queue-depth", "hotspot-fraction" })
        if (name && parser.value(option))
            return refuse(option, std::string("--") + option + " is for synthetic traffic, not for --kernel " + *name);
    for (const char* option : { "matrix", "region", "sparsity", "tokens", "length" })
        if (!name && parser.value(option))
            return refuse(option, std::string("--") + option + " is for a kernel run (--kernel NAME)");
    const std::optional<KernelKind> kind = name ? core::fabric::parseKernel(*name) : std::nullopt;
    if (!kind)
        return std::nullopt;
    const bool matrixKernel
        = *kind == KernelKind::Gemv || *kind == KernelKind::GemvTree || *kind == KernelKind::GemmStream;
    if (matrixKernel && parser.value("length"))
        return refuse("length", "--length is the vector length of the collectives; " + *name + " takes --matrix MxN");
    if (!matrixKernel && parser.value("matrix"))
        return refuse("matrix", "--matrix is for gemv, gemv_tree and gemm_stream; " + *name + " takes --length N");
    if (*kind != KernelKind::GemmStream && parser.value("tokens"))
        return refuse("tokens", "--tokens (activation columns per PE) is for gemm_stream, not " + *name);
    return std::nullopt;
}

int runKernelMode(const ArgParser& parser, const core::SystemSpec& system, std::ostream& out, std::ostream& err)
{
    core::fabric::KernelConfig config;
    const std::string name = *parser.value("kernel");
    const std::optional<core::fabric::KernelKind> kind = core::fabric::parseKernel(name);
    if (!kind)
        throw UsageError { "--kernel expects " + core::fabric::kernelNames() + ", got '" + name + "'" };
    config.kind = *kind;
    if (auto matrix = parser.value("matrix"))
        std::tie(config.matrixRows, config.matrixCols) = parseDims("matrix", *matrix);
    if (auto length = parser.value("length"))
        config.matrixCols = int(parseInteger("length", *length, 1, 1'000'000));
    else if (config.kind != core::fabric::KernelKind::Gemv && config.kind != core::fabric::KernelKind::GemvTree
        && config.kind != core::fabric::KernelKind::GemmStream)
        config.matrixCols = 1024;
    if (auto region = parser.value("region"))
        std::tie(config.regionRows, config.regionCols) = parseDims("region", *region);
    if (auto sparsity = parser.value("sparsity"))
        config.sparsity = parseNumber("sparsity", *sparsity);
    if (auto tokens = parser.value("tokens"))
        config.tokensPerPe = int(parseInteger("tokens", *tokens, 1, 1024));
    if (auto threads = parser.value("threads"))
        config.threads = int(parseInteger("threads", *threads, 1, 1024));
    if (auto seed = parser.value("seed"))
        config.seed = std::uint64_t(parseInteger("seed", *seed, 0, std::numeric_limits<std::int64_t>::max()));
    config.simdWidth = system.wafer.fmacPerPePerCycle;
    config.sramPerPeBytes = system.wafer.sramPerPeBytes;

    const core::Expected<core::fabric::KernelResult> result = core::fabric::runKernel(config);
    if (!result)
        return printDiagnostic(err, result.error());
    const core::fabric::KernelResult& r = *result;
    if (parser.has("json")) {
        nlohmann::ordered_json json;
        json["kernel"] = core::fabric::kernelName(r.kind);
        json["cycles"] = r.cycles;
        json["max_abs_error"] = r.maxAbsError;
        json["pe_busy_fraction"] = r.peBusyFraction;
        json["link_wavelets"] = r.linkWavelets;
        json["wall_s"] = r.wallS;
        json["system"] = system.name;
        json["matrix"] = { config.matrixRows, config.matrixCols };
        json["region"] = { config.regionRows, config.regionCols };
        json["sparsity"] = config.sparsity;
        json["simd_width"] = config.simdWidth;
        json["fmacs"] = r.fmacs;
        json["fmac_lower_bound_cycles"] = r.fmacLowerBoundCycles;
        json["streamed_wavelets"] = r.streamedWavelets;
        json["max_sram_bytes_per_pe"] = r.maxSramBytes;
        out << json.dump(2) << "\n";
        return kExitOk;
    }
    out << "Kernel " << core::fabric::kernelName(r.kind) << " on a " << config.regionRows << " x " << config.regionCols
        << " region of " << system.displayName << " PEs (FP16 SIMD " << config.simdWidth << ")\n"
        << "  cycles            " << r.cycles << "   (FMAC lower bound " << r.fmacLowerBoundCycles << ")\n"
        << "  max abs error     " << r.maxAbsError << "   (vs double-precision reference)\n"
        << "  PE busy           " << core::formatFixed(100.0 * r.peBusyFraction, 1) << " %\n"
        << "  link wavelets     " << r.linkWavelets << "\n"
        << "  SRAM per PE       " << r.maxSramBytes << " of " << config.sramPerPeBytes << " bytes\n";
    if (r.kind == core::fabric::KernelKind::GemmStream)
        out << "  streamed          " << r.streamedWavelets << " wavelets (non-zero weights and row markers)\n";
    return kExitOk;
}

} // namespace

int runFabricCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err)
{
    ArgParser parser("waferscope-cli fabric",
        "Runs the cycle-level PE mesh: synthetic traffic (default) to validate it against NoC theory, or one\n"
        "kernel (--kernel) whose result is checked against a reference implementation.");
    parser.addOption("system", "NAME",
        "hardware preset for SIMD width, SRAM and --mesh wafer (default " + std::string(core::defaultPresetName())
            + ")");
    parser.addOption(
        "mesh", "WxH", "traffic: mesh size in PEs, or 'wafer' for the system's whole fabric (default 32x32)");
    parser.addOption("traffic", "PATTERN",
        "traffic: " + core::choiceList(core::allNames<core::fabric::TrafficPattern>()) + " (default uniform)");
    parser.addOption("rate", "R", "traffic: packets injected per PE per cycle, 0..1 (default 0.02)");
    parser.addOption("cycles", "N",
        "traffic: cycles to simulate, warm-up included (default 10000; at most 2e11 / PEs, under an hour)");
    parser.addOption("warmup", "N", "traffic: warm-up cycles excluded from statistics (default a quarter)");
    parser.addOption("queue-depth", "D", "traffic: wavelets per router input queue (default 4)");
    parser.addOption("hotspot-fraction", "F", "traffic: share of hotspot packets sent to the centre (default 0.2)");
    parser.addOption("kernel", "NAME", "run a kernel instead: " + core::fabric::kernelNames());
    parser.addOption("matrix", "MxN", "kernel: matrix size (gemv: A is MxN; gemm_stream: weights are MxN)");
    parser.addOption("region", "RxC", "kernel: PE rows x columns (default 32x32)");
    parser.addOption("sparsity", "S", "gemm_stream: share of zero weights, not streamed (default 0)");
    parser.addOption("tokens", "T", "gemm_stream: activation columns per PE (default the SIMD width)");
    parser.addOption("length", "N", "collectives: vector length per PE (default 1024)");
    parser.addOption("threads", "T", "threads stepping the mesh (default 1, the serial reference)");
    parser.addOption("seed", "S", "seed of the random traffic or operands (default 1)");
    parser.addFlag("json", "print one JSON object on stdout");
    if (!parser.parse(args)) {
        out << parser.helpText();
        return kExitOk;
    }
    const std::string systemName = parser.value("system").value_or(std::string(core::defaultPresetName()));
    core::Expected<core::SystemSpec> system = core::loadBuiltinPreset(systemName);
    if (!system)
        throw UsageError { "unknown system '" + systemName + "' (expected " + core::builtinPresetChoices() + ")" };
    if (const std::optional<core::Diagnostic> ignored = ignoredOption(parser))
        return printDiagnostic(err, *ignored);
    return parser.has("kernel") ? runKernelMode(parser, *system, out, err) : runTrafficMode(parser, *system, out, err);
}

} // namespace waferscope::cli
