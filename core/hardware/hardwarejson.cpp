#include "core/hardware/hardwarejson.h"

#include <nlohmann/json.hpp>

namespace waferscope::core {

namespace {

using Json = nlohmann::ordered_json;

Json waferJson(const WaferSpec& wafer)
{
    return Json {
        { "name", wafer.name },
        { "cores", wafer.cores },
        { "fabric_width", wafer.fabricWidth },
        { "fabric_height", wafer.fabricHeight },
        { "usable_x", wafer.usableX },
        { "usable_y", wafer.usableY },
        { "usable_width", wafer.usableWidth },
        { "usable_height", wafer.usableHeight },
        { "usable_pes", wafer.usablePes() },
        { "sram_per_pe_bytes", wafer.sramPerPeBytes },
        { "usable_sram_bytes", wafer.usableSramBytes() },
        { "clock_hz", wafer.clockHz },
        { "fmac_per_pe_per_cycle", wafer.fmacPerPePerCycle },
        { "peak_fp16_flops_per_s", wafer.peakFlopsPerS() },
        { "link_bytes_per_cycle", wafer.linkBytesPerCycle },
        { "routable_colors", wafer.routableColors },
        { "hop_latency_cycles", wafer.hopLatencyCycles },
        { "sram_read_bytes_per_cycle", wafer.sramReadBytesPerCycle },
        { "sram_write_bytes_per_cycle", wafer.sramWriteBytesPerCycle },
    };
}

Json memoryxJson(const MemoryXSpec& memoryx)
{
    if (!memoryx.supported)
        return Json { { "supported", false } };
    return Json {
        { "supported", true },
        { "capacity_bytes", memoryx.capacityBytes },
        { "dram_bytes", memoryx.dramBytes },
        { "max_params", memoryx.maxParams },
        { "bandwidth_bytes_per_s", memoryx.bandwidthBytesPerS },
        { "optimizer_params_per_s", memoryx.optimizerParamsPerS },
        // The tiers as the engine uses them (defaults resolved); bytes_per_param 0: the model's own.
        { "flash_bytes", memoryx.flashBytes() },
        { "bytes_per_param", memoryx.bytesPerParam },
        { "dram_bandwidth_bytes_per_s", memoryx.dramReadBytesPerS() },
        { "flash_bandwidth_bytes_per_s", memoryx.flashReadBytesPerS() },
    };
}

Json swarmxJson(const SwarmXSpec& swarmx)
{
    if (!swarmx.supported)
        return Json { { "supported", false }, { "max_systems", 1 } };
    return Json {
        { "supported", true },
        { "max_systems", swarmx.maxSystems },
        { "fan_out", swarmx.fanOut },
        { "link_bytes_per_s", swarmx.linkBytesPerS },
        { "level_latency_s", swarmx.levelLatencyS },
    };
}

Json provenanceJson(const std::map<std::string, Provenance>& provenance)
{
    Json out = Json::object();
    for (const auto& [key, origin] : provenance) {
        Json entry { { origin.kind == Provenance::Kind::Source ? "source" : "assumed", origin.text } };
        if (origin.hasRange) { // what `sensitivity` varies it across
            entry["range"] = Json::array({ origin.rangeLow, origin.rangeHigh });
            entry["range_reason"] = origin.rangeReason;
        }
        out[key] = std::move(entry);
    }
    return out;
}

} // namespace

std::string hardwareToJson(const std::vector<SystemSpec>& systems)
{
    Json list = Json::array();
    for (const SystemSpec& system : systems) {
        list.push_back(Json {
            { "name", system.name },
            { "display_name", system.displayName },
            { "wafer", waferJson(system.wafer) },
            { "io_bytes_per_s", system.ioBytesPerS },
            { "inter_system_latency_s", system.interSystemLatencyS },
            { "memoryx", memoryxJson(system.memoryx) },
            { "swarmx", swarmxJson(system.swarmx) },
            { "provenance", provenanceJson(system.provenance) },
        });
    }
    return Json { { "systems", list } }.dump(2);
}

} // namespace waferscope::core
