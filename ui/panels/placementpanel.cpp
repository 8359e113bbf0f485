#include "ui/panels/placementpanel.h"

#include "ui/panels/regiontablemodel.h"

#include "core/common/units.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace waferscope::ui {

PlacementPanel::PlacementPanel(QWidget* parent)
    : QWidget(parent)
    , m_summary(new QLabel(this))
    , m_table(new QTableView(this))
    , m_runButton(new QPushButton(tr("Run on fabric"), this))
    , m_runStatus(new QLabel(this))
    , m_model(new RegionTableModel(this))
    , m_sorted(new QSortFilterProxyModel(this))
{
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_sorted->setSourceModel(m_model);
    m_sorted->setSortRole(Qt::UserRole);
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(RegionTableModel::OpColumn, Qt::AscendingOrder);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 4);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setResizeContentsPrecision(64); // a big model has thousands of rows
    m_table->horizontalHeader()->setStretchLastSection(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_summary);
    layout->addWidget(m_table, 1);
    auto* run = new QHBoxLayout;
    run->addWidget(m_runButton);
    run->addWidget(m_runStatus, 1);
    layout->addLayout(run);
    m_runStatus->setWordWrap(true);
    m_runStatus->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_runButton->setEnabled(false);
    m_runButton->setToolTip(tr("Select a region to run its kernel on the cycle-level fabric."));
    connect(m_runButton, &QPushButton::clicked, this, &PlacementPanel::runRequested);
    connect(
        m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
            if (m_selecting)
                return;
            Q_EMIT regionSelected(current.isValid() ? m_sorted->mapToSource(current).row() : -1);
        });
    clearPlan(tr("Load a model to see how the compiler places it on the wafer."));
}

void PlacementPanel::setPlan(
    std::shared_ptr<const core::ExecutionPlan> plan, std::shared_ptr<const core::ModelGraph> graph)
{
    const core::ExecutionPlan& p = *plan;
    QString layout;
    switch (p.mode) {
    case core::ExecutionMode::Pipelined:
        layout = p.replicas == 1 ? tr("%1 pipeline stages").arg(p.stages)
                                 : tr("%1 pipeline stages, %2 data-parallel copies").arg(p.stages).arg(p.replicas);
        break;
    case core::ExecutionMode::WeightStreaming:
        layout = tr("one op at a time on the whole fabric, micro-batch %1 (at most %2)")
                     .arg(p.microBatch)
                     .arg(p.maxMicroBatch);
        break;
    case core::ExecutionMode::Inference:
        layout = p.numSystems == 1 ? tr("one wafer") : tr("%1 wafers").arg(p.numSystems);
        break;
    }
    QString notes;
    if (!p.transfers.empty()) {
        // Chains of equal hops collapse: "0 → 1 → … → 21: 32 KiB each".
        const auto bytes = [](std::int64_t count) {
            return count < 1024 ? tr("%1 B").arg(count) : QString::fromStdString(core::formatBytes(double(count)));
        };
        QStringList hops;
        for (std::size_t i = 0; i < p.transfers.size();) {
            std::size_t j = i;
            while (j + 1 < p.transfers.size() && p.transfers[j + 1].from == p.transfers[j].to
                && p.transfers[j + 1].bytesPerToken == p.transfers[i].bytesPerToken)
                ++j;
            const QString path = j == i ? tr("%1 → %2").arg(p.transfers[i].from).arg(p.transfers[i].to)
                : j == i + 1
                ? tr("%1 → %2 → %3").arg(p.transfers[i].from).arg(p.transfers[i].to).arg(p.transfers[j].to)
                : tr("%1 → %2 → … → %3").arg(p.transfers[i].from).arg(p.transfers[i].to).arg(p.transfers[j].to);
            hops << tr("%1: %2%3").arg(path, bytes(p.transfers[i].bytesPerToken), j > i ? tr(" each") : QString());
            i = j + 1;
        }
        notes += QStringLiteral("<li>%1</li>")
                     .arg(tr("activations crossing wafers per token: %1").arg(hops.join(QStringLiteral("; "))));
    }
    for (const std::string& note : p.notes)
        notes += QStringLiteral("<li>%1</li>").arg(QString::fromStdString(note).toHtmlEscaped());
    m_summary->setText(tr("<b>%1</b> on %2 · %3 regions · %4<br>"
                          "PEs used <b>%5%</b> · SRAM used %6% · %7 · compiled in %8 ms"
                          "<ul style=\"margin-left:-24px\">%9</ul>")
                           .arg(QString::fromLatin1(core::toString(p.mode)).replace(QLatin1Char('_'), QLatin1Char(' ')),
                               QString::fromStdString(p.system).toUpper())
                           .arg(p.regions.size())
                           .arg(layout)
                           .arg(100.0 * p.peUtilization, 0, 'f', 1)
                           .arg(100.0 * p.sramUtilization, 0, 'f', 1)
                           .arg(p.mode == core::ExecutionMode::WeightStreaming
                                   ? tr("one op at a time: no imbalance between regions")
                                   : tr("load imbalance <b>%1</b>").arg(p.loadImbalance, 0, 'f', 3))
                           .arg(p.compileMs, 0, 'f', 1)
                           .arg(notes));
    m_model->setPlan(std::move(plan), std::move(graph));
    m_table->setEnabled(true);
    m_runStatus->clear();
    setRunnable(false, tr("Select a region to run its kernel on the cycle-level fabric."));
}

void PlacementPanel::clearPlan(const QString& status)
{
    m_summary->setText(status.toHtmlEscaped());
    m_model->setPlan(nullptr, nullptr);
    m_table->setEnabled(false);
    setRunnable(false, tr("No placement."));
    m_runStatus->clear();
}

void PlacementPanel::selectRegion(int planIndex)
{
    m_selecting = true;
    if (planIndex < 0 || planIndex >= m_model->rowCount()) {
        m_table->clearSelection();
        m_table->selectionModel()->setCurrentIndex(QModelIndex(), QItemSelectionModel::Clear);
    } else {
        const QModelIndex index = m_sorted->mapFromSource(m_model->index(planIndex, 0));
        m_table->selectionModel()->setCurrentIndex(
            index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        m_table->scrollTo(index);
    }
    m_selecting = false;
}

void PlacementPanel::setRunnable(bool runnable, const QString& reason)
{
    m_runButton->setEnabled(runnable);
    m_runButton->setToolTip(reason);
}

void PlacementPanel::setRunStatus(const QString& status)
{
    m_runStatus->setText(status);
}

QString PlacementPanel::runStatusText() const
{
    return m_runStatus->text();
}

QString PlacementPanel::summaryText() const
{
    return m_summary->text();
}

} // namespace waferscope::ui
