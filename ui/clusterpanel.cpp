#include "ui/clusterpanel.h"

#include "core/common/units.h"
#include "core/report/atomicfile.h"
#include "ui/clustergantt.h"
#include "ui/clustertiles.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QRegularExpression>
#include <QSlider>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <string_view>

namespace waferscope::ui {

namespace {

enum Column { Name, Mode, NumCsx, Replicas, Submit, Start, End, Wait, Step, Verdict, ColumnCount };
constexpr int kSliderSteps = 1000;

QString clock(double seconds)
{
    return QString::fromStdString(core::formatClock(seconds));
}

QString clock(const std::optional<double>& seconds)
{
    return seconds ? clock(*seconds) : QStringLiteral("-");
}

bool sameAllocations(const core::cluster::JobsFile& a, const core::cluster::JobsFile& b)
{
    if (a.jobs.size() != b.jobs.size())
        return false;
    for (std::size_t j = 0; j < a.jobs.size(); ++j)
        if (a.jobs[j].numCsx != b.jobs[j].numCsx)
            return false;
    return true;
}

} // namespace

ClusterPanel::ClusterPanel(QWidget* parent)
    : QWidget(parent)
    , m_runner(new JobRunner(this))
    , m_timings(std::make_shared<Timings>())
    , m_summary(new QLabel(this))
    , m_policyBox(new QComboBox(this))
    , m_sizeBox(new QCheckBox(tr("Size inference replicas"), this))
    , m_tiles(new ClusterTiles(this))
    , m_slider(new QSlider(Qt::Horizontal, this))
    , m_timeLabel(new QLabel(this))
    , m_gantt(new ClusterGantt(this))
    , m_table(new QTableWidget(0, ColumnCount, this))
{
    m_summary->setWordWrap(true);
    m_summary->setText(tr("Open or drop a jobs file (YAML with a top-level 'jobs:' key, such as "
                          "samples/cluster/condor_galaxy.yaml) to schedule it on a shared cluster."));
    m_policyBox->addItem(tr("EASY backfill"), int(core::cluster::Policy::Backfill));
    m_policyBox->addItem(tr("FIFO"), int(core::cluster::Policy::Fifo));
    m_policyBox->setToolTip(
        tr("Backfill starts a later job early only when that does not delay the head of the queue"));
    connect(m_runner, &JobRunner::progress, this, [this](int, double fraction) {
        const int percent = int(100.0 * fraction);
        m_summary->setText(m_busyText + QStringLiteral(" %1 %").arg(percent));
        Q_EMIT progressed(percent);
    });
    connect(m_policyBox, &QComboBox::currentIndexChanged, this,
        [this] { setPolicy(core::cluster::Policy(m_policyBox->currentData().toInt())); });
    auto* header = new QHBoxLayout;
    header->addWidget(m_summary, 1);
    header->addWidget(new QLabel(tr("Policy:"), this));
    header->addWidget(m_policyBox);
    m_sizeBox->setToolTip(tr("Inference jobs with tokens_per_s_per_user run with the fewest replicas that give "
                             "each user that rate"));
    connect(m_sizeBox, &QCheckBox::toggled, this, &ClusterPanel::setSizeInference);
    header->addWidget(m_sizeBox);

    m_slider->setRange(0, kSliderSteps);
    connect(m_slider, &QSlider::valueChanged, this, [this](int value) {
        if (m_result && m_result->makespanS)
            setTime(m_result->firstSubmitS.value_or(0.0) + *m_result->makespanS * value / kSliderSteps);
    });
    auto* left = new QWidget(this);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(m_tiles, 1);
    auto* timeRow = new QHBoxLayout;
    timeRow->addWidget(m_slider, 1);
    timeRow->addWidget(m_timeLabel);
    leftLayout->addLayout(timeRow);

    m_table->setHorizontalHeaderLabels({ tr("Job"), tr("Mode"), tr("num_csx"), tr("Replicas"), tr("Submitted"),
        tr("Starts"), tr("Ends"), tr("Waits"), tr("Step"), tr("") });
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->setVisible(false);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
    connect(m_table, &QTableWidget::cellChanged, this, &ClusterPanel::onCellChanged);
    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int column) {
        if (column == NumCsx || !m_file || !m_result || row < 0 || std::size_t(row) >= m_file->jobs.size())
            return;
        const core::cluster::JobSpec& job = m_file->jobs[std::size_t(row)];
        if (const std::optional<double> start = m_result->jobs[std::size_t(row)].startS)
            setTime(*start);
        Q_EMIT jobActivated(QString::fromStdString(job.paramsPath), QString::fromStdString(m_file->cluster.system),
            job.numCsx, job.mode);
    });
    connect(m_gantt, &ClusterGantt::timeSelected, this, &ClusterPanel::setTime);

    auto* right = new QSplitter(Qt::Vertical, this);
    right->addWidget(m_gantt);
    right->addWidget(m_table);
    right->setStretchFactor(0, 3);
    right->setStretchFactor(1, 2);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(left);
    split->addWidget(right);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);
    layout->addLayout(header);
    layout->addWidget(split, 1);
}

