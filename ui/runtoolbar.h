#pragma once

#include <QToolBar>

class QComboBox;
class QSpinBox;

namespace waferscope::ui {

class Document;
class WaferPresenter;

// The "Run" toolbar: the system, the cluster size, training or inference, the execution and the
// wafer overlay. Its boxes write the document's settings and the presenter's overlay, and follow
// them when they change elsewhere (the command line, the saved session). GUI thread.
class RunToolBar : public QToolBar {
    Q_OBJECT
public:
    RunToolBar(Document* document, WaferPresenter* presenter, QWidget* parent = nullptr);

private:
    void showSettings(); // the document's settings into the boxes, without writing them back

    Document* m_document;
    QComboBox* m_systemBox;
    QSpinBox* m_numSystemsBox;
    QComboBox* m_modeBox;
    QComboBox* m_executionBox;
    QComboBox* m_overlayBox;
};

} // namespace waferscope::ui
