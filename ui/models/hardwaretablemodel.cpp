#include "ui/models/hardwaretablemodel.h"

#include <QFont>

namespace waferscope::ui {

HardwareTableModel::HardwareTableModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void HardwareTableModel::setSystem(const core::SystemSpec& system)
{
    beginResetModel();
    m_facts = core::describeHardware(system);
    endResetModel();
}

int HardwareTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_facts.size());
}

int HardwareTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant HardwareTableModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_facts.size()))
        return {};
    const core::HardwareFact& fact = m_facts[std::size_t(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case FactColumn:
            return QString::fromStdString(fact.label);
        case ValueColumn:
            return QString::fromStdString(fact.value) + (fact.assumed ? QStringLiteral("*") : QString());
        case ProvenanceColumn:
            return (fact.assumed ? tr("assumed: ") : QString()) + QString::fromStdString(fact.provenance);
        }
        return {};
    case Qt::ToolTipRole:
        return (fact.assumed ? tr("Assumed (not published): ") : tr("Source: "))
            + QString::fromStdString(fact.provenance);
    case Qt::FontRole:
        if (fact.assumed && index.column() != FactColumn) {
            QFont font;
            font.setItalic(true);
            return font;
        }
        return {};
    case Qt::TextAlignmentRole:
        return index.column() == ValueColumn ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    default:
        return {};
    }
}

QVariant HardwareTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case FactColumn:
        return tr("Fact");
    case ValueColumn:
        return tr("Value");
    case ProvenanceColumn:
        return tr("Source or assumption");
    }
    return {};
}

} // namespace waferscope::ui
