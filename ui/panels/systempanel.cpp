#include "ui/panels/systempanel.h"

#include "ui/models/hardwaretablemodel.h"

#include "core/common/units.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

namespace waferscope::ui {

SystemPanel::SystemPanel(QWidget* parent)
    : QWidget(parent)
    , m_summary(new QLabel(this))
    , m_table(new QTableView(this))
    , m_model(new HardwareTableModel(this))
{
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_table->setModel(m_model);
    m_table->verticalHeader()->hide();
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setSectionResizeMode(HardwareTableModel::FactColumn, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(HardwareTableModel::ValueColumn, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_summary);
    layout->addWidget(m_table, 1);
}

void SystemPanel::setSystem(const core::SystemSpec& system, int numSystems)
{
    m_model->setSystem(system);
    const double clusterPeak = system.wafer.peakFlopsPerS() * numSystems;
    m_summary->setText(tr("<b>%1</b> &middot; %2 &middot; %3 system(s), %4 dense FP16 on the usable fabric<br>%5")
                           .arg(QString::fromStdString(system.displayName), QString::fromStdString(system.wafer.name))
                           .arg(numSystems)
                           .arg(QString::fromStdString(core::formatSi(clusterPeak, "FLOP/s")),
                               QString::fromStdString(system.description).toHtmlEscaped()));
}

} // namespace waferscope::ui
