#include "ui/screenshot.h"

#include <QCoreApplication>
#include <QPixmap>
#include <QWidget>

namespace waferscope::ui {

QString saveScreenshot(QWidget* window, const QString& path)
{
    // Let pending layout and paint work settle so the grab shows the final state.
    QCoreApplication::processEvents();
    const QPixmap pixmap = window->grab();
    if (pixmap.isNull())
        return QStringLiteral("the window could not be rendered");
    if (!pixmap.save(path, "PNG"))
        return QStringLiteral("%1: error: cannot write the PNG (does the folder exist and is it writable?)").arg(path);
    return {};
}

} // namespace waferscope::ui
