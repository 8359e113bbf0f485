// report.pdf: the report document (core/report/reportdocument.h) laid out on A4 pages with Qt.
// report.html is the other rendering of the same document, so the two say the same things.
#include "ui/models/reportpdf.h"

#include "core/report/reportdocument.h"

#include <QBuffer>
#include <QFont>
#include <QFontMetricsF>
#include <QMarginsF>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgRenderer>
#include <QTextLayout>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace waferscope::ui {

namespace {

namespace report = core::report;
using Rows = std::vector<QStringList>;

const auto qs = [](const std::string& text) { return QString::fromStdString(text); };

// A table of the document, as the page writer lays it out.
struct Table {
    QStringList headers; // none: a key-value table, its first column shaded like a header
    QString align; // one letter per column: 'n' right-aligns a number column
    Rows rows;
    QString whenEmpty;
};

Table toTable(const report::ReportTable& source)
{
    Table table { {}, qs(source.align), {}, qs(source.whenEmpty) };
    for (const std::string& header : source.headers)
        table.headers << qs(header);
    for (const std::vector<std::string>& row : source.rows) {
        QStringList cells;
        for (const std::string& cell : row)
            cells << qs(cell);
        table.rows.push_back(cells);
    }
    return table;
}

QFont dejaVu(double points, bool bold = false)
{
    QFont font(QStringLiteral("DejaVu Sans"));
    font.setPointSizeF(points);
    font.setBold(bold);
    return font;
}

// The HTML page's palette, so both reports read alike on paper.
const QColor kText(0x1a, 0x20, 0x2c);
const QColor kMuted(0x4a, 0x55, 0x68);
const QColor kRule(0xcb, 0xd5, 0xe0);
const QColor kHeaderFill(0xed, 0xf2, 0xf7);

// Lays the report out top to bottom, one page after the other. Coordinates are the writer's
// device pixels from the top left of the page's margins; sizes are given in points.
class PageWriter {
public:
    PageWriter(QPdfWriter& writer, QPainter& painter, QString footer)
        : m_writer(writer)
        , m_painter(painter)
        , m_footer(std::move(footer))
        , m_pixelsPerPoint(writer.resolution() / 72.0)
        , m_page(writer.pageLayout().paintRectPixels(writer.resolution()).size())
        , m_bottom(m_page.height() - pt(kFooterHeight + 6))
    {
    }

    double pt(double points) const { return points * m_pixelsPerPoint; }
    double width() const { return m_page.width(); }

    void newPage()
    {
        drawFooter();
        m_writer.newPage();
        m_y = 0;
        ++m_number;
    }
    // At the top of a page nothing is gained by breaking: what does not fit a whole page is
    // drawn anyway (cut at the footer) rather than looping over empty pages.
    void ensureSpace(double height)
    {
        if (m_y > 0 && m_y + height > m_bottom)
            newPage();
    }
    void finish() { drawFooter(); }

    // `keepWithNext`: the height of what must follow on the same page (a table's first rows).
    void heading(const QString& text, double keepWithNext = 0)
    {
        const double gap = m_y > 0 ? pt(14) : 0.0;
        ensureSpace(gap + headingHeight() + keepWithNext);
        m_y += m_y > 0 ? gap : 0.0;
        m_painter.setFont(m_headingFont);
        m_painter.setPen(kText);
        const QFontMetricsF metrics(m_headingFont, &m_writer);
        m_painter.drawText(QPointF(0, m_y + metrics.ascent()), text);
        m_y += metrics.height() + pt(2);
        m_painter.setPen(QPen(kRule, pt(0.75)));
        m_painter.drawLine(QPointF(0, m_y), QPointF(width(), m_y));
        m_y += pt(6);
    }

    // `marker`, when given, hangs in the indent before the first line (a list bullet).
    void paragraph(
        const QString& text, const QFont& font, const QColor& colour, double indent = 0, const QString& marker = {})
    {
        const std::unique_ptr<QTextLayout> layout = layoutText(text, font, width() - indent, Qt::AlignLeft);
        const double height = layout->boundingRect().height();
        ensureSpace(height);
        m_painter.setPen(colour);
        m_painter.setFont(font);
        if (!marker.isEmpty())
            m_painter.drawText(QPointF(indent / 3, m_y + QFontMetricsF(font, &m_writer).ascent()), marker);
        layout->draw(&m_painter, QPointF(indent, m_y));
        m_y += height + pt(3);
    }
    void paragraph(const QString& text) { paragraph(text, m_bodyFont, kText); }
    void muted(const QString& text) { paragraph(text, m_captionFont, kMuted); }
    void bullet(const QString& text) { paragraph(text, m_bodyFont, kText, pt(14), QStringLiteral("•")); }

    void section(const QString& text, const Table& table)
    {
        heading(text, pt(36));
        this->table(table);
    }

