// Filled in by the PDF report writer.
#include "ui/reportpdf.h"
