#include "ui/screenshot.h"

#include "core/report/atomicfile.h"

#include <QBuffer>
#include <QCoreApplication>
#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>
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

QString saveWidgetImage(QWidget* widget, const QString& path, const QString& title)
{
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
        QSvgGenerator svg;
        svg.setOutputDevice(&buffer);
        svg.setSize(widget->size());
        svg.setViewBox(widget->rect());
        svg.setTitle(title);
        svg.setDescription(QStringLiteral("The wafer view of WaferScope"));
        QPainter painter(&svg);
        widget->render(&painter);
    } else if (!widget->grab().save(&buffer, "PNG")) {
        return QStringLiteral("%1: error: the image could not be encoded").arg(path);
    }
    buffer.close();
    if (const std::optional<core::Diagnostic> error
        = core::report::writeFileAtomically(path.toStdString(), bytes.toStdString()))
        return QString::fromStdString(error->format());
    return {};
}

} // namespace waferscope::ui
