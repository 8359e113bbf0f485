#include "ui/panels/layerspanel.h"

#include "ui/models/runlayertablemodel.h"

#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace waferscope::ui {

LayersPanel::LayersPanel(QWidget* parent)
    : QWidget(parent)
    , m_model(new RunLayerTableModel(this))
    , m_sorted(new QSortFilterProxyModel(this))
    , m_table(new QTableView(this))
{
    m_sorted->setSourceModel(m_model);
    m_sorted->setSortRole(Qt::UserRole);
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(RunLayerTableModel::NameColumn, Qt::AscendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setResizeContentsPrecision(64);
    m_table->horizontalHeader()->setStretchLastSection(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_table);
    connect(
        m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
            if (!m_following && current.isValid())
                Q_EMIT layerPicked(m_sorted->mapToSource(current).row());
        });
}

void LayersPanel::setRun(std::shared_ptr<const core::engine::RunResult> run)
{
    const bool any = run != nullptr;
    m_model->setRun(std::move(run));
    if (any)
        m_table->resizeColumnsToContents();
}

void LayersPanel::showLayer(int layer)
{
    const QModelIndex row = m_sorted->mapFromSource(m_model->index(layer, 0));
    if (!row.isValid() || m_table->currentIndex().row() == row.row())
        return;
    m_following = true;
    m_table->setCurrentIndex(row);
    m_table->scrollTo(row);
    m_following = false;
}

} // namespace waferscope::ui
