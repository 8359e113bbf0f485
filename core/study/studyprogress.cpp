#include "core/study/studyprogress.h"

#include <algorithm>

namespace waferscope::core::study {

std::vector<StudyStage> stagesOf(const StudySpec& spec)
{
    const bool cycle = spec.level == StudyLevel::Cycle;
    const bool report = spec.report || spec.writer;
    std::vector<StudyStage> stages { StudyStage::Loading, StudyStage::Compiling };
    if (!cycle || report)
        stages.push_back(StudyStage::Running);
    if (!cycle && (!spec.scalingCounts.empty() || spec.scaling))
        stages.push_back(StudyStage::Scaling);
    if (cycle)
        stages.push_back(StudyStage::CycleLevel);
    if ((spec.sensitivity || spec.sensitivityResult || (!cycle && spec.writer)) && (!cycle || report))
        stages.push_back(StudyStage::Sensitivity);
    if (spec.writer)
        stages.push_back(StudyStage::Writing);
    return stages;
}

ProgressReporter::ProgressReporter(std::vector<StudyStage> stages, std::function<void(const StudyProgress&)> sink)
    : m_stages(std::move(stages))
    , m_sink(std::move(sink))
{
}

void ProgressReporter::report(StudyStage stage, std::int64_t done, std::int64_t total, const std::string& detail)
{
    if (!m_sink)
        return;
    StudyProgress progress;
    progress.stage = stage;
    progress.stageCount = int(m_stages.size());
    const auto at = std::find(m_stages.begin(), m_stages.end(), stage);
    progress.stageIndex = int(at - m_stages.begin()); // Done: past the last
    progress.done = done;
    progress.total = total;
    progress.detail = detail;
    const double within = total > 0 ? std::clamp(double(done) / double(total), 0.0, 1.0) : 0.0;
    progress.fraction = std::min(1.0, (double(progress.stageIndex) + within) / double(progress.stageCount));
    const std::lock_guard lock(m_mutex);
    if (progress.fraction < m_last)
        return;
    m_last = progress.fraction;
    m_sink(progress);
}

void ProgressReporter::finish()
{
    report(StudyStage::Done, 0, 0);
}

} // namespace waferscope::core::study