void ClusterPanel::open(const QString& path)
{
    // A new file: timings start afresh (its params files may have changed on disk).
    m_timings = std::make_shared<Timings>();
    m_pending = path;
    m_requested.reset();
    reschedule(path);
}

void ClusterPanel::setPolicy(core::cluster::Policy policy)
{
    m_policy = policy;
    const int index = m_policyBox->findData(int(policy));
    if (index != m_policyBox->currentIndex())
        m_policyBox->setCurrentIndex(index);
    if (m_file)
        reschedule(std::nullopt);
}

void ClusterPanel::setSizeInference(bool on)
{
    m_sizeInference = on;
    if (m_sizeBox->isChecked() != on)
        m_sizeBox->setChecked(on);
    if (m_file || m_pending)
        reschedule(std::nullopt);
}

bool ClusterPanel::setNumCsx(int job, int numCsx)
{
    if (!m_file || job < 0 || std::size_t(job) >= m_file->jobs.size() || numCsx < 1 || numCsx > m_file->cluster.systems)
        return false;
    if (!m_requested)
        m_requested = m_file;
    m_requested->jobs[std::size_t(job)].numCsx = numCsx;
    reschedule(std::nullopt);
    return true;
}

void ClusterPanel::reschedule(std::optional<QString> path)
{
    // A change while a file is being opened applies to that file.
    if (!path && m_pending)
        path = m_pending;
    const std::optional<core::cluster::JobsFile> edited = path ? std::nullopt : m_requested ? m_requested : m_file;
    const std::string file = path ? path->toStdString() : std::string();
    core::cluster::ClusterOptions options;
    options.policy = m_policy;
    options.sizeInference = m_sizeInference;
    m_busyText = path ? tr("Scheduling %1 …").arg(*path) : tr("Rescheduling …");
    m_summary->setText(m_busyText);
    m_runner->start<Outcome>(
        [edited, file, options, timings = m_timings](const JobContext& context) mutable {
            Outcome outcome;
            std::optional<core::cluster::JobsFile> jobs = edited;
            if (!jobs) {
                core::Expected<core::cluster::JobsFile> read = core::cluster::readJobsFile(file);
                if (!read) {
                    outcome.error = QString::fromStdString(read.error().format());
                    return outcome;
                }
                jobs = std::move(read).value();
            }
            outcome.file = jobs;
            options.cancelled = [context] { return context.cancelled(); };
            // Sizing the first half, timing the jobs the second (all of it without sizing); a
            // percent at a time.
            options.progress
                = [context, sized = false, percent = -1](const core::cluster::ClusterProgress& at) mutable {
                      const double share = at.total > 0 ? double(at.done) / double(at.total) : 1.0;
                      const std::string_view phase = at.phase;
                      sized = sized || phase == "sizing";
                      const double fraction = phase == "sizing" ? 0.5 * share
                          : phase == "timing"                   ? (sized ? 0.5 + 0.5 * share : share)
                                                                : 1.0;
                      if (int(100.0 * fraction) != percent) {
                          percent = int(100.0 * fraction);
                          context.progress(fraction);
                      }
                  };
            const std::lock_guard lock(timings->mutex);
            if (context.cancelled())
                return outcome; // superseded while it waited: dropped unseen
            core::Expected<core::cluster::ClusterResult> result
                = core::cluster::scheduleCluster(*jobs, options, timings->cache);
            if (!result)
                outcome.error = QString::fromStdString(result.error().format());
            else
                outcome.result = std::make_shared<const core::cluster::ClusterResult>(std::move(result).value());
            return outcome;
        },
        [this](int, Outcome outcome) { show(std::move(outcome)); });
}

