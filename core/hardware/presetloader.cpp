#include "core/hardware/presetloader.h"

#include "core/common/jsondocument.h"
#include "core/common/jsonlocator.h"
#include "core/common/textfile.h"
#include "core/hardware/presetvalidator.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <sstream>

namespace waferscope::core {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kSchema = "waferscope-hardware/1";
constexpr std::size_t kMaxPresetBytes = 1 << 20; // a preset is a few KB; refuse anything huge
// A preset nests three levels (wafer/cores/value); refusing much deeper documents keeps
// JsonLocator, whose pointers grow with depth, linear in the text.
constexpr int kMaxNestingDepth = 64;

// Typed, located access to one parsed preset. Errors are thrown as InputError and turned into
// a Diagnostic by loadPresetText().
class PresetReader {
public:
    PresetReader(std::string_view text, std::string fileName)
        : m_locator(text)
        , m_fileName(std::move(fileName))
    {
    }

    [[noreturn]] void fail(const std::string& pointer, const std::string& message) const
    {
        const JsonLocator::Position position = m_locator.locate(pointer);
        throw InputError { Diagnostic { m_fileName, position.line, position.column, message } };
    }

    static std::string dotted(const std::string& pointer)
    {
        std::string name = pointer.substr(1);
        for (char& c : name)
            c = (c == '/') ? '.' : c;
        return name;
    }

    const Json& member(const Json& object, const std::string& pointer, const std::string& key) const
    {
        auto it = object.find(key);
        if (it == object.end())
            fail(pointer, "missing key '" + dotted(pointer + '/' + key) + "'");
        return *it;
    }

    const Json& section(const Json& object, const std::string& pointer, const std::string& key) const
    {
        const Json& value = member(object, pointer, key);
        if (!value.is_object())
            fail(pointer + '/' + key, "'" + key + "' must be an object, got " + value.type_name());
        return value;
    }

    void requireOnlyKeys(
        const Json& object, const std::string& pointer, std::initializer_list<std::string_view> allowed) const
    {
        for (auto it = object.begin(); it != object.end(); ++it) {
            bool known = false;
            for (std::string_view key : allowed)
                known = known || key == it.key();
            if (!known) {
                std::string list;
                for (std::string_view key : allowed)
                    list += (list.empty() ? "" : ", ") + std::string(key);
                fail(pointer + '/' + it.key(),
                    "unknown key '" + dotted(pointer + '/' + it.key()) + "' (expected one of: " + list + ")");
            }
        }
    }

    std::string text(const Json& object, const std::string& pointer, const std::string& key) const
    {
        const Json& value = member(object, pointer, key);
        if (!value.is_string() || value.get<std::string>().empty())
            fail(pointer + '/' + key, "'" + dotted(pointer + '/' + key) + "' must be a non-empty string");
        return value.get<std::string>();
    }

