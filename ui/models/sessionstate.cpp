#include "ui/models/sessionstate.h"

#include "ui/models/optionnames.h"

#include <QFileInfo>
#include <QSettings>

namespace waferscope::ui {

namespace {

QString text(QSettings& settings, const QString& key, const QStringList& allowed = {})
{
    const QVariant value = settings.value(key);
    if (value.typeId() != QMetaType::QString)
        return {};
    const QString string = value.toString();
    return allowed.isEmpty() || allowed.contains(string) ? string : QString();
}

} // namespace

SessionState readSession(QSettings& settings)
{
    SessionState state;
    settings.beginGroup(QStringLiteral("session"));
    const QVariant recent = settings.value(QStringLiteral("recentFiles"));
    if (recent.canConvert<QStringList>())
        for (const QString& path : recent.toStringList())
            if (!path.isEmpty() && state.recentFiles.size() < kMaxRecentFiles && !state.recentFiles.contains(path))
                state.recentFiles << path;
    state.system = text(settings, QStringLiteral("system"));
    bool ok = false;
    const int numCsx = settings.value(QStringLiteral("numCsx")).toInt(&ok);
    state.numCsx = ok && numCsx >= 1 ? numCsx : 0;
    state.mode = text(settings, QStringLiteral("mode"), runModeNames());
    state.execution = text(settings, QStringLiteral("execution"), executionNames());
    state.overlay = text(settings, QStringLiteral("overlay"), overlayNames());
    const double speed = settings.value(QStringLiteral("speed")).toDouble(&ok);
    state.speed = ok && speed > 0.0 && speed <= 1000.0 ? speed : 0.0;
    const int unit = settings.value(QStringLiteral("stepUnit")).toInt(&ok);
    state.stepUnit = ok && unit >= 0 && unit <= 2 ? unit : -1;
    state.geometry = settings.value(QStringLiteral("geometry")).toByteArray();
    state.windowState = settings.value(QStringLiteral("windowState")).toByteArray();
    settings.endGroup();
    return state;
}

void writeSession(QSettings& settings, const SessionState& state)
{
    settings.beginGroup(QStringLiteral("session"));
    settings.setValue(QStringLiteral("recentFiles"), state.recentFiles);
    settings.setValue(QStringLiteral("system"), state.system);
    settings.setValue(QStringLiteral("numCsx"), state.numCsx);
    settings.setValue(QStringLiteral("mode"), state.mode);
    settings.setValue(QStringLiteral("execution"), state.execution);
    settings.setValue(QStringLiteral("overlay"), state.overlay);
    settings.setValue(QStringLiteral("speed"), state.speed);
    settings.setValue(QStringLiteral("stepUnit"), state.stepUnit);
    settings.setValue(QStringLiteral("geometry"), state.geometry);
    settings.setValue(QStringLiteral("windowState"), state.windowState);
    settings.endGroup();
    settings.sync();
}

QStringList withRecent(QStringList recent, const QString& path)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    recent.removeAll(absolute);
    recent.prepend(absolute);
    while (recent.size() > kMaxRecentFiles)
        recent.removeLast();
    return recent;
}

} // namespace waferscope::ui
