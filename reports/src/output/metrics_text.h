// The run's headline figures and per-node verdicts in the Prometheus/OpenMetrics text
// format, for node_exporter's textfile collector (`gpuaccept-report --metrics FILE`):
//   gpuaccept_nccl_busbw_gbytes_per_second{collective="all_reduce",scale="all",ranks="16"} 412.5
//   gpuaccept_node_state{node="gpu07",state="drain"} 1
// Every metric is a gauge of the latest run (no run id among the figures' labels, so a
// dashboard's series stay the same from run to run; gpuaccept_run_info names the run).
// Label values are escaped as the format says (\\, \", \n); the text ends with "# EOF".
#pragma once

#include <string>
#include <string_view>

#include "model/report.h"

namespace gpuaccept::report {

std::string metrics_text(const Report& report, std::string_view run_id, double unix_time);

}  // namespace gpuaccept::report
