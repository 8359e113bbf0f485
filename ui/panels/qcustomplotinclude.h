#pragma once

// qcustomplot.h uses Qt's lower-case keywords (signals, slots, emit, foreach), which this
// project turns off (QT_NO_KEYWORDS); they are mapped to the macro forms for this header only.
#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef slots
#undef emit
#undef foreach
