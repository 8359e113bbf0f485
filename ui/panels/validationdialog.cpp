#include "ui/panels/validationdialog.h"

#include "ui/models/jobrunner.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <cstdio>

namespace waferscope::ui {

namespace {

struct Outcome {
    std::vector<core::validation::FigureResult> results;
    QString error; // empty when every figure was computed
};

QString number(double value)
{
    return QLocale().toString(value, 'f', value == std::round(value) ? 0 : value >= 10.0 ? 1 : 2);
}

} // namespace

ValidationDialog::ValidationDialog(QWidget* parent)
    : QDialog(parent)
    , m_jobs(new JobRunner(this))
    , m_table(new QTableWidget(0, 7, this))
    , m_progress(new QProgressBar(this))
    , m_status(new QLabel(this))
    , m_cancel(new QPushButton(tr("Cancel"), this))
{
    setWindowTitle(tr("Validation against published figures"));
    resize(1100, 420);
    m_table->setHorizontalHeaderLabels(
        { tr("Figure"), tr("Published"), tr("Predicted"), tr("Error"), tr("Profile"), tr("Source"), tr("Notes") });
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setWordWrap(false);
    m_progress->setRange(0, 1000);
    m_status->setWordWrap(true);
    m_status->setText(tr("Each figure is recomputed from its sample with the software profile of its release. "
                         "A fitted figure is where the profile's overhead was fitted: it is not a check."));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    buttons->addButton(m_cancel, QDialogButtonBox::ActionRole);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        m_jobs->cancel();
        m_status->setText(tr("Cancelled."));
        m_cancel->setEnabled(false);
        Q_EMIT finished(false);
    });
    connect(m_jobs, &JobRunner::progress, this,
        [this](int, double fraction) { m_progress->setValue(int(1000.0 * fraction)); });
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_status);
    layout->addWidget(m_table, 1);
    layout->addWidget(m_progress);
    layout->addWidget(buttons);
}

bool ValidationDialog::isComputing() const
{
    return m_jobs->isBusy();
}

void ValidationDialog::start()
{
    m_table->setRowCount(0);
    m_progress->setValue(0);
    m_cancel->setEnabled(true);
    m_jobs->start<Outcome>(
        [](const JobContext& context) {
            Outcome outcome;
            const auto& figures = core::validation::builtinFigures();
            auto results = core::validation::evaluateAll(figures, nullptr, [&context](int done, int total) {
                context.progress(double(done) / double(total));
                return !context.cancelled();
            });
            if (results)
                outcome.results = std::move(results).value();
            else
                outcome.error = QString::fromStdString(results.error().format());
            return outcome;
        },
        [this](int, Outcome outcome) {
            m_cancel->setEnabled(false);
            if (!outcome.error.isEmpty()) {
                m_status->setText(outcome.error);
                Q_EMIT finished(false);
                return;
            }
            showResults(outcome.results);
            Q_EMIT finished(true);
        });
}

void ValidationDialog::showResults(const std::vector<core::validation::FigureResult>& results)
{
    m_results = results;
    m_table->setRowCount(int(results.size()));
    for (int row = 0; row < int(results.size()); ++row) {
        const core::validation::FigureResult& r = results[std::size_t(row)];
        const core::validation::PublishedFigure& f = r.figure;
        const QString unit = QString::fromStdString(f.unit);
        const QString published = f.publishedLow
            ? tr("%1 to %2 %3").arg(number(*f.publishedLow), number(*f.publishedHigh), unit)
            : tr("%1 %2").arg(number(f.published), unit);
        char error[32];
        std::snprintf(error, sizeof error, "%+.1f%%", r.errorPct);
        const QString verdict = r.fitted ? tr("fitted")
            : f.reportedOnly             ? tr("%1 (reported only)").arg(QString::fromLatin1(error))
                                         : QString::fromLatin1(error);
        QString notes;
        for (const std::string& note : r.notes)
            notes += (notes.isEmpty() ? QString() : QStringLiteral("; ")) + QString::fromStdString(note);
        const QStringList cells { QString::fromStdString(f.what), published, tr("%1 %2").arg(number(r.predicted), unit),
            verdict, QString::fromStdString(r.profile), QString::fromStdString(f.source + ", " + f.date), notes };
        const QString tip = tr("%1\nConditions: %2\nCommand: %3")
                                .arg(QString::fromStdString(f.what), QString::fromStdString(f.conditions),
                                    QString::fromStdString(r.command));
        for (int column = 0; column < cells.size(); ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            item->setToolTip(column == 6 && !notes.isEmpty() ? notes : tip);
            if (column >= 1 && column <= 3)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, column, item);
        }
    }
    m_table->resizeColumnsToContents();
    m_table->setColumnWidth(0, std::min(m_table->columnWidth(0), 360));
    m_table->setColumnWidth(5, std::min(m_table->columnWidth(5), 260));
    m_progress->setValue(1000);
    m_status->setText(tr("%n published figures recomputed. Hover a row for its conditions and the command that "
                         "computes it; waferscope-cli validate prints the same.",
        nullptr, int(results.size())));
}

} // namespace waferscope::ui
