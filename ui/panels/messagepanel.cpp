#include "ui/panels/messagepanel.h"

#include <QApplication>
#include <QDateTime>
#include <QListWidget>
#include <QStyle>
#include <QVBoxLayout>

namespace waferscope::ui {

MessagePanel::MessagePanel(QWidget* parent)
    : QWidget(parent)
    , m_list(new QListWidget(this))
{
    m_list->setWordWrap(true);
    m_list->setAlternatingRowColors(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_list);
}

void MessagePanel::addMessage(Severity severity, const QString& text)
{
    const QStyle::StandardPixmap icon = severity == Severity::Error ? QStyle::SP_MessageBoxCritical
        : severity == Severity::Warning                             ? QStyle::SP_MessageBoxWarning
                                                                    : QStyle::SP_MessageBoxInformation;
    auto* item = new QListWidgetItem(
        style()->standardIcon(icon), QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss  ")) + text);
    item->setData(Qt::UserRole, text);
    m_list->addItem(item);
    while (m_list->count() > kMaxMessages)
        delete m_list->takeItem(0);
    m_list->scrollToBottom();
}

int MessagePanel::count() const
{
    return m_list->count();
}

QString MessagePanel::text(int row) const
{
    const QListWidgetItem* item = m_list->item(row);
    return item ? item->data(Qt::UserRole).toString() : QString();
}

} // namespace waferscope::ui
