#pragma once

#include <QWidget>

class QListWidget;

namespace waferscope::ui {

// The "Messages" dock: what happened to the user's files and requests, newest last. Errors
// keep their FILE:LINE:COL location so the user can go and fix the file. GUI thread.
class MessagePanel : public QWidget {
    Q_OBJECT
public:
    enum class Severity { Info, Warning, Error };

    explicit MessagePanel(QWidget* parent = nullptr);

    void addMessage(Severity severity, const QString& text);
    int count() const;
    QString text(int row) const;

private:
    QListWidget* m_list;
};

} // namespace waferscope::ui
