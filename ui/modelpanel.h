#pragma once

#include <QWidget>

class QLabel;

namespace waferscope::ui {

// The "Model" dock: the model file the user brought and what became of it. GUI thread.
class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);

    // Shows the file and a status line ("loaded", or why not).
    void showFile(const QString& path, const QString& status);
    QString statusText() const;

private:
    QLabel* m_file;
    QLabel* m_status;
};

} // namespace waferscope::ui