    // A fact: {"value": V, "source": "..."} or {"value": V, "assumed": "reason"}. Records its
    // provenance and returns the value node.
    const Json& fact(const Json& object, const std::string& pointer, const std::string& key)
    {
        const std::string factPointer = pointer + '/' + key;
        const std::string name = dotted(factPointer);
        const Json& node = member(object, pointer, key);
        if (!node.is_object())
            fail(factPointer, "'" + name + "' must be an object {\"value\": ..., \"source\" or \"assumed\": \"...\"}");
        requireOnlyKeys(node, factPointer, { "value", "source", "assumed", "range", "range_reason" });
        const bool hasSource = node.contains("source");
        const bool hasAssumed = node.contains("assumed");
        if (hasSource == hasAssumed)
            fail(factPointer,
                "'" + name
                    + "' needs exactly one of \"source\" (where the value is published) or "
                      "\"assumed\" (why it is assumed)");
        const Json& why = hasSource ? node["source"] : node["assumed"];
        if (!why.is_string() || why.get<std::string>().empty())
            fail(factPointer + (hasSource ? "/source" : "/assumed"),
                "'" + name + "' must name its " + (hasSource ? "source" : "reason for the assumption")
                    + " as a non-empty string");
        Provenance provenance;
        provenance.kind = hasSource ? Provenance::Kind::Source : Provenance::Kind::Assumed;
        provenance.text = why.get<std::string>();
        if (node.contains("range") || node.contains("range_reason")) {
            // [low, high] around the value, with the reason for that span.
            const Json& range = node.contains("range") ? node["range"] : Json();
            if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number()
                || !std::isfinite(range[0].get<double>()) || !std::isfinite(range[1].get<double>())
                || range[0].get<double>() > range[1].get<double>())
                fail(factPointer + (node.contains("range") ? "/range" : ""),
                    "'" + name + "' range must be [low, high] numbers with low <= high, with a \"range_reason\"");
            if (!node.contains("range_reason") || !node["range_reason"].is_string()
                || node["range_reason"].get<std::string>().empty())
                fail(factPointer, "'" + name + "' has a range but no \"range_reason\" saying why it spans that");
            provenance.hasRange = true;
            provenance.rangeLow = range[0].get<double>();
            provenance.rangeHigh = range[1].get<double>();
            provenance.rangeReason = node["range_reason"].get<std::string>();
        }
        m_provenance[name] = std::move(provenance);
        return member(node, factPointer, "value");
    }

    double number(const Json& object, const std::string& pointer, const std::string& key, double min, double max)
    {
        const std::string valuePointer = pointer + '/' + key + "/value";
        const Json& value = fact(object, pointer, key);
        if (!value.is_number())
            fail(valuePointer, "'" + dotted(pointer + '/' + key) + "' must be a number, got " + value.type_name());
        const double number = value.get<double>();
        if (!std::isfinite(number) || number < min || number > max) {
            std::ostringstream message;
            message << "'" << dotted(pointer + '/' + key) << "' is " << number << ", expected a value in [" << min
                    << ", " << max << "]";
            fail(valuePointer, message.str());
        }
        withinRange(pointer + '/' + key, number);
        return number;
    }

    // A fact's optional range holds its value (checked once the value itself is).
    void withinRange(const std::string& factPointer, double value)
    {
        const Provenance& provenance = m_provenance[dotted(factPointer)];
        if (provenance.hasRange && (value < provenance.rangeLow || value > provenance.rangeHigh))
            fail(factPointer + "/range", "'" + dotted(factPointer) + "' range must contain its value");
    }

    std::int64_t integer(
        const Json& object, const std::string& pointer, const std::string& key, std::int64_t min, std::int64_t max)
    {
        const std::string valuePointer = pointer + '/' + key + "/value";
        const Json& value = fact(object, pointer, key);
        if (!value.is_number_integer())
            fail(valuePointer,
                "'" + dotted(pointer + '/' + key) + "' must be an integer, got "
                    + (value.is_number() ? std::string("a fractional number") : std::string(value.type_name())));
        const auto number = value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t(INT64_MAX)
            ? INT64_MAX
            : value.get<std::int64_t>();
        if (number < min || number > max)
            fail(valuePointer,
                "'" + dotted(pointer + '/' + key) + "' is " + std::to_string(number) + ", expected an integer in ["
                    + std::to_string(min) + ", " + std::to_string(max) + "]");
        withinRange(pointer + '/' + key, double(number));
        return number;
    }

    bool flag(const Json& object, const std::string& pointer, const std::string& key)
    {
        const Json& value = fact(object, pointer, key);
        if (!value.is_boolean())
            fail(pointer + '/' + key + "/value", "'" + dotted(pointer + '/' + key) + "' must be true or false");
        return value.get<bool>();
    }

    std::map<std::string, Provenance> takeProvenance() { return std::move(m_provenance); }

private:
    JsonLocator m_locator;
    std::string m_fileName;
    std::map<std::string, Provenance> m_provenance;
};

