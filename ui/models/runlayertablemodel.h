#pragma once

#include "core/engine/engine.h"

#include <QAbstractTableModel>

#include <memory>

namespace waferscope::ui {

// The layers of an engine run as a sortable table: name, kind, parameters, FLOPs per step,
// region, time per step, utilization and what bound it. Raw numbers for Qt::UserRole (sorting),
// formatted text for display. GUI thread.
class RunLayerTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        NameColumn,
        KindColumn,
        ParamsColumn,
        FlopsColumn,
        RegionColumn,
        TimeColumn,
        UtilizationColumn,
        BoundColumn,
        ColumnCount
    };

    explicit RunLayerTableModel(QObject* parent = nullptr);

    void setRun(std::shared_ptr<const core::engine::RunResult> run);
    const core::engine::RunResult* run() const { return m_run.get(); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::shared_ptr<const core::engine::RunResult> m_run;
};

} // namespace waferscope::ui
