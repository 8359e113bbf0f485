#include "ui/modelpanel.h"

#include <QFileInfo>
#include <QLabel>
#include <QVBoxLayout>

namespace waferscope::ui {

ModelPanel::ModelPanel(QWidget* parent)
    : QWidget(parent)
    , m_file(new QLabel(tr("<b>No model</b>"), this))
    , m_status(new QLabel(tr("Drop a Cerebras Model Zoo params YAML on the window, or use File > Open."), this))
{
    m_status->setWordWrap(true);
    m_file->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_file);
    layout->addWidget(m_status);
    layout->addStretch(1);
}

void ModelPanel::showFile(const QString& path, const QString& status)
{
    m_file->setText(QStringLiteral("<b>%1</b><br><small>%2</small>")
                        .arg(QFileInfo(path).fileName().toHtmlEscaped(), path.toHtmlEscaped()));
    m_status->setText(status);
}

QString ModelPanel::statusText() const
{
    return m_status->text();
}

} // namespace waferscope::ui
