#include "app/cli/hardwaretable.h"

#include "core/common/units.h"

#include <algorithm>
#include <functional>

namespace waferscope::cli {

namespace {

using core::SystemSpec;

struct Row {
    std::string label;
    std::vector<std::string> provenanceKeys; // a cell is marked '*' if any of these is assumed
    std::function<std::string(const SystemSpec&)> cell;
};

bool isAssumed(const SystemSpec& system, const std::vector<std::string>& keys)
{
    return std::any_of(keys.begin(), keys.end(), [&](const std::string& key) {
        auto it = system.provenance.find(key);
        return it != system.provenance.end() && it->second.kind == core::Provenance::Kind::Assumed;
    });
}

std::string dims(int width, int height)
{
    return std::to_string(width) + " x " + std::to_string(height);
}

std::vector<Row> rows()
{
    using core::formatBytes;
    using core::formatCount;
    using core::formatSi;
    const std::string na = "-";
    return {
        { "wafer", {}, [](const SystemSpec& s) { return s.wafer.name; } },
        { "cores", { "wafer.cores" }, [](const SystemSpec& s) { return formatCount(double(s.wafer.cores)); } },
        { "fabric (PEs)", { "wafer.fabric_width", "wafer.fabric_height" },
            [](const SystemSpec& s) { return dims(s.wafer.fabricWidth, s.wafer.fabricHeight); } },
        { "usable rectangle", { "wafer.usable_width", "wafer.usable_height" },
            [](const SystemSpec& s) { return dims(s.wafer.usableWidth, s.wafer.usableHeight); } },
        { "usable origin", { "wafer.usable_x", "wafer.usable_y" },
            [](const SystemSpec& s) {
                return "(" + std::to_string(s.wafer.usableX) + ", " + std::to_string(s.wafer.usableY) + ")";
            } },
        { "SRAM per PE", { "wafer.sram_per_pe_bytes" },
            [](const SystemSpec& s) { return formatBytes(double(s.wafer.sramPerPeBytes)); } },
        { "usable SRAM", { "wafer.sram_per_pe_bytes" },
            [](const SystemSpec& s) { return formatBytes(s.wafer.usableSramBytes()); } },
        { "clock", { "wafer.clock_hz" }, [](const SystemSpec& s) { return formatSi(s.wafer.clockHz, "Hz"); } },
        { "FP16 FMAC per PE/cycle", { "wafer.fmac_per_pe_per_cycle" },
            [](const SystemSpec& s) { return std::to_string(s.wafer.fmacPerPePerCycle); } },
        { "dense FP16 peak (usable)", { "wafer.clock_hz", "wafer.fmac_per_pe_per_cycle" },
            [](const SystemSpec& s) { return formatSi(s.wafer.peakFlopsPerS(), "FLOP/s"); } },
        { "link per direction", { "wafer.link_bytes_per_cycle" },
            [](const SystemSpec& s) { return std::to_string(s.wafer.linkBytesPerCycle) + " B/cycle"; } },
        { "routable colors", { "wafer.routable_colors" },
            [](const SystemSpec& s) { return std::to_string(s.wafer.routableColors); } },
        { "hop latency", { "wafer.hop_latency_cycles" },
            [](const SystemSpec& s) { return std::to_string(s.wafer.hopLatencyCycles) + " cycle"; } },
        { "system I/O", { "system.io_bytes_per_s" },
            [](const SystemSpec& s) { return formatSi(s.ioBytesPerS, "B/s"); } },
        { "inter-system hop", { "system.inter_system_latency_s" },
            [](const SystemSpec& s) { return formatSi(s.interSystemLatencyS, "s"); } },
        { "MemoryX capacity", { "memoryx.capacity_bytes" },
            [na](const SystemSpec& s) { return s.memoryx.supported ? formatBytes(s.memoryx.capacityBytes) : na; } },
        { "MemoryX max params", { "memoryx.max_params" },
            [na](const SystemSpec& s) { return s.memoryx.supported ? formatCount(s.memoryx.maxParams) : na; } },
        { "MemoryX bandwidth", { "memoryx.bandwidth_bytes_per_s" },
            [na](const SystemSpec& s) {
                return s.memoryx.supported ? formatSi(s.memoryx.bandwidthBytesPerS, "B/s") : na;
            } },
        { "MemoryX optimizer", { "memoryx.optimizer_params_per_s" },
            [na](const SystemSpec& s) {
                return s.memoryx.supported ? formatSi(s.memoryx.optimizerParamsPerS, "param/s") : na;
            } },
        { "SwarmX max systems", { "swarmx.max_systems" },
            [](const SystemSpec& s) { return std::to_string(s.swarmx.supported ? s.swarmx.maxSystems : 1); } },
        { "SwarmX fan-out", { "swarmx.fan_out" },
            [na](const SystemSpec& s) { return s.swarmx.supported ? std::to_string(s.swarmx.fanOut) : na; } },
        { "SwarmX link", { "swarmx.link_bytes_per_s" },
            [na](const SystemSpec& s) { return s.swarmx.supported ? formatSi(s.swarmx.linkBytesPerS, "B/s") : na; } },
        { "SwarmX level latency", { "swarmx.level_latency_s" },
            [na](const SystemSpec& s) { return s.swarmx.supported ? formatSi(s.swarmx.levelLatencyS, "s") : na; } },
    };
}

std::string pad(const std::string& text, std::size_t width)
{
    return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

} // namespace

std::string formatHardwareTable(const std::vector<SystemSpec>& systems)
{
    const std::vector<Row> table = rows();
    std::vector<std::vector<std::string>> cells(table.size());
    std::size_t labelWidth = 0;
    std::vector<std::size_t> columnWidth(systems.size(), 0);
    for (std::size_t c = 0; c < systems.size(); ++c)
        columnWidth[c] = systems[c].displayName.size();
    bool anyAssumed = false;
    for (std::size_t r = 0; r < table.size(); ++r) {
        labelWidth = std::max(labelWidth, table[r].label.size());
        for (std::size_t c = 0; c < systems.size(); ++c) {
            std::string cell = table[r].cell(systems[c]);
            if (cell != "-" && isAssumed(systems[c], table[r].provenanceKeys)) {
                cell += "*";
                anyAssumed = true;
            }
            columnWidth[c] = std::max(columnWidth[c], cell.size());
            cells[r].push_back(std::move(cell));
        }
    }
    std::string text = pad("", labelWidth + 2);
    for (std::size_t c = 0; c < systems.size(); ++c)
        text += pad(systems[c].displayName, columnWidth[c] + 3);
    while (!text.empty() && text.back() == ' ')
        text.pop_back();
    text += "\n";
    for (std::size_t r = 0; r < table.size(); ++r) {
        text += pad(table[r].label, labelWidth + 2);
        for (std::size_t c = 0; c < systems.size(); ++c)
            text += pad(cells[r][c], columnWidth[c] + 3);
        while (!text.empty() && text.back() == ' ')
            text.pop_back();
        text += "\n";
    }
    if (anyAssumed)
        text += "\n* assumed: not published; the reason is in the preset (waferscope-cli hardware --json, "
                "\"provenance\").\n";
    return text;
}

} // namespace waferscope::cli
