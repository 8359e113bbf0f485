#pragma once

#include <QObject>
#include <QStringList>

class QAction;
class QMenu;

namespace waferscope::ui {

class Document;
class MainWindow;
class ValidationDialog;

// The window's menus: File (open, recent files, exports, wafer image), Run (a token on the fabric),
// Compare (baseline), View
// (zoom and the docks' toggles) and Help (validation against published figures, about). Keeps the recent files and
// enables the exports and the baseline actions as the document changes. GUI thread.
class MainMenus : public QObject {
    Q_OBJECT
public:
    MainMenus(MainWindow* window, Document* document);

    QAction* openAction() const { return m_openAction; } // shared by the menu and the toolbar
    QMenu* viewMenu() const { return m_viewMenu; } // the docks add their toggles here
    QAction* runTokenAction() const { return m_runTokenAction; } // Run > Run token on fabric, and the toolbar
    QStringList recentFiles() const { return m_recentFiles; } // newest first
    void setRecentFiles(const QStringList& paths);
    void addRecent(const QString& path);

private:
    void createFileMenu();
    void createCompareMenu();
    void createRunMenu();
    void updateRunToken(); // enabled, or disabled with the reason as its tooltip
    void rebuildRecentMenu();
    void reportFailure(const QString& error); // an export's error text, if any

    MainWindow* m_window; // the menu bar's owner, and the parent of dialogs
    Document* m_document;
    QAction* m_openAction = nullptr;
    QAction* m_runTokenAction = nullptr;
    QMenu* m_recentMenu = nullptr;
    QMenu* m_viewMenu = nullptr;
    ValidationDialog* m_validation = nullptr; // Help > Validation, made when first asked for
    QStringList m_recentFiles; // newest first
};

} // namespace waferscope::ui
