// report.html: one self-contained page (inline CSS and SVG, no script, no external
// asset), so it can be mailed, archived or opened on a cluster's login node as is.
#pragma once

#include <string>

#include "model/report.h"

namespace gpuaccept::report {

std::string render_html(const Report& report);

}  // namespace gpuaccept::report
