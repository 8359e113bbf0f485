#pragma once

#include <QWidget>

class QListWidget;

namespace waferscope::ui {

// The "Messages" dock: what happened to the user's files and requests, newest last. Errors
// keep their FILE:LINE:COL location so the user can go and fix the file. It keeps the newest
// kMaxMessages lines: a wrapped list lays every line out again as it grows, so an unbounded one
// would slow a long session down. GUI thread.
class MessagePanel : public QWidget {
    Q_OBJECT
public:
    enum class Severity { Info, Warning, Error };

    static constexpr int kMaxMessages = 500;

    explicit MessagePanel(QWidget* parent = nullptr);

    void addMessage(Severity severity, const QString& text);
    int count() const; // at most kMaxMessages
    QString text(int row) const; // row 0 is the oldest kept

private:
    QListWidget* m_list;
};

} // namespace waferscope::ui