WaferSpec readWafer(PresetReader& reader, const Json& wafer)
{
    const std::string at = "/wafer";
    reader.requireOnlyKeys(wafer, at,
        { "name", "cores", "fabric_width", "fabric_height", "usable_x", "usable_y", "usable_width", "usable_height",
            "sram_per_pe_bytes", "clock_hz", "fmac_per_pe_per_cycle", "link_bytes_per_cycle", "routable_colors",
            "hop_latency_cycles", "sram_read_bytes_per_cycle", "sram_write_bytes_per_cycle" });
    WaferSpec spec;
    spec.name = reader.text(wafer, at, "name");
    spec.cores = reader.integer(wafer, at, "cores", 1, 100'000'000);
    spec.fabricWidth = int(reader.integer(wafer, at, "fabric_width", 1, 10'000));
    spec.fabricHeight = int(reader.integer(wafer, at, "fabric_height", 1, 10'000));
    spec.usableX = int(reader.integer(wafer, at, "usable_x", 0, 10'000));
    spec.usableY = int(reader.integer(wafer, at, "usable_y", 0, 10'000));
    spec.usableWidth = int(reader.integer(wafer, at, "usable_width", 1, 10'000));
    spec.usableHeight = int(reader.integer(wafer, at, "usable_height", 1, 10'000));
    spec.sramPerPeBytes = reader.integer(wafer, at, "sram_per_pe_bytes", 1024, 64 << 20);
    spec.clockHz = reader.number(wafer, at, "clock_hz", 1e6, 1e11);
    spec.fmacPerPePerCycle = int(reader.integer(wafer, at, "fmac_per_pe_per_cycle", 1, 1024));
    spec.linkBytesPerCycle = int(reader.integer(wafer, at, "link_bytes_per_cycle", 1, 1024));
    spec.routableColors = int(reader.integer(wafer, at, "routable_colors", 1, 64));
    spec.hopLatencyCycles = int(reader.integer(wafer, at, "hop_latency_cycles", 1, 1000));
    spec.sramReadBytesPerCycle = int(reader.integer(wafer, at, "sram_read_bytes_per_cycle", 1, 4096));
    spec.sramWriteBytesPerCycle = int(reader.integer(wafer, at, "sram_write_bytes_per_cycle", 1, 4096));
    return spec;
}

MemoryXSpec readMemoryX(PresetReader& reader, const Json& memoryx)
{
    const std::string at = "/memoryx";
    MemoryXSpec spec;
    spec.supported = reader.flag(memoryx, at, "supported");
    if (!spec.supported) {
        reader.requireOnlyKeys(memoryx, at, { "supported" });
        return spec;
    }
    reader.requireOnlyKeys(memoryx, at,
        { "supported", "capacity_bytes", "dram_bytes", "max_params", "bandwidth_bytes_per_s", "optimizer_params_per_s",
            "bytes_per_param", "dram_bandwidth_bytes_per_s", "flash_bandwidth_bytes_per_s" });
    spec.capacityBytes = reader.number(memoryx, at, "capacity_bytes", 1e9, 1e19);
    spec.dramBytes = reader.number(memoryx, at, "dram_bytes", 1e9, 1e19);
    spec.maxParams = reader.number(memoryx, at, "max_params", 1e6, 1e16);
    spec.bandwidthBytesPerS = reader.number(memoryx, at, "bandwidth_bytes_per_s", 1e6, 1e15);
    spec.optimizerParamsPerS = reader.number(memoryx, at, "optimizer_params_per_s", 1e3, 1e15);
    // Optional, so presets written before the tiers were modelled still load: without them the
    // model's own weights and optimizer state are stored, and both tiers read at the I/O rate.
    if (memoryx.contains("bytes_per_param"))
        spec.bytesPerParam = reader.number(memoryx, at, "bytes_per_param", 1.0, 1e4);
    if (memoryx.contains("dram_bandwidth_bytes_per_s"))
        spec.dramBandwidthBytesPerS = reader.number(memoryx, at, "dram_bandwidth_bytes_per_s", 1e6, 1e15);
    if (memoryx.contains("flash_bandwidth_bytes_per_s"))
        spec.flashBandwidthBytesPerS = reader.number(memoryx, at, "flash_bandwidth_bytes_per_s", 1e6, 1e15);
    return spec;
}

SwarmXSpec readSwarmX(PresetReader& reader, const Json& swarmx)
{
    const std::string at = "/swarmx";
    SwarmXSpec spec;
    spec.supported = reader.flag(swarmx, at, "supported");
    if (!spec.supported) {
        reader.requireOnlyKeys(swarmx, at, { "supported" });
        return spec;
    }
    reader.requireOnlyKeys(
        swarmx, at, { "supported", "max_systems", "fan_out", "link_bytes_per_s", "level_latency_s" });
    spec.maxSystems = int(reader.integer(swarmx, at, "max_systems", 1, 1'000'000));
    spec.fanOut = int(reader.integer(swarmx, at, "fan_out", 2, 1024));
    spec.linkBytesPerS = reader.number(swarmx, at, "link_bytes_per_s", 1e6, 1e15);
    spec.levelLatencyS = reader.number(swarmx, at, "level_latency_s", 0.0, 1.0);
    return spec;
}

SystemSpec readSystem(PresetReader& reader, const Json& root)
{
    reader.requireOnlyKeys(
        root, "", { "schema", "name", "display_name", "description", "wafer", "system", "memoryx", "swarmx" });
    const std::string schema = reader.text(root, "", "schema");
    if (schema != kSchema)
        reader.fail("/schema", "unsupported preset schema '" + schema + "' (expected '" + std::string(kSchema) + "')");
    SystemSpec spec;
    spec.name = reader.text(root, "", "name");
    spec.displayName = reader.text(root, "", "display_name");
    if (root.contains("description"))
        spec.description = reader.text(root, "", "description");
    spec.wafer = readWafer(reader, reader.section(root, "", "wafer"));
    const Json& system = reader.section(root, "", "system");
    reader.requireOnlyKeys(system, "/system", { "io_bytes_per_s", "inter_system_latency_s" });
    spec.ioBytesPerS = reader.number(system, "/system", "io_bytes_per_s", 1e6, 1e15);
    spec.interSystemLatencyS = reader.number(system, "/system", "inter_system_latency_s", 0.0, 1.0);
    spec.memoryx = readMemoryX(reader, reader.section(root, "", "memoryx"));
    spec.swarmx = readSwarmX(reader, reader.section(root, "", "swarmx"));
    spec.provenance = reader.takeProvenance();
    return spec;
}

} // namespace

Expected<SystemSpec> loadPresetText(std::string_view text, const std::string& fileName)
{
    if (text.size() > kMaxPresetBytes)
        return Diagnostic { fileName, 1, 1,
            "preset is " + std::to_string(text.size()) + " bytes; a hardware preset is at most "
                + std::to_string(kMaxPresetBytes) + " bytes" };
    Expected<JsonTree> parsed
        = parseJsonDocument(text, fileName, kMaxNestingDepth, "invalid JSON: ", "a hardware preset nests 3");
    if (!parsed)
        return parsed.error();
    const JsonTree root = std::move(parsed).value();
    if (!root.is_object())
        return Diagnostic { fileName, 1, 1,
            std::string("a hardware preset must be a JSON object, got ") + root.type_name() };
    try {
        PresetReader reader(text, fileName);
        SystemSpec spec = readSystem(reader, root);
        if (std::optional<PresetProblem> problem = findInconsistency(spec))
            reader.fail(problem->pointer, problem->message);
        return spec;
    } catch (const InputError& error) {
        return error.diagnostic;
    }
}

Expected<SystemSpec> loadPresetFile(const std::string& path)
{
    Expected<std::string> text = readTextFile(path, kMaxPresetBytes, "hardware preset JSON file");
    if (!text)
        return text.error();
    return loadPresetText(text.value(), path);
}

} // namespace waferscope::core
