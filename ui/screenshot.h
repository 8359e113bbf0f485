#pragma once

#include <QString>

class QWidget;

namespace waferscope::ui {

// Renders `window` (works on the offscreen platform) and saves it as a PNG. Returns an empty
// string on success, else why it failed ("cannot write /x.png").
QString saveScreenshot(QWidget* window, const QString& path);
// Saves a widget as shown, as a PNG (pixels) or an SVG drawing (by the suffix of `path`),
// written atomically. Returns the located error text, or an empty string.
QString saveWidgetImage(QWidget* widget, const QString& path, const QString& title);

} // namespace waferscope::ui
