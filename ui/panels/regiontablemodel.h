#pragma once

#include "core/compiler/plan.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/model/modelgraph.h"

#include <QAbstractTableModel>

#include <memory>

namespace waferscope::ui {

// The regions of a compiled plan as a sortable table, one row per region in plan order: op,
// layer, wafer, rectangle, PEs, SRAM per PE, compute cycles, kernel, and for weight streaming
// the bytes streamed in; after a token on the fabric, its measured and modelled cycles. Raw numbers for Qt::UserRole
// (sorting), formatted for display; the op column's decoration is the region's colour in the wafer view. GUI thread.
class RegionTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        OpColumn,
        LayerColumn,
        WaferColumn,
        PositionColumn,
        SizeColumn,
        PesColumn,
        SramColumn,
        CyclesColumn,
        KernelColumn,
        StreamedColumn,
        MeasuredColumn, // a token on the fabric: the region's measured cycles (ui/tokenrun.h)
        ModelColumn, // the plan's estimate the cycle run compares them with
        ColumnCount
    };

    explicit RegionTableModel(QObject* parent = nullptr);

    void setPlan(std::shared_ptr<const core::ExecutionPlan> plan, std::shared_ptr<const core::ModelGraph> graph);
    const core::ExecutionPlan* plan() const { return m_plan.get(); }
    // The regions of the last token of a run on the fabric (null: none), matched by op name.
    void setTokenRun(std::shared_ptr<const core::cyclelevel::CycleRunResult> run);
    // The measured cycles of a row (-1: not run).
    std::int64_t measuredCycles(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::shared_ptr<const core::ExecutionPlan> m_plan;
    std::shared_ptr<const core::ModelGraph> m_graph;
    std::vector<QColor> m_colors; // per region, as the wafer view draws it
    std::vector<std::int64_t> m_streamedIn; // per region: weight bytes in (forward + backward), -1 if none
    std::shared_ptr<const core::cyclelevel::CycleRunResult> m_tokenRun;
    std::vector<int> m_tokenRegion; // per region: its index into m_tokenRun->regions, or -1
};

} // namespace waferscope::ui
