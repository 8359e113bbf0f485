#include "ui/models/layertablemodel.h"

#include "core/common/units.h"

namespace waferscope::ui {

LayerTableModel::LayerTableModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void LayerTableModel::setGraph(std::shared_ptr<const core::ModelGraph> graph)
{
    beginResetModel();
    m_graph = std::move(graph);
    endResetModel();
}

int LayerTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() || !m_graph ? 0 : int(m_graph->ops.size());
}

int LayerTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant LayerTableModel::data(const QModelIndex& index, int role) const
{
    if (!m_graph || !index.isValid() || index.row() >= int(m_graph->ops.size()))
        return {};
    const core::Op& op = m_graph->ops[std::size_t(index.row())];
    if (role == Qt::UserRole) {
        switch (index.column()) {
        case NameColumn:
            return index.row(); // execution order
        case KindColumn:
            return QString::fromLatin1(core::toString(op.kind));
        case ParamsColumn:
            return qlonglong(op.params);
        case FlopsColumn:
            return op.fwdFlopsPerToken;
        case BytesColumn:
            return qlonglong(op.weightBytes);
        }
    }
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case NameColumn:
            return QString::fromStdString(op.name);
        case KindColumn:
            return QString::fromLatin1(core::toString(op.kind));
        case ParamsColumn:
            return op.params > 0 ? QString::fromStdString(core::formatCount(double(op.params))) : QStringLiteral("–");
        case FlopsColumn:
            return op.fwdFlopsPerToken > 0 ? QString::fromStdString(core::formatSi(op.fwdFlopsPerToken, "FLOP"))
                                           : QStringLiteral("–");
        case BytesColumn:
            return op.weightBytes > 0 ? QString::fromStdString(core::formatBytes(double(op.weightBytes)))
                                      : QStringLiteral("–");
        }
    }
    if (role == Qt::ToolTipRole && index.column() == ParamsColumn && op.nonzeroParams != op.params)
        return tr("%1 non-zero after sparsity").arg(QString::fromStdString(core::formatThousands(op.nonzeroParams)));
    if (role == Qt::TextAlignmentRole && index.column() >= ParamsColumn)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case NameColumn:
        return tr("Op");
    case KindColumn:
        return tr("Kind");
    case ParamsColumn:
        return tr("Params");
    case FlopsColumn:
        return tr("FLOPs/token");
    case BytesColumn:
        return tr("Weights");
    }
    return {};
}

} // namespace waferscope::ui
