#include "ui/models/sensitivitymodel.h"

#include "ui/models/jobrunner.h"

namespace waferscope::ui {

SensitivityModel::SensitivityModel(QObject* parent)
    : QObject(parent)
    , m_jobs(new JobRunner(this))
{
    connect(m_jobs, &JobRunner::progress, this, [this](int, double fraction) { Q_EMIT progress(fraction); });
}

SensitivityModel::~SensitivityModel() = default;

bool SensitivityModel::isComputing() const
{
    return m_jobs->isBusy();
}

void SensitivityModel::clear(const QString& message)
{
    m_jobs->cancel();
    m_pending.reset();
    m_sensitivity.reset();
    Q_EMIT cleared(message);
}

void SensitivityModel::setRun(std::shared_ptr<const core::ModelGraph> graph, const core::SystemSpec& system,
    const core::CompileOptions& compile, const core::engine::RunOptions& run,
    const core::engine::Calibration& calibration)
{
    clear({});
    Q_EMIT requested();
    Request request { std::move(graph), system, compile, run, calibration };
    if (m_active)
        startSweep(std::move(request));
    else
        m_pending = std::move(request);
}

void SensitivityModel::setActive(bool active)
{
    m_active = active;
    if (m_active && m_pending) {
        Request request = std::move(*m_pending);
        m_pending.reset();
        startSweep(std::move(request));
    }
}

void SensitivityModel::startSweep(Request request)
{
    using Outcome = core::Expected<core::sweeps::Sensitivity>;
    m_jobs->start<Outcome>(
        [request = std::move(request)](const JobContext& context) -> Outcome {
            core::sweeps::SweepOptions options;
            options.cancelled = [context] { return context.cancelled(); };
            options.progress
                = [context](int done, int total) { context.progress(total > 0 ? double(done) / double(total) : 0.0); };
            return core::sweeps::runSensitivity(
                *request.graph, request.system, request.compile, request.run, request.calibration, options);
        },
        [this](int, Outcome outcome) {
            if (outcome)
                m_sensitivity = std::move(outcome).value();
            else
                clear(tr("The sensitivity sweep failed: %1").arg(QString::fromStdString(outcome.error().message)));
            Q_EMIT computed();
        });
}

} // namespace waferscope::ui
