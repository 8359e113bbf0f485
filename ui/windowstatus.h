#pragma once

#include <QObject>
#include <QString>

class QLabel;
class QMainWindow;
class QProgressBar;
class QToolButton;

namespace waferscope::ui {

class Document;

// The window's state at a glance: the status bar's progress bar and Cancel button while the
// document works, the PE under the mouse and the zoom, and the title (file, then what is going
// on). GUI thread.
class WindowStatus : public QObject {
    Q_OBJECT
public:
    WindowStatus(QMainWindow* window, Document* document);

    void setHoverText(const QString& text);
    void setZoom(double pixelsPerPe);

private:
    void showBusy(const QString& what, const QString& state);

    QMainWindow* m_window; // its title and status bar
    Document* m_document;
    QProgressBar* m_progress;
    QToolButton* m_cancelButton;
    QLabel* m_hoverLabel; // the PE under the mouse
    QLabel* m_zoomLabel; // pixels per PE
};

} // namespace waferscope::ui
