#pragma once

#include <QString>

class QWidget;

namespace waferscope::ui {

// Renders `window` (works on the offscreen platform) and saves it as a PNG. Returns an empty
// string on success, else why it failed ("cannot write /x.png").
QString saveScreenshot(QWidget* window, const QString& path);

} // namespace waferscope::ui
