#include "ui/runtoolbar.h"

#include "ui/models/document.h"
#include "ui/wafer/waferpresenter.h"

#include <QComboBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>

namespace waferscope::ui {

RunToolBar::RunToolBar(Document* document, WaferPresenter* presenter, QWidget* parent)
    : QToolBar(tr("Run"), parent)
    , m_document(document)
    , m_systemBox(new QComboBox(this))
    , m_numSystemsBox(new QSpinBox(this))
    , m_modeBox(new QComboBox(this))
    , m_executionBox(new QComboBox(this))
    , m_overlayBox(new QComboBox(this))
{
    setObjectName(QStringLiteral("runToolBar"));
    setMovable(false);
    addWidget(new QLabel(tr(" System "), this));
    for (const core::SystemSpec& system : document->systems())
        m_systemBox->addItem(QStringLiteral("%1 (%2)").arg(
                                 QString::fromStdString(system.displayName), QString::fromStdString(system.wafer.name)),
            QString::fromStdString(system.name));
    addWidget(m_systemBox);
    addWidget(new QLabel(tr("  Systems (num_csx) "), this));
    m_numSystemsBox->setMinimum(1);
    addWidget(m_numSystemsBox);
    addWidget(new QLabel(tr("  Compile for "), this));
    m_modeBox->addItem(tr("training"), int(core::RunMode::Train));
    m_modeBox->addItem(tr("inference"), int(core::RunMode::Inference));
    m_modeBox->setToolTip(tr("Training: layer-pipelined when the model fits the wafer, weight streaming otherwise. "
                             "Inference: the blocks on as many wafers as the weights and KV cache need."));
    addWidget(m_modeBox);
    addWidget(new QLabel(tr("  Execution "), this));
    m_executionBox->addItem(tr("auto"), int(core::ExecutionChoice::Auto));
    m_executionBox->addItem(tr("layer pipelined"), int(core::ExecutionChoice::Pipelined));
    m_executionBox->addItem(tr("weight streaming"), int(core::ExecutionChoice::WeightStreaming));
    m_executionBox->setToolTip(tr("Training: auto pipelines the layers when the model fits the wafer and streams "
                                  "the weights from MemoryX otherwise; the other two force one."));
    addWidget(m_executionBox);
    addWidget(new QLabel(tr("  Show "), this));
    m_overlayBox->addItem(tr("placement"), int(MeshOverlay::Placement));
    m_overlayBox->addItem(tr("PE activity"), int(MeshOverlay::Activity));
    m_overlayBox->addItem(tr("SRAM"), int(MeshOverlay::Sram));
    m_overlayBox->addItem(tr("fabric traffic"), int(MeshOverlay::Traffic));
    m_overlayBox->addItem(tr("activity vs baseline"), int(MeshOverlay::Difference));
    m_overlayBox->setToolTip(tr("What the wafer view colours the PEs by: the compiler's regions, or from the run's "
                                "current step each PE's compute activity, its SRAM use, or its links' load."));
    addWidget(m_overlayBox);
    addSeparator();
    showSettings();

    connect(m_systemBox, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index >= 0)
            m_document->setSystemIndex(std::size_t(index));
    });
    connect(m_numSystemsBox, &QSpinBox::valueChanged, this, [this](int count) { m_document->setNumSystems(count); });
    connect(m_modeBox, &QComboBox::currentIndexChanged, this,
        [this](int) { m_document->setMode(core::RunMode(m_modeBox->currentData().toInt())); });
    connect(m_executionBox, &QComboBox::currentIndexChanged, this,
        [this](int) { m_document->setExecution(core::ExecutionChoice(m_executionBox->currentData().toInt())); });
    connect(m_overlayBox, &QComboBox::currentIndexChanged, presenter,
        [this, presenter](int) { presenter->setOverlay(MeshOverlay(m_overlayBox->currentData().toInt())); });
    connect(m_document, &Document::settingsChanged, this, &RunToolBar::showSettings);
    connect(presenter, &WaferPresenter::overlayChanged, this, [this](MeshOverlay overlay) {
        const QSignalBlocker blocker(m_overlayBox);
        m_overlayBox->setCurrentIndex(m_overlayBox->findData(int(overlay)));
    });
}

void RunToolBar::showSettings()
{
    const QSignalBlocker system(m_systemBox);
    const QSignalBlocker count(m_numSystemsBox);
    const QSignalBlocker mode(m_modeBox);
    const QSignalBlocker execution(m_executionBox);
    m_systemBox->setCurrentIndex(int(m_document->systemIndex()));
    m_numSystemsBox->setMaximum(m_document->maxSystems());
    m_numSystemsBox->setValue(m_document->numSystems());
    m_modeBox->setCurrentIndex(m_modeBox->findData(int(m_document->mode())));
    m_executionBox->setCurrentIndex(m_executionBox->findData(int(m_document->execution())));
}

} // namespace waferscope::ui
