#pragma once

#include "core/report/runreport.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace waferscope::core::report {

// A run's per-step scalars as a TensorBoard event file, written beside report.json in a run
// directory: `tensorboard --logdir DIR` plots them as it plots a trainer's summaries.
//
// The file is a sequence of TFRecords, each an Event message (tensorboard.proto): first one
// whose file_version is "brain.Event:2", then one per simulated step with that step's scalars
// as simple values, tagged as below. Its wall_time is the write time plus the step's end in
// simulated seconds, so TensorBoard's "Relative" axis reads simulated time.

// Tags, in the order written. Training and eval write samples_per_s, inference tokens_per_s
// (for each user); the values are report.json's steps[].
inline constexpr const char* kStepTimeTag = "step_time_s";
inline constexpr const char* kSamplesPerSTag = "samples_per_s";
inline constexpr const char* kTokensPerSTag = "tokens_per_s";
inline constexpr const char* kMfuTag = "mfu";
inline constexpr const char* kUtilizationTags[5]
    = { "utilization/compute", "utilization/fabric", "utilization/io", "utilization/memoryx", "utilization/swarmx" };

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), and the masked form TFRecord stores:
// ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t crc32c(std::string_view bytes);
std::uint32_t maskedCrc32c(std::string_view bytes);

// Appends one TFRecord: the length (8 bytes, little-endian), its masked CRC (4 bytes), the data,
// and the data's masked CRC.
void appendTfRecord(std::string& out, std::string_view data);

// "events.out.tfevents.<unixTime>.<host>.waferscope"; characters of `host` other than letters,
// digits, '.', '-' and '_' become '_'.
std::string eventFileName(std::int64_t unixTime, std::string_view host);
// Whether `name` is an event file that WaferScope wrote (one a later write replaces); event files
// of other writers end otherwise and are left alone.
bool isWaferScopeEventFile(std::string_view name);

// The event file of `report`, with wall times counted from `wallTimeBase` (seconds since the
// Unix epoch).
std::string eventFileBytes(const RunReport& report, double wallTimeBase);

} // namespace waferscope::core::report
