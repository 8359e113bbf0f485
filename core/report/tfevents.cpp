#include "core/report/tfevents.h"

#include "report/tensorboard.pb.h" // generated from tensorboard.proto

#include <array>
#include <cstring>

namespace waferscope::core::report {

namespace {

constexpr std::string_view kEventFilePrefix = "events.out.tfevents.";
constexpr std::string_view kWaferScopeSuffix = ".waferscope";

constexpr std::array<std::uint32_t, 256> crcTable()
{
    std::array<std::uint32_t, 256> table {};
    for (std::uint32_t byte = 0; byte < 256; ++byte) {
        std::uint32_t crc = byte;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        table[byte] = crc;
    }
    return table;
}

constexpr std::array<std::uint32_t, 256> kCrcTable = crcTable();

void appendLittleEndian(std::string& out, std::uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; ++i)
        out.push_back(char((value >> (8 * i)) & 0xffu));
}

void addScalar(tensorboard::Summary& summary, const char* tag, double value)
{
    tensorboard::Summary::Value* entry = summary.add_value();
    entry->set_tag(tag);
    entry->set_simple_value(float(value));
}

} // namespace

std::uint32_t crc32c(std::string_view bytes)
{
    std::uint32_t crc = 0xFFFFFFFFu;
    for (const char c : bytes)
        crc = kCrcTable[(crc ^ std::uint8_t(c)) & 0xffu] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

std::uint32_t maskedCrc32c(std::string_view bytes)
{
    const std::uint32_t crc = crc32c(bytes);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

void appendTfRecord(std::string& out, std::string_view data)
{
    std::string length;
    appendLittleEndian(length, data.size(), 8);
    out += length;
    appendLittleEndian(out, maskedCrc32c(length), 4);
    out.append(data);
    appendLittleEndian(out, maskedCrc32c(data), 4);
}

std::string eventFileName(std::int64_t unixTime, std::string_view host)
{
    std::string safe;
    for (const char c : host) {
        const bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.'
            || c == '-' || c == '_';
        safe.push_back(kept ? c : '_');
    }
    if (safe.empty())
        safe = "localhost";
    return std::string(kEventFilePrefix) + std::to_string(unixTime) + "." + safe + std::string(kWaferScopeSuffix);
}

bool isWaferScopeEventFile(std::string_view name)
{
    return name.size() > kEventFilePrefix.size() + kWaferScopeSuffix.size() && name.starts_with(kEventFilePrefix)
        && name.ends_with(kWaferScopeSuffix);
}

std::string eventFileBytes(const RunReport& report, double wallTimeBase)
{
    std::string out;
    std::string record;
    tensorboard::Event header;
    header.set_wall_time(wallTimeBase);
    header.set_file_version("brain.Event:2");
    header.SerializeToString(&record);
    appendTfRecord(out, record);
    const bool inference = report.metrics.mode == engine::RunMode::Inference;
    for (const engine::StepFigures& step : report.steps) {
        tensorboard::Event event;
        event.set_wall_time(wallTimeBase + step.endS);
        event.set_step(step.step);
        tensorboard::Summary& summary = *event.mutable_summary();
        addScalar(summary, kStepTimeTag, step.stepTimeS);
        if (inference)
            addScalar(summary, kTokensPerSTag, step.tokensPerS);
        else
            addScalar(summary, kSamplesPerSTag, step.samplesPerS);
        addScalar(summary, kMfuTag, step.mfu);
        const engine::Utilization& u = step.utilization;
        const double utilization[5] = { u.compute, u.fabric, u.io, u.memoryx, u.swarmx };
        for (int i = 0; i < 5; ++i)
            addScalar(summary, kUtilizationTags[i], utilization[i]);
        record.clear();
        event.SerializeToString(&record);
        appendTfRecord(out, record);
    }
    return out;
}

} // namespace waferscope::core::report