    // Rows never split across pages; the header row is repeated at the top of each page.
    void table(const Table& table)
    {
        if (table.rows.empty()) {
            paragraph(table.whenEmpty);
            return;
        }
        const std::vector<double> widths = columnWidths(table);
        std::optional<RowLayout> header;
        if (!table.headers.isEmpty())
            header = layoutRow(table.headers, table, widths, true);
        const double headerHeight = header ? header->height : 0.0;
        for (std::size_t i = 0; i < table.rows.size(); ++i) {
            const RowLayout row = layoutRow(table.rows[i], table, widths, false);
            if (i == 0 || m_y + row.height > m_bottom) {
                ensureSpace(headerHeight + row.height);
                if (header)
                    paintRow(*header, widths, true, false);
            }
            paintRow(row, widths, false, table.headers.isEmpty());
        }
        m_y += pt(4);
    }

    // Scaled to the page width; a chart taller than what a page leaves it (hundreds of layers)
    // shrinks to fit one page instead of being cut.
    void chart(const report::ReportChart& chart)
    {
        QSvgRenderer svg(QByteArray::fromStdString(chart.svg));
        const std::unique_ptr<QTextLayout> caption
            = layoutText(qs(chart.caption), m_captionFont, width(), Qt::AlignLeft);
        const double captionHeight = caption->boundingRect().height() + pt(6);
        const QSizeF size = svg.isValid() ? svg.viewBoxF().size() : QSizeF();
        double w = width(), h = size.isEmpty() ? 0.0 : w * size.height() / size.width();
        const double room = m_bottom - pt(14) - headingHeight() - captionHeight;
        if (h > room) {
            w *= room / h;
            h = room;
        }
        heading(qs(chart.title), captionHeight + h);
        m_painter.setPen(kMuted);
        caption->draw(&m_painter, QPointF(0, m_y));
        m_y += captionHeight;
        // SVG text without a font-weight takes the painter's: the heading's bold must not leak in.
        m_painter.setFont(m_bodyFont);
        svg.render(&m_painter, QRectF(0, m_y, w, h));
        m_y += h + pt(4);
    }

private:
    static constexpr double kFooterHeight = 14;
    static constexpr double kCellPadX = 4, kCellPadY = 2;

    struct RowLayout {
        std::vector<std::unique_ptr<QTextLayout>> cells;
        double height = 0;
    };

    double headingHeight() const { return QFontMetricsF(m_headingFont, &m_writer).height() + pt(8); }

    // Wraps at spaces where it can and anywhere otherwise: paths and hashes have no spaces.
    std::unique_ptr<QTextLayout> layoutText(
        const QString& text, const QFont& font, double width, Qt::Alignment alignment) const
    {
        auto layout = std::make_unique<QTextLayout>(text, font, &m_writer);
        QTextOption option(alignment);
        option.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
        layout->setTextOption(option);
        layout->beginLayout();
        for (double y = 0;;) {
            QTextLine line = layout->createLine();
            if (!line.isValid())
                break;
            line.setLineWidth(std::max(width, 1.0));
            line.setPosition(QPointF(0, y));
            y += line.height();
        }
        layout->endLayout();
        return layout;
    }

    // Columns as wide as their content when the table fits; otherwise number columns keep their
    // width and the text columns share what is left, in proportion, and wrap.
    std::vector<double> columnWidths(const Table& table) const
    {
        std::size_t columns = std::size_t(table.headers.size());
        for (const QStringList& row : table.rows)
            columns = std::max(columns, std::size_t(row.size()));
        const QFontMetricsF plain(m_cellFont, &m_writer), bold(m_cellBoldFont, &m_writer);
        std::vector<double> widths(columns, 0.0);
        const auto widen = [&](const QStringList& cells, const QFontMetricsF& metrics, bool keyColumn) {
            for (qsizetype i = 0; i < cells.size(); ++i)
                widths[i] = std::max(widths[i], (i == 0 && keyColumn ? bold : metrics).horizontalAdvance(cells[i]));
        };
        widen(table.headers, bold, false);
        for (const QStringList& row : table.rows)
            widen(row, plain, table.headers.isEmpty());
        double fixed = 0, flexible = 0;
        for (std::size_t i = 0; i < columns; ++i) {
            widths[i] += 2 * pt(kCellPadX) + pt(1);
            (isNumber(table, i) ? fixed : flexible) += widths[i];
        }
        if (fixed + flexible <= width())
            return widths;
        // Number columns only shrink when they alone would take more than 70 % of the width.
        const double numberShare = fixed > 0 ? std::min(1.0, width() * (flexible > 0 ? 0.7 : 1.0) / fixed) : 1.0;
        const double textShare = flexible > 0 ? (width() - fixed * numberShare) / flexible : 0.0;
        for (std::size_t i = 0; i < columns; ++i)
            widths[i] *= isNumber(table, i) ? numberShare : textShare;
        return widths;
    }

