#pragma once

#include "core/validation/validation.h"

#include <QDialog>

#include <vector>

class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace waferscope::ui {

class JobRunner;

// Help > Validation: every published figure WaferScope is checked against, recomputed on the
// job runner (progress, cancel) and shown beside the published value, as `waferscope-cli
// validate` prints it. A row's tooltip gives the conditions and the command that computes it.
// GUI thread.
class ValidationDialog : public QDialog {
    Q_OBJECT
public:
    explicit ValidationDialog(QWidget* parent = nullptr);

    void start(); // (re)computes the table
    bool isComputing() const;
    const std::vector<core::validation::FigureResult>& results() const { return m_results; }
    QTableWidget* table() const { return m_table; }

Q_SIGNALS:
    void finished(bool complete); // complete: every figure computed (not cancelled, no error)

private:
    void showResults(const std::vector<core::validation::FigureResult>& results);

    JobRunner* m_jobs;
    QTableWidget* m_table;
    QProgressBar* m_progress;
    QLabel* m_status;
    QPushButton* m_cancel;
    std::vector<core::validation::FigureResult> m_results;
};

} // namespace waferscope::ui
