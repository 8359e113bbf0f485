#pragma once

// Shared by the GUI suites: a main window on the built-in presets, shown on the offscreen
// platform, and a drag and drop of files onto a widget as a file manager sends it.
#include "ui/mainwindow.h"

#include "core/hardware/builtinpresets.h"

#include <QApplication>
#include <QDropEvent>
#include <QMimeData>
#include <QTest>
#include <QUrl>

#include <memory>

namespace waferscope::test {

inline std::unique_ptr<ui::MainWindow> makeWindow()
{
    core::Expected<std::vector<core::SystemSpec>> systems = core::loadBuiltinPresets();
    if (!systems)
        qFatal("%s", systems.error().format().c_str());
    auto window = std::make_unique<ui::MainWindow>(std::move(systems).value());
    window->resize(1400, 900);
    window->show();
    if (!QTest::qWaitForWindowExposed(window.get()))
        qWarning("window not exposed");
    return window;
}

// Returns whether the target accepted both the drag and the drop.
inline bool dropUrls(QWidget* target, const QList<QUrl>& urls)
{
    QMimeData mime;
    mime.setUrls(urls);
    const QPointF at(target->width() / 2.0, target->height() / 2.0);
    QDragEnterEvent enter(at.toPoint(), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &enter);
    if (!enter.isAccepted())
        return false;
    QDropEvent drop(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &drop);
    return drop.isAccepted();
}

} // namespace waferscope::test