    static bool isNumber(const Table& table, std::size_t column)
    {
        return qsizetype(column) < table.align.size() && table.align[qsizetype(column)] == u'n';
    }

    RowLayout layoutRow(
        const QStringList& cells, const Table& table, const std::vector<double>& widths, bool header) const
    {
        RowLayout row;
        for (std::size_t i = 0; i < widths.size(); ++i) {
            const bool bold = header || (table.headers.isEmpty() && i == 0);
            const Qt::Alignment alignment = !header && isNumber(table, i) ? Qt::AlignRight : Qt::AlignLeft;
            const QString text = qsizetype(i) < cells.size() ? cells[qsizetype(i)] : QString();
            row.cells.push_back(
                layoutText(text, bold ? m_cellBoldFont : m_cellFont, widths[i] - 2 * pt(kCellPadX), alignment));
            row.height = std::max(row.height, row.cells.back()->boundingRect().height());
        }
        row.height += 2 * pt(kCellPadY);
        return row;
    }

    void paintRow(const RowLayout& row, const std::vector<double>& widths, bool header, bool keyColumn)
    {
        double x = 0;
        for (std::size_t i = 0; i < widths.size(); ++i) {
            const QRectF cell(x, m_y, widths[i], row.height);
            m_painter.fillRect(cell, header || (keyColumn && i == 0) ? kHeaderFill : QColor(Qt::white));
            m_painter.setPen(QPen(kRule, pt(0.5)));
            m_painter.drawRect(cell);
            m_painter.setPen(kText);
            row.cells[i]->draw(&m_painter, QPointF(x + pt(kCellPadX), m_y + pt(kCellPadY)));
            x += widths[i];
        }
        m_y += row.height;
    }

    void drawFooter()
    {
        const QRectF box(0, m_page.height() - pt(kFooterHeight), width(), pt(kFooterHeight));
        m_painter.setPen(QPen(kRule, pt(0.5)));
        m_painter.drawLine(box.topLeft(), box.topRight());
        m_painter.setPen(kMuted);
        m_painter.setFont(m_footerFont);
        const QString page = QStringLiteral("page %1").arg(m_number);
        const QFontMetricsF metrics(m_footerFont, &m_writer);
        const double room = width() - metrics.horizontalAdvance(page) - pt(12);
        m_painter.drawText(box, Qt::AlignLeft | Qt::AlignBottom, metrics.elidedText(m_footer, Qt::ElideMiddle, room));
        m_painter.drawText(box, Qt::AlignRight | Qt::AlignBottom, page);
    }

    QPdfWriter& m_writer;
    QPainter& m_painter;
    const QString m_footer;
    const double m_pixelsPerPoint;
    const QSizeF m_page;
    const double m_bottom; // where the body ends and the footer's space begins
    double m_y = 0;
    int m_number = 1;
    const QFont m_headingFont = dejaVu(12, true);
    const QFont m_bodyFont = dejaVu(9.5);
    const QFont m_captionFont = dejaVu(8.5);
    const QFont m_cellFont = dejaVu(7.5);
    const QFont m_cellBoldFont = dejaVu(7.5, true);
    const QFont m_footerFont = dejaVu(7);
};

// The document's sections in order, as reportHtml writes them.
void writeReport(PageWriter& pages, const report::ReportDocument& document)
{
    pages.paragraph(qs(document.title), dejaVu(16, true), kText);
    pages.muted(qs(document.subtitle));
    for (const report::ReportSection& section : document.sections) {
        switch (section.kind) {
        case report::ReportSection::Kind::Table:
            pages.section(qs(section.title), toTable(section.table));
            break;
        case report::ReportSection::Kind::List:
            pages.heading(qs(section.title), pages.pt(14));
            if (section.items.empty())
                pages.paragraph(qs(section.whenEmpty));
            for (const std::string& item : section.items)
                pages.bullet(qs(item));
            break;
        case report::ReportSection::Kind::Chart:
            pages.chart(section.chart);
            break;
        }
    }
    pages.muted(qs(document.closing));
}

} // namespace

QByteArray reportPdf(const core::report::RunReport& report, QString* error)
{
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    const report::ReportDocument document = report::reportDocument(report);
    const QString title = qs(document.title);
    {
        QPdfWriter writer(&buffer);
        writer.setResolution(300);
        writer.setPageLayout(QPageLayout(
            QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter));
        writer.setTitle(title);
        writer.setCreator(QStringLiteral("WaferScope"));
        QPainter painter;
        if (!painter.begin(&writer)) {
            if (error)
                *error = QStringLiteral("Cannot paint the PDF report.");
            return {};
        }
        PageWriter pages(writer, painter, qs(document.pageFooter));
        writeReport(pages, document);
        pages.finish();
        if (!painter.end()) {
            if (error)
                *error = QStringLiteral("Cannot finish the PDF report.");
            return {};
        }
    }
    return bytes;
}

} // namespace waferscope::ui
