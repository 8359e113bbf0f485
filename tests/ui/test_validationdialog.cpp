// Help > Validation: the published figures recomputed on the job runner and shown as
// `waferscope-cli validate` prints them; cancel leaves nothing half-shown.
#include "ui/validationdialog.h"

#include "core/validation/validation.h"

#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>
#include <QThreadPool>

using namespace waferscope;

class TestValidationDialog : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void showsEveryFigureAsTheCoreComputesIt()
    {
        ui::ValidationDialog dialog;
        QSignalSpy finished(&dialog, &ui::ValidationDialog::finished);
        dialog.start();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(finished.front().front().toBool(), true);
        const auto& figures = core::validation::builtinFigures();
        QCOMPARE(dialog.table()->rowCount(), int(figures.size()));
        for (int row = 0; row < int(figures.size()); ++row) {
            // The same figure evaluated here, independently of the dialog's job.
            const auto expected = core::validation::evaluate(figures[std::size_t(row)]);
            QVERIFY(expected.hasValue());
            QCOMPARE(dialog.results()[std::size_t(row)].predicted, expected->predicted);
            QCOMPARE(dialog.table()->item(row, 0)->text(), QString::fromStdString(figures[std::size_t(row)].what));
            QCOMPARE(dialog.table()->item(row, 3)->text() == QStringLiteral("fitted"), expected->fitted);
            QVERIFY(dialog.table()->item(row, 1)->toolTip().contains(QString::fromStdString(expected->command)));
        }
    }

    void cancelStopsTheJobAndShowsNothing()
    {
        ui::ValidationDialog dialog;
        QSignalSpy finished(&dialog, &ui::ValidationDialog::finished);
        dialog.start();
        const auto cancel = dialog.findChildren<QPushButton*>();
        for (QPushButton* button : cancel)
            if (button->text() == QStringLiteral("Cancel"))
                button->click();
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.front().front().toBool(), false);
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(dialog.table()->rowCount(), 0);
        QCOMPARE(finished.count(), 1); // the cancelled job delivers nothing
    }
};

QTEST_MAIN(TestValidationDialog)
#include "test_validationdialog.moc"
