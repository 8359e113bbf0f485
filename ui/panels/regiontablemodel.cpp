#include "ui/panels/regiontablemodel.h"

#include "ui/wafer/placementoverlay.h"

#include "core/common/units.h"

#include <cmath>

namespace waferscope::ui {

RegionTableModel::RegionTableModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void RegionTableModel::setPlan(
    std::shared_ptr<const core::ExecutionPlan> plan, std::shared_ptr<const core::ModelGraph> graph)
{
    beginResetModel();
    m_plan = std::move(plan);
    m_graph = std::move(graph);
    m_colors.clear();
    m_streamedIn.clear();
    if (m_plan) {
        m_colors = regionColors(*m_plan);
        m_streamedIn.assign(m_plan->regions.size(), -1);
        for (const core::StreamedLayer& layer : m_plan->streamed)
            if (layer.region >= 0 && std::size_t(layer.region) < m_streamedIn.size())
                m_streamedIn[std::size_t(layer.region)] = layer.bytesInForward + layer.bytesInBackward;
    }
    // A new plan drops the token run before the views see its rows (its regions were another plan's).
    m_tokenRun = nullptr;
    m_tokenRegion.assign(m_plan ? m_plan->regions.size() : 0, -1);
    endResetModel();
}

void RegionTableModel::setTokenRun(std::shared_ptr<const core::cyclelevel::CycleRunResult> run)
{
    m_tokenRun = std::move(run);
    m_tokenRegion.assign(m_plan ? m_plan->regions.size() : 0, -1);
    if (m_plan && m_tokenRun)
        for (std::size_t i = 0; i < m_tokenRun->regions.size(); ++i)
            for (std::size_t r = 0; r < m_plan->regions.size(); ++r)
                if (m_plan->regions[r].opName == m_tokenRun->regions[i].op && m_tokenRegion[r] < 0)
                    m_tokenRegion[r] = int(i);
    if (rowCount() > 0)
        Q_EMIT dataChanged(index(0, MeasuredColumn), index(rowCount() - 1, ModelColumn));
}

std::int64_t RegionTableModel::measuredCycles(int row) const
{
    if (row < 0 || std::size_t(row) >= m_tokenRegion.size() || m_tokenRegion[std::size_t(row)] < 0)
        return -1;
    return std::int64_t(m_tokenRun->regions[std::size_t(m_tokenRegion[std::size_t(row)])].measuredCycles);
}

int RegionTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() || !m_plan ? 0 : int(m_plan->regions.size());
}

int RegionTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RegionTableModel::data(const QModelIndex& index, int role) const
{
    if (!m_plan || !index.isValid() || index.row() >= int(m_plan->regions.size()))
        return {};
    const std::size_t row = std::size_t(index.row());
    const core::Region& region = m_plan->regions[row];
    const std::int64_t pes = region.rect.area();
    const int token = m_tokenRegion.empty() ? -1 : m_tokenRegion[row];
    const std::int64_t measured = measuredCycles(index.row());
    const double modelled = token >= 0 && std::size_t(token) < m_tokenRun->modelCycles.size()
        ? m_tokenRun->modelCycles[std::size_t(token)]
        : -1.0;
    if (role == Qt::UserRole) {
        switch (index.column()) {
        case OpColumn:
            return index.row(); // plan order
        case LayerColumn:
            return region.layer;
        case WaferColumn:
            return region.system;
        case PositionColumn:
            return region.rect.y * 100000 + region.rect.x;
        case SizeColumn:
        case PesColumn:
            return qlonglong(pes);
        case SramColumn:
            return qlonglong(region.sramBytesPerPe);
        case CyclesColumn:
            return region.computeCycles;
        case KernelColumn:
            return QString::fromLatin1(core::toString(region.kernel.kind));
        case StreamedColumn:
            return qlonglong(m_streamedIn[row]);
        case MeasuredColumn:
            return qlonglong(measured);
        case ModelColumn:
            return modelled;
        }
    }
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case OpColumn:
            return QString::fromStdString(region.opName);
        case LayerColumn:
            return region.layer >= 0 ? QString::number(region.layer) : QStringLiteral("–");
        case WaferColumn:
            return region.system;
        case PositionColumn:
            return QStringLiteral("%1, %2").arg(region.rect.x).arg(region.rect.y);
        case SizeColumn:
            return QStringLiteral("%1 x %2").arg(region.rect.w).arg(region.rect.h);
        case PesColumn:
            return QString::fromStdString(core::formatThousands(pes));
        case SramColumn:
            return formatKib(region.sramBytesPerPe);
        case CyclesColumn:
            return QString::fromStdString(core::formatCount(region.computeCycles));
        case KernelColumn:
            return QStringLiteral("%1 %2 x %3")
                .arg(QString::fromLatin1(core::toString(region.kernel.kind)))
                .arg(region.kernel.tileRows)
                .arg(region.kernel.tileCols);
        case StreamedColumn:
            return m_streamedIn[row] >= 0 ? QString::fromStdString(core::formatBytes(double(m_streamedIn[row])))
                                          : QStringLiteral("–");
        case MeasuredColumn:
            return measured >= 0 ? QString::fromStdString(core::formatThousands(measured)) : QStringLiteral("–");
        case ModelColumn:
            return modelled >= 0.0 ? QString::fromStdString(core::formatThousands(std::llround(modelled)))
                                   : QStringLiteral("–");
        }
    }
    if (role == Qt::DecorationRole && index.column() == OpColumn)
        return m_colors[row];
    if (role == Qt::ToolTipRole)
        return describeRegion(*m_plan, m_graph.get(), index.row());
    if (role == Qt::TextAlignmentRole && index.column() >= PesColumn && index.column() != KernelColumn)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant RegionTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole) {
        if (section == MeasuredColumn)
            return tr("The region's share of a decode token on the cycle-level fabric: its last PE's finish after "
                      "the previous region's (Run token on fabric)");
        if (section == ModelColumn)
            return tr("The model-level engine's share of the same token: the decode kernels' closed forms and the "
                      "hand-offs between regions, without the launch-era software overhead the fabric does not run");
        return {};
    }
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case OpColumn:
        return tr("Op");
    case LayerColumn:
        return tr("Layer");
    case WaferColumn:
        return tr("Wafer");
    case PositionColumn:
        return tr("x, y");
    case SizeColumn:
        return tr("w x h");
    case PesColumn:
        return tr("PEs");
    case SramColumn:
        return tr("SRAM/PE");
    case CyclesColumn:
        return m_plan && m_plan->mode == core::ExecutionMode::Inference ? tr("Cycles/token") : tr("Cycles/sample");
    case KernelColumn:
        return tr("Kernel (tile)");
    case StreamedColumn:
        return tr("Streamed in");
    case MeasuredColumn:
        return tr("Measured cycles");
    case ModelColumn:
        return tr("Model cycles");
    }
    return {};
}

} // namespace waferscope::ui
