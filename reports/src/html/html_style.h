// The page's stylesheet, inlined into report.html.
#pragma once

namespace gpuaccept::report {

const char* report_css();

}  // namespace gpuaccept::report
