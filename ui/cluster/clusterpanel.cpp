#include "ui/cluster/clusterpanel.h"

#include "core/cluster/cluster.h"
#include "core/common/units.h"
#include "ui/cluster/clustergantt.h"
#include "ui/cluster/clustertiles.h"
#include "ui/models/clustersession.h"

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

} // namespace

ClusterPanel::ClusterPanel(ClusterSession* session, QWidget* parent)
    : QWidget(parent)
    , m_session(session)
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
    connect(m_session, &ClusterSession::started, this, [this] { m_summary->setText(m_session->busyText()); });
    connect(m_session, &ClusterSession::progressed, this,
        [this](int percent) { m_summary->setText(m_session->busyText() + QStringLiteral(" %1 %").arg(percent)); });
    connect(m_session, &ClusterSession::scheduled, this, &ClusterPanel::showSchedule);
    connect(m_policyBox, &QComboBox::currentIndexChanged, this, [this] {
        const auto policy = core::cluster::Policy(m_policyBox->currentData().toInt());
        if (policy != m_session->policy())
            m_session->setPolicy(policy);
    });
    auto* header = new QHBoxLayout;
    header->addWidget(m_summary, 1);
    header->addWidget(new QLabel(tr("Policy:"), this));
    header->addWidget(m_policyBox);
    m_sizeBox->setToolTip(tr("Inference jobs with tokens_per_s_per_user run with the fewest replicas that give "
                             "each user that rate"));
    connect(m_sizeBox, &QCheckBox::toggled, this, [this](bool on) {
        if (on != m_session->sizeInference())
            m_session->setSizeInference(on);
    });
    header->addWidget(m_sizeBox);

    m_slider->setRange(0, kSliderSteps);
    connect(m_slider, &QSlider::valueChanged, this, [this](int value) {
        if (const auto result = m_session->schedule(); result && result->makespanS)
            setTime(result->firstSubmitS.value_or(0.0) + *result->makespanS * value / kSliderSteps);
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
        const auto result = m_session->schedule();
        if (column == NumCsx || !result || row < 0 || std::size_t(row) >= result->jobs.size())
            return;
        if (const std::optional<double> start = result->jobs[std::size_t(row)].startS)
            setTime(*start);
        m_session->activateJob(row);
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

void ClusterPanel::showSchedule()
{
    // The session's policy and sizing, however they were set.
    if (const int index = m_policyBox->findData(int(m_session->policy())); index != m_policyBox->currentIndex())
        m_policyBox->setCurrentIndex(index);
    if (m_sizeBox->isChecked() != m_session->sizeInference())
        m_sizeBox->setChecked(m_session->sizeInference());
    const auto result = m_session->schedule();
    const QString error = m_session->lastError();
    if (!error.isEmpty()) {
        fillTable(); // the edits that failed are dropped: the table shows what is scheduled
        m_summary->setText(result ? m_session->summary() + tr(" (the last change failed: %1)").arg(error) : error);
        return;
    }
    m_tiles->setSchedule(result);
    m_gantt->setSchedule(result);
    // A readable row per job (up to a point; the table lists them all).
    m_gantt->setMinimumHeight(std::min(420, 17 * int(result->jobs.size() + 1) + 56));
    fillTable();
    m_summary->setText(m_session->summary());
    setTime(m_tiles->time());
}

QString ClusterPanel::shownSummary() const
{
    return m_summary->text();
}

void ClusterPanel::fillTable()
{
    m_filling = true;
    const auto result = m_session->schedule();
    m_table->setRowCount(result ? int(result->jobs.size()) : 0);
    for (int row = 0; result && row < m_table->rowCount(); ++row) {
        const core::cluster::JobResult& job = result->jobs[std::size_t(row)];
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
    if (!m_session->setNumCsx(row, value)) {
        const auto& jobs = m_session->jobs();
        Q_EMIT editRefused(tr("%1: num_csx must be 1 to %2")
                               .arg(m_table->item(row, Name)->text())
                               .arg(jobs ? jobs->cluster.systems : 0));
        // Back to what is scheduled, once the view has finished committing this edit.
        QTimer::singleShot(0, this, &ClusterPanel::fillTable);
    }
}

void ClusterPanel::setTime(double seconds)
{
    m_tiles->setTime(seconds);
    m_gantt->setCursor(seconds);
    m_timeLabel->setText(clock(seconds));
    if (const auto result = m_session->schedule(); result && result->makespanS && *result->makespanS > 0.0) {
        const QSignalBlocker blocker(m_slider);
        const double share = (seconds - result->firstSubmitS.value_or(0.0)) / *result->makespanS;
        m_slider->setValue(int(std::lround(kSliderSteps * std::clamp(share, 0.0, 1.0))));
    }
}

} // namespace waferscope::ui
