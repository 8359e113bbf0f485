#pragma once

namespace waferscope::cli {

// Makes Ctrl-C (SIGINT), SIGTERM and SIGHUP stop the CLI at once and cleanly: the signals are
// blocked in every thread and taken by one waiting thread, which removes the report files staged
// and not yet committed (core/report/atomicfile.h; a directory being committed is finished
// first, which takes microseconds), says "interrupted" on stderr and ends the process by the
// same signal, so a shell or a sweep script sees the usual 130/143 status. Files already in
// place are never touched. Call once, first thing in main, before any other thread exists.
void installInterruptHandling();

} // namespace waferscope::cli
