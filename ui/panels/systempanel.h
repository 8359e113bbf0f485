#pragma once

#include "core/hardware/systemspec.h"

#include <QWidget>

class QLabel;
class QTableView;

namespace waferscope::ui {

class HardwareTableModel;

// The "System" dock: what the selected CS-X generation is made of, value by value, with the
// source of each. GUI thread.
class SystemPanel : public QWidget {
    Q_OBJECT
public:
    explicit SystemPanel(QWidget* parent = nullptr);

    void setSystem(const core::SystemSpec& system, int numSystems);
    HardwareTableModel* model() const { return m_model; }

private:
    QLabel* m_summary;
    QTableView* m_table;
    HardwareTableModel* m_model;
};

} // namespace waferscope::ui
