// junit.xml for CI test views: one <testsuite> per phase, one <testcase> per check
// (record) and per rule verdict. FAIL is <failure>, ERROR is <error>, SKIP and rules
// without data are <skipped/>; a WARN passes with the warning in <system-out>, where a
// PASS keeps its message too.
#pragma once

#include <string>

#include "model/report.h"

namespace gpuaccept::report {

std::string junit_xml(const Report& report);

}  // namespace gpuaccept::report
