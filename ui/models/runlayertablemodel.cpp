#include "ui/models/runlayertablemodel.h"

#include "core/common/units.h"

namespace waferscope::ui {

namespace {

QString formatSeconds(double seconds)
{
    if (seconds >= 1.0)
        return QStringLiteral("%1 s").arg(seconds, 0, 'f', 3);
    if (seconds >= 1e-3)
        return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', 3);
    return QStringLiteral("%1 µs").arg(seconds * 1e6, 0, 'f', 2);
}

} // namespace

RunLayerTableModel::RunLayerTableModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void RunLayerTableModel::setRun(std::shared_ptr<const core::engine::RunResult> run)
{
    beginResetModel();
    m_run = std::move(run);
    endResetModel();
}

int RunLayerTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() || !m_run ? 0 : int(m_run->metrics.layers.size());
}

int RunLayerTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunLayerTableModel::data(const QModelIndex& index, int role) const
{
    if (!m_run || !index.isValid() || index.row() >= rowCount())
        return {};
    const core::engine::LayerMetrics& layer = m_run->metrics.layers[std::size_t(index.row())];
    if (role == Qt::UserRole) {
        switch (index.column()) {
        case NameColumn:
            return index.row(); // execution order
        case KindColumn:
            return QString::fromLatin1(core::engine::toString(layer.kind));
        case ParamsColumn:
            return qlonglong(layer.params);
        case FlopsColumn:
            return layer.flops;
        case RegionColumn:
            return layer.region;
        case TimeColumn:
            return layer.timeS;
        case UtilizationColumn:
            return layer.utilization;
        case BoundColumn:
            return QString::fromLatin1(core::toString(layer.bound));
        default:
            return {};
        }
    }
    if (role == Qt::TextAlignmentRole)
        return index.column() == NameColumn || index.column() == KindColumn || index.column() == BoundColumn
            ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
            : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    switch (index.column()) {
    case NameColumn:
        return QString::fromStdString(layer.name);
    case KindColumn:
        return QString::fromLatin1(core::engine::toString(layer.kind));
    case ParamsColumn:
        return layer.params > 0 ? QString::fromStdString(core::formatCount(double(layer.params))) : QStringLiteral("–");
    case FlopsColumn:
        return layer.flops > 0.0 ? QString::fromStdString(core::formatSi(layer.flops, "FLOP")) : QStringLiteral("–");
    case RegionColumn:
        return layer.region >= 0 ? QString::number(layer.region) : QStringLiteral("–");
    case TimeColumn:
        return formatSeconds(layer.timeS);
    case UtilizationColumn:
        return QStringLiteral("%1%").arg(100.0 * layer.utilization, 0, 'f', 1);
    case BoundColumn:
        return QString::fromLatin1(core::toString(layer.bound));
    default:
        return {};
    }
}

QVariant RunLayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case NameColumn:
        return tr("Layer");
    case KindColumn:
        return tr("Kind");
    case ParamsColumn:
        return tr("Params");
    case FlopsColumn:
        return tr("FLOPs/step");
    case RegionColumn:
        return tr("Region");
    case TimeColumn:
        return tr("Time/step");
    case UtilizationColumn:
        return tr("Util.");
    case BoundColumn:
        return tr("Bound");
    default:
        return {};
    }
}

} // namespace waferscope::ui
