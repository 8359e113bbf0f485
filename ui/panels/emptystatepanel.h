#pragma once

#include <QWidget>

namespace waferscope::ui {

// A dock's content before it has data: a title and a sentence that says what will appear and
// what the user does to get it. GUI thread.
class EmptyStatePanel : public QWidget {
    Q_OBJECT
public:
    EmptyStatePanel(const QString& title, const QString& explanation, QWidget* parent = nullptr);
};

} // namespace waferscope::ui
