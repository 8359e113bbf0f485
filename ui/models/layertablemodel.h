#pragma once

#include "core/model/modelgraph.h"

#include <QAbstractTableModel>

#include <memory>

namespace waferscope::ui {

// The ops of a loaded model graph as a sortable table: name, kind, parameters, forward FLOPs
// per token, weight bytes. Numbers are returned raw for Qt::UserRole (sorting) and formatted
// for display. GUI thread.
class LayerTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { NameColumn, KindColumn, ParamsColumn, FlopsColumn, BytesColumn, ColumnCount };

    explicit LayerTableModel(QObject* parent = nullptr);

    void setGraph(std::shared_ptr<const core::ModelGraph> graph);
    const core::ModelGraph* graph() const { return m_graph.get(); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::shared_ptr<const core::ModelGraph> m_graph; // immutable once loaded
};

} // namespace waferscope::ui
