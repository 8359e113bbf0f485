#include "ui/windowstatus.h"

#include "ui/models/document.h"

#include <QFileInfo>
#include <QLabel>
#include <QMainWindow>
#include <QProgressBar>
#include <QStatusBar>
#include <QToolButton>

namespace waferscope::ui {

WindowStatus::WindowStatus(QMainWindow* window, Document* document)
    : QObject(window)
    , m_window(window)
    , m_document(document)
    , m_progress(new QProgressBar(window))
    , m_cancelButton(new QToolButton(window))
    , m_hoverLabel(new QLabel(window))
    , m_zoomLabel(new QLabel(window))
{
    m_progress->setRange(0, 0); // busy until a job reports how far it has come
    m_progress->setMaximumWidth(160);
    m_progress->setMaximumHeight(window->fontMetrics().height() + 4);
    m_progress->hide();
    m_cancelButton->setText(tr("Cancel"));
    m_cancelButton->setToolTip(tr("Stop waiting for this work; what is on screen stays (Esc)"));
    m_cancelButton->setShortcut(QKeySequence(Qt::Key_Escape));
    m_cancelButton->hide();
    connect(m_cancelButton, &QToolButton::clicked, document, &Document::cancel);
    QStatusBar* bar = window->statusBar();
    bar->addPermanentWidget(m_progress);
    bar->addPermanentWidget(m_cancelButton);
    bar->addPermanentWidget(m_hoverLabel);
    bar->addPermanentWidget(m_zoomLabel);
    connect(document, &Document::busyChanged, this, &WindowStatus::showBusy);
    connect(document, &Document::progress, this, [this](double fraction) {
        m_progress->setRange(0, 1000);
        m_progress->setValue(int(1000.0 * fraction));
    });
}

void WindowStatus::setHoverText(const QString& text)
{
    m_hoverLabel->setText(text);
}

void WindowStatus::setZoom(double pixelsPerPe)
{
    m_zoomLabel->setText(tr("zoom %1 px/PE").arg(pixelsPerPe, 0, 'f', 2));
}

void WindowStatus::showBusy(const QString& what, const QString& state)
{
    const bool busy = !what.isEmpty();
    m_progress->setRange(0, 0);
    m_progress->setToolTip(what);
    m_progress->setVisible(busy);
    m_cancelButton->setVisible(busy);
    const std::shared_ptr<const LoadedModel> model = m_document->model();
    const QString file = model ? QFileInfo(model->path).fileName() : QString();
    const QString doing = busy ? what + QStringLiteral(" …") : state;
    if (file.isEmpty())
        m_window->setWindowTitle(doing.isEmpty() ? tr("WaferScope") : tr("WaferScope — %1").arg(doing));
    else
        m_window->setWindowTitle(
            doing.isEmpty() ? tr("%1 — WaferScope").arg(file) : tr("%1 [%2] — WaferScope").arg(file, doing));
}

} // namespace waferscope::ui
