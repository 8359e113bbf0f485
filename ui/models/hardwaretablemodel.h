#pragma once

#include "core/hardware/hardwarefacts.h"

#include <QAbstractTableModel>

#include <vector>

namespace waferscope::ui {

// The fact sheet of one system (core::describeHardware) as a table: fact, value, and where the
// value comes from. Assumed values are shown in italics with a '*' and say why in a tooltip.
class HardwareTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { FactColumn, ValueColumn, ProvenanceColumn, ColumnCount };

    explicit HardwareTableModel(QObject* parent = nullptr);

    void setSystem(const core::SystemSpec& system);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::vector<core::HardwareFact> m_facts;
};

} // namespace waferscope::ui