void ClusterPanel::show(Outcome outcome)
{
    m_pending.reset();
    if (!outcome.error.isEmpty()) {
        m_requested.reset(); // the edits that failed are dropped: the table shows what is scheduled
        fillTable();
        m_summary->setText(
            m_result ? summary() + tr(" (the last change failed: %1)").arg(outcome.error) : outcome.error);
        Q_EMIT failed(outcome.error);
        Q_EMIT scheduled();
        return;
    }
    // The jobs as scheduled; edits made since are still to come.
    m_file = std::move(outcome.file);
    if (m_requested && sameAllocations(*m_requested, *m_file))
        m_requested.reset();
    m_result = std::move(outcome.result);
    m_tiles->setSchedule(m_result);
    m_gantt->setSchedule(m_result);
    // A readable row per job (up to a point; the table lists them all).
    m_gantt->setMinimumHeight(std::min(420, 17 * int(m_result->jobs.size() + 1) + 56));
    fillTable();
    m_summary->setText(summary());
    setTime(m_tiles->time());
    Q_EMIT scheduled();
}

QString ClusterPanel::shownSummary() const
{
    return m_summary->text();
}

QString ClusterPanel::summary() const
{
    if (!m_file || !m_result)
        return {};
    int runs = 0;
    for (const core::cluster::JobResult& job : m_result->jobs)
        runs += job.startS ? 1 : 0;
    return tr("%1: %2 x %3, MemoryX %4. %5 of %6 jobs run; makespan %7, utilization %8.")
        .arg(QString::fromStdString(m_file->path))
        .arg(m_result->systems)
        .arg(QString::fromStdString(m_result->system))
        .arg(QString::fromStdString(core::formatBytes(m_result->memoryxBytes)))
        .arg(runs)
        .arg(m_result->jobs.size())
        .arg(clock(m_result->makespanS))
        .arg(m_result->utilization ? QStringLiteral("%1 %").arg(100.0 * *m_result->utilization, 0, 'f', 1)
                                   : QStringLiteral("-"));
}

void ClusterPanel::fillTable()
{
    m_filling = true;
    m_table->setRowCount(m_result ? int(m_result->jobs.size()) : 0);
    for (int row = 0; m_result && row < m_table->rowCount(); ++row) {
        const core::cluster::JobResult& job = m_result->jobs[std::size_t(row)];
        const QStringList cells { QString::fromStdString(job.name), QString::fromLatin1(core::toString(job.mode)),
            QString::number(job.numCsx), QString::number(job.replicas), clock(job.submitS), clock(job.startS),
            clock(job.endS), clock(job.waitS),
            job.stepTimeS > 0.0 ? QString::fromStdString(core::formatSeconds(job.stepTimeS)) : QStringLiteral("-"),
            job.reason.empty() ? tr("runs") : tr("never runs: %1").arg(QString::fromStdString(job.reason)) };
        for (int column = 0; column < ColumnCount; ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            Qt::ItemFlags flags = Qt::ItemIsSelectable | Qt::ItemIsEnabled;
            if (column == NumCsx) {
                flags |= Qt::ItemIsEditable;
                item->setData(Qt::EditRole, job.numCsx);
                item->setToolTip(tr("Double-click to change the systems per replica: the cluster reschedules"));
            }
            if (column == Name)
                item->setData(Qt::DecorationRole, clusterJobColour(std::size_t(row)));
            if (column == Verdict)
                item->setToolTip(cells[column]);
            item->setFlags(flags);
            m_table->setItem(row, column, item);
        }
    }
    m_table->resizeColumnsToContents();
    m_filling = false;
}

void ClusterPanel::onCellChanged(int row, int column)
{
    if (m_filling || column != NumCsx)
        return;
    const int value = m_table->item(row, column)->data(Qt::EditRole).toInt();
    if (!setNumCsx(row, value)) {
        Q_EMIT failed(tr("%1: num_csx must be 1 to %2")
                          .arg(m_table->item(row, Name)->text())
                          .arg(m_file ? m_file->cluster.systems : 0));
        // Back to what is scheduled, once the view has finished committing this edit.
        QTimer::singleShot(0, this, &ClusterPanel::fillTable);
    }
}

void ClusterPanel::setTime(double seconds)
{
    m_tiles->setTime(seconds);
    m_gantt->setCursor(seconds);
    m_timeLabel->setText(clock(seconds));
    if (m_result && m_result->makespanS && *m_result->makespanS > 0.0) {
        const QSignalBlocker blocker(m_slider);
        const double share = (seconds - m_result->firstSubmitS.value_or(0.0)) / *m_result->makespanS;
        m_slider->setValue(int(std::lround(kSliderSteps * std::clamp(share, 0.0, 1.0))));
    }
}

QString ClusterPanel::saveJobsAs(const QString& path) const
{
    if (!m_file)
        return tr("%1: error: there are no jobs to save").arg(path);
    const std::string target = path.toStdString();
    if (const std::optional<core::Diagnostic> error
        = core::report::writeFileAtomically(target, core::cluster::jobsFileText(*m_file, target)))
        return QString::fromStdString(error->format());
    return {};
}

} // namespace waferscope::ui
