#pragma once

// The study's progress (study.h StudyProgress): which stages a spec runs, and a reporter that
// turns each stage's own counts into one fraction that never goes back.
#include "core/study/study.h"

#include <functional>
#include <mutex>
#include <vector>

namespace waferscope::core::study {

// The stages `spec` runs, in order; pieces the spec holds count as stages that finish at once.
std::vector<StudyStage> stagesOf(const StudySpec& spec);

// Any thread, one call at a time (a mutex orders the sensitivity sweep's pool threads); a report
// that would move the fraction back (a stage's counts arriving out of order) is dropped.
class ProgressReporter {
public:
    ProgressReporter(std::vector<StudyStage> stages, std::function<void(const StudyProgress&)> sink);

    void enter(StudyStage stage) { report(stage, 0, 0); }
    void report(StudyStage stage, std::int64_t done, std::int64_t total, const std::string& detail = {});
    void finish(); // Done, fraction 1

private:
    std::vector<StudyStage> m_stages;
    std::function<void(const StudyProgress&)> m_sink; // null: nothing is reported
    std::mutex m_mutex;
    double m_last = -1.0; // the last fraction reported, under m_mutex
};

} // namespace waferscope::core::study
