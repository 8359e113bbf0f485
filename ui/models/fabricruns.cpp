#include "ui/models/fabricruns.h"

#include "ui/models/jobrunner.h"
#include "ui/models/tokenrun.h"

#include "core/compiler/compiler.h"

#include <QLocale>
#include <QThread>

#include <algorithm>

namespace waferscope::ui {

FabricRuns::FabricRuns(QObject* parent)
    : QObject(parent)
    , m_kernelRunner(new JobRunner(this))
    , m_tokenRunner(new JobRunner(this))
{
    connect(m_tokenRunner, &JobRunner::progress, this, [this](int, double fraction) { Q_EMIT progress(fraction); });
    connect(m_tokenRunner, &JobRunner::busyChanged, this, &FabricRuns::tokenBusyChanged);
}

FabricRuns::~FabricRuns() = default;

void FabricRuns::setPlan(std::shared_ptr<const core::ExecutionPlan> plan,
    std::shared_ptr<const core::LoadedModelFile> model, const core::SystemSpec& system)
{
    m_kernelRunner->cancel();
    m_tokenRunner->cancel();
    m_tokenRun.reset();
    m_plan = std::move(plan);
    m_model = std::move(model);
    m_system = system;
}

QString FabricRuns::kernelUnavailableReason(int planIndex) const
{
    if (!m_plan || !m_model || planIndex < 0 || planIndex >= int(m_plan->regions.size()))
        return tr("Select a region to run its kernel on the cycle-level fabric.");
    const core::Expected<core::fabric::KernelConfig> kernel
        = core::fabricKernelFor(m_plan->regions[std::size_t(planIndex)], m_model->graph, m_system);
    return kernel ? QString() : QString::fromStdString(kernel.error().message);
}

void FabricRuns::runKernel(int planIndex)
{
    if (!kernelUnavailableReason(planIndex).isEmpty())
        return;
    const core::Region& region = m_plan->regions[std::size_t(planIndex)];
    core::fabric::KernelConfig config = core::fabricKernelFor(region, m_model->graph, m_system).value();
    config.threads = std::max(1, QThread::idealThreadCount());
    const QString what = tr("%1 (%2 x %3 GEMV on %4 x %5 PEs, one token)")
                             .arg(QString::fromStdString(region.opName))
                             .arg(config.matrixRows)
                             .arg(config.matrixCols)
                             .arg(config.regionCols)
                             .arg(config.regionRows);
    const double boundCycles = core::fmacBoundCycles(region.kernel, config.simdWidth);
    using Ran = core::Expected<core::fabric::KernelResult>;
    m_kernelRunner->start<Ran>(
        [config](const JobContext& context) {
            return core::fabric::runKernel(
                config, [context](const core::fabric::Fabric&) { return !context.cancelled(); }, 256);
        },
        [this, what, boundCycles](int, Ran result) {
            if (!result) {
                Q_EMIT kernelFailed(QString::fromStdString(result.error().format()));
                Q_EMIT error(QString::fromStdString(result.error().format()));
                return;
            }
            const QString text = tr("%1: %2 cycles on the fabric; the plan's FMAC bound is %3 cycles, the rest is "
                                    "multicast and reduction latency; max |error| %4 against a double-precision "
                                    "reference; %5 s")
                                     .arg(what)
                                     .arg(result->cycles)
                                     .arg(boundCycles, 0, 'f', 0)
                                     .arg(result->maxAbsError, 0, 'g', 2)
                                     .arg(result->wallS, 0, 'f', 2);
            Q_EMIT info(text);
            Q_EMIT kernelFinished(*result, text);
        });
    Q_EMIT kernelStarted(tr("Running %1 at cycle level …").arg(what));
}

QString FabricRuns::tokenUnavailableReason() const
{
    return ui::tokenUnavailableReason(m_plan.get(), m_model ? &m_model->graph : nullptr);
}

bool FabricRuns::isTokenRunning() const
{
    return m_tokenRunner->isBusy();
}

void FabricRuns::cancelToken()
{
    const bool running = m_tokenRunner->isBusy();
    m_tokenRunner->cancel();
    if (running)
        Q_EMIT tokenFinished();
}

namespace {

// "; prompt of 2: prefill 1,234 cycles on a 4 x 4 prefill block (model 1,300), first token after
// 6,578": what the run's figures say about the prompt (empty without one).
QString prefillText(const core::cyclelevel::CycleRunResult& run)
{
    if (run.prompt.size() < 2)
        return {};
    const QLocale locale;
    const QString path = run.prefillBlock > 0 ? QObject::tr(" on a %1 x %1 prefill block (model %2)")
                                                    .arg(run.prefillBlock)
                                                    .arg(locale.toString(run.prefillModelCycles, 'f', 0))
                                              : QObject::tr(" one position at a time");
    return QObject::tr("; prompt of %1: prefill %2 cycles%3, first token after %4")
        .arg(run.prompt.size())
        .arg(locale.toString(qulonglong(run.prefillCycles)), path, locale.toString(qulonglong(run.ttftCycles)));
}

} // namespace

void FabricRuns::runToken(int promptTokens)
{
    if (const QString why = tokenUnavailableReason(); !why.isEmpty()) {
        Q_EMIT error(tr("Run token on fabric: error: %1").arg(why));
        return;
    }
    TokenRunRequest request { m_model, m_plan, m_system, {} };
    request.cycle.tokens = 1;
    request.cycle.promptTokens = std::max(1, promptTokens);
    request.cycle.threads = std::max(1, QThread::idealThreadCount());
    std::shared_ptr<core::fabric::RecordedFrames> frames = makeTokenFrames(*m_plan, m_system);
    m_tokenRun.reset();
    using Ran = core::Expected<std::shared_ptr<const core::cyclelevel::CycleRunResult>>;
    m_tokenRunner->start<Ran>(
        [request, frames](const JobContext& context) {
            return ui::runTokenOnFabric(
                request, frames, [context] { return context.cancelled(); },
                [context](double fraction) { context.progress(fraction); });
        },
        [this, seed = request.cycle.seed](int, Ran result) {
            if (!result) {
                Q_EMIT error(QString::fromStdString(result.error().format()));
                Q_EMIT tokenFinished();
                Q_EMIT tokenSettled(tr("the token run failed"));
                return;
            }
            m_tokenRun = std::move(result).value();
            m_tokenSeed = seed;
            const core::cyclelevel::CycleRunResult& run = *m_tokenRun;
            Q_EMIT info(tr("Token on fabric: %1 on %2, %3 cycles per token (%4 tokens/s); "
                           "generated %5, the reference %6; %7 s per token")
                            .arg(QString::fromStdString(run.model), QString::fromStdString(run.system))
                            .arg(run.cyclesPerToken, 0, 'f', 0)
                            .arg(run.tokensPerS, 0, 'f', 0)
                            .arg(run.tokens.empty() ? -1 : run.tokens.back())
                            .arg(run.referenceTokens.empty() ? -1 : run.referenceTokens.back())
                            .arg(run.decodeS, 0, 'f', 2)
                + prefillText(run));
            Q_EMIT tokenFinished();
            Q_EMIT tokenSettled(tr("ran a token on the fabric"));
        });
    Q_EMIT tokenStarted(frames);
}

} // namespace waferscope::ui
