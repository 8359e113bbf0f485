#include "ui/panels/emptystatepanel.h"

#include <QLabel>
#include <QVBoxLayout>

namespace waferscope::ui {

EmptyStatePanel::EmptyStatePanel(const QString& title, const QString& explanation, QWidget* parent)
    : QWidget(parent)
{
    auto* heading = new QLabel(QStringLiteral("<b>%1</b>").arg(title.toHtmlEscaped()), this);
    auto* body = new QLabel(explanation, this);
    body->setWordWrap(true);
    body->setForegroundRole(QPalette::PlaceholderText);
    auto* layout = new QVBoxLayout(this);
    layout->addStretch(1);
    layout->addWidget(heading, 0, Qt::AlignHCenter);
    layout->addWidget(body, 0, Qt::AlignHCenter);
    layout->addStretch(2);
}

} // namespace waferscope::ui
