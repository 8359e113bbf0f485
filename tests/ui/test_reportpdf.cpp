// Tests of the PDF report.
#include <QTest>
class TestReportPdf : public QObject {
    Q_OBJECT
};
QTEST_MAIN(TestReportPdf)
#include "test_reportpdf.moc"
