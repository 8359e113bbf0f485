#include "ui/panels/modelpanel.h"

#include "ui/models/layertablemodel.h"

#include "core/common/units.h"
#include "core/model/graphjson.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace waferscope::ui {

ModelPanel::ModelPanel(QWidget* parent)
    : QWidget(parent)
    , m_summary(new QLabel(
          tr("<b>No model</b><br>Drop a Cerebras Model Zoo params YAML on the window, or use File > Open."), this))
    , m_status(new QLabel(this))
    , m_table(new QTableView(this))
    , m_model(new LayerTableModel(this))
    , m_sorted(new QSortFilterProxyModel(this))
{
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_sorted->setSourceModel(m_model);
    m_sorted->setSortRole(Qt::UserRole);
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(LayerTableModel::NameColumn, Qt::AscendingOrder);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 4);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setResizeContentsPrecision(64); // a big model has thousands of rows
    m_table->horizontalHeader()->setStretchLastSection(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_summary);
    layout->addWidget(m_status);
    layout->addWidget(m_table, 1);
}

void ModelPanel::setGraph(const QString& path, std::shared_ptr<const core::ModelGraph> graph)
{
    const core::ModelConfig& c = graph->config;
    // Frozen weights (a DPO reference, a frozen tower, a DINOv2 teacher) take memory but do not train.
    const QString counts = graph->frozenParams > 0
        ? tr("%1 non-zero, %2 trainable, %3 frozen")
              .arg(QString::fromStdString(core::formatCount(double(graph->nonzeroParams))),
                  QString::fromStdString(core::formatCount(double(graph->trainableParams))),
                  QString::fromStdString(core::formatCount(double(graph->frozenParams))))
        : tr("%1 non-zero").arg(QString::fromStdString(core::formatCount(double(graph->nonzeroParams))));
    m_summary->setText(
        tr("<b>%1</b> · %2 · %3 schema<br><small>%4</small><br>"
           "<b>%5</b> parameters (%6) · %7 layers · hidden %8<br>"
           "sequence %9 · batch %10 · %11 · %12/token forward")
            .arg(QFileInfo(path).fileName().toHtmlEscaped(), QString::fromLatin1(core::toString(c.family)),
                QString::fromLatin1(core::toString(c.schema)), path.toHtmlEscaped(),
                QString::fromStdString(core::formatThousands(graph->totalParams)), counts)
            .arg(c.numLayers)
            .arg(c.hiddenSize)
            .arg(c.sequenceLength)
            .arg(c.batchSize)
            .arg(QString::fromStdString(core::precisionName(c)),
                QString::fromStdString(core::formatSi(graph->fwdFlopsPerToken, "FLOP"))));
    m_model->setGraph(std::move(graph));
    m_status->clear();
}

void ModelPanel::setStatus(const QString& status)
{
    m_status->setText(status);
}

QString ModelPanel::statusText() const
{
    return m_status->text();
}

QString ModelPanel::summaryText() const
{
    return m_summary->text();
}

} // namespace waferscope::ui
