#include "core/hardware/hardwarefacts.h"

#include "core/common/units.h"

#include <functional>

namespace waferscope::core {

namespace {

struct FactRow {
    const char* group;
    const char* label;
    std::vector<std::string> keys; // provenance keys of the values shown
    std::function<std::string(const SystemSpec&)> format;
    bool needsMemoryX = false;
    bool needsSwarmX = false;
    bool firstKeyOnly = false; // keys are alternatives (an optional key, then what stands in for it)
    const char* whenAbsent = nullptr; // the provenance when none of the keys is in the preset
};

std::string dims(int width, int height)
{
    return std::to_string(width) + " x " + std::to_string(height);
}

const std::vector<FactRow>& factRows()
{
    static const std::vector<FactRow> rows {
        { "Wafer", "wafer", {}, [](const SystemSpec& s) { return s.wafer.name; } },
        { "Wafer", "cores", { "wafer.cores" }, [](const SystemSpec& s) { return formatThousands(s.wafer.cores); } },
        { "Wafer", "fabric (PEs)", { "wafer.fabric_width", "wafer.fabric_height" },
            [](const SystemSpec& s) { return dims(s.wafer.fabricWidth, s.wafer.fabricHeight); } },
        { "Wafer", "usable rectangle", { "wafer.usable_width", "wafer.usable_height" },
            [](const SystemSpec& s) { return dims(s.wafer.usableWidth, s.wafer.usableHeight); } },
        { "Wafer", "usable origin", { "wafer.usable_x", "wafer.usable_y" },
            [](const SystemSpec& s) {
                return "(" + std::to_string(s.wafer.usableX) + ", " + std::to_string(s.wafer.usableY) + ")";
            } },
        { "Wafer", "SRAM per PE", { "wafer.sram_per_pe_bytes" },
            [](const SystemSpec& s) { return formatBytes(double(s.wafer.sramPerPeBytes)); } },
        { "Wafer", "usable SRAM", { "wafer.sram_per_pe_bytes", "wafer.usable_width", "wafer.usable_height" },
            [](const SystemSpec& s) { return formatBytes(s.wafer.usableSramBytes()); } },
        { "Wafer", "clock", { "wafer.clock_hz" }, [](const SystemSpec& s) { return formatSi(s.wafer.clockHz, "Hz"); } },
        { "Wafer", "FP16 FMAC per PE/cycle", { "wafer.fmac_per_pe_per_cycle" },
            [](const SystemSpec& s) { return std::to_string(s.wafer.fmacPerPePerCycle); } },
        { "Wafer", "dense FP16 peak (usable)", { "wafer.clock_hz", "wafer.fmac_per_pe_per_cycle" },
            [](const SystemSpec& s) { return formatSi(s.wafer.peakFlopsPerS(), "FLOP/s"); } },
        { "Wafer", "link per direction", { "wafer.link_bytes_per_cycle" },
            [](const SystemSpec& s) { return std::to_string(s.wafer.linkBytesPerCycle) + " B/cycle"; } },
        { "Wafer", "routable colors", { "wafer.routable_colors" },
            [](const SystemSpec& s) { return std::to_string(s.wafer.routableColors); } },
        { "Wafer", "hop latency", { "wafer.hop_latency_cycles" },
            [](const SystemSpec& s) { return std::to_string(s.wafer.hopLatencyCycles) + " cycle"; } },
        { "System", "system I/O", { "system.io_bytes_per_s" },
            [](const SystemSpec& s) { return formatSi(s.ioBytesPerS, "B/s"); } },
        { "System", "inter-system hop", { "system.inter_system_latency_s" },
            [](const SystemSpec& s) { return formatSi(s.interSystemLatencyS, "s"); } },
        { "MemoryX", "MemoryX capacity", { "memoryx.capacity_bytes" },
            [](const SystemSpec& s) { return formatBytes(s.memoryx.capacityBytes); }, true },
        { "MemoryX", "MemoryX DRAM tier", { "memoryx.dram_bytes" },
            [](const SystemSpec& s) { return formatBytes(s.memoryx.dramBytes); }, true },
        { "MemoryX", "MemoryX flash tier", { "memoryx.capacity_bytes", "memoryx.dram_bytes" },
            [](const SystemSpec& s) { return formatBytes(s.memoryx.flashBytes()); }, true },
        { "MemoryX", "MemoryX max params", { "memoryx.max_params" },
            [](const SystemSpec& s) { return formatCount(s.memoryx.maxParams); }, true },
        { "MemoryX", "MemoryX bytes per param", { "memoryx.bytes_per_param" },
            [](const SystemSpec& s) {
                return s.memoryx.bytesPerParam > 0.0 ? formatFixed(s.memoryx.bytesPerParam, 0) + " B"
                                                     : std::string("the model's own");
            },
            true, false, false,
            "not in the preset: MemoryX is taken to hold the model's own weights and optimizer state" },
        { "MemoryX", "MemoryX bandwidth", { "memoryx.bandwidth_bytes_per_s" },
            [](const SystemSpec& s) { return formatSi(s.memoryx.bandwidthBytesPerS, "B/s"); }, true },
        { "MemoryX", "MemoryX DRAM tier read",
            { "memoryx.dram_bandwidth_bytes_per_s", "memoryx.bandwidth_bytes_per_s" },
            [](const SystemSpec& s) { return formatSi(s.memoryx.dramReadBytesPerS(), "B/s"); }, true, false, true },
        { "MemoryX", "MemoryX flash tier read",
            { "memoryx.flash_bandwidth_bytes_per_s", "memoryx.dram_bandwidth_bytes_per_s",
                "memoryx.bandwidth_bytes_per_s" },
            [](const SystemSpec& s) { return formatSi(s.memoryx.flashReadBytesPerS(), "B/s"); }, true, false, true },
        { "MemoryX", "MemoryX optimizer", { "memoryx.optimizer_params_per_s" },
            [](const SystemSpec& s) { return formatSi(s.memoryx.optimizerParamsPerS, "param/s"); }, true },
        { "SwarmX", "SwarmX max systems", { "swarmx.max_systems", "swarmx.supported" },
            [](const SystemSpec& s) { return std::to_string(s.swarmx.supported ? s.swarmx.maxSystems : 1); } },
        { "SwarmX", "SwarmX fan-out", { "swarmx.fan_out" },
            [](const SystemSpec& s) { return std::to_string(s.swarmx.fanOut); }, false, true },
        { "SwarmX", "SwarmX levels (max systems)", { "swarmx.fan_out", "swarmx.max_systems" },
            [](const SystemSpec& s) {
                return std::to_string(s.swarmx.levels(s.swarmx.maxSystems)) + " (" + std::to_string(s.swarmx.maxSystems)
                    + " systems)";
            },
            false, true },
        { "SwarmX", "SwarmX link", { "swarmx.link_bytes_per_s" },
            [](const SystemSpec& s) { return formatSi(s.swarmx.linkBytesPerS, "B/s"); }, false, true },
        { "SwarmX", "SwarmX level latency", { "swarmx.level_latency_s" },
            [](const SystemSpec& s) { return formatSi(s.swarmx.levelLatencyS, "s"); }, false, true },
    };
    return rows;
}

} // namespace

std::vector<HardwareFact> describeHardware(const SystemSpec& system)
{
    std::vector<HardwareFact> facts;
    for (const FactRow& row : factRows()) {
        HardwareFact fact { row.group, row.label, "-", false, {} };
        const bool available
            = !(row.needsMemoryX && !system.memoryx.supported) && !(row.needsSwarmX && !system.swarmx.supported);
        if (!available) {
            // Say why the unit is missing rather than leaving a bare dash unexplained.
            const char* key = row.needsMemoryX ? "memoryx.supported" : "swarmx.supported";
            if (auto it = system.provenance.find(key); it != system.provenance.end())
                fact.provenance = it->second.text;
            facts.push_back(std::move(fact));
            continue;
        }
        fact.value = row.format(system);
        for (const std::string& key : row.keys) {
            auto it = system.provenance.find(key);
            if (it == system.provenance.end())
                continue;
            fact.assumed = fact.assumed || it->second.kind == Provenance::Kind::Assumed;
            if (fact.provenance.find(it->second.text) == std::string::npos)
                fact.provenance += (fact.provenance.empty() ? "" : "; ") + it->second.text;
            if (row.firstKeyOnly)
                break;
        }
        if (fact.provenance.empty() && row.whenAbsent)
            fact.provenance = row.whenAbsent;
        facts.push_back(std::move(fact));
    }
    return facts;
}

} // namespace waferscope::core
