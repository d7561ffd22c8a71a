# The report's logic as a library (the unit tests link it too) and its binary.
add_library(gpuaccept_report STATIC
  src/run/loaded_run.cpp
  src/run/node_inventory.cpp
  src/run/baseline_compare.cpp
  src/model/level.cpp
  src/model/node_grid.cpp
  src/model/build_report.cpp
  src/model/node_actions.cpp
  src/model/node_coverage.cpp
  src/model/good_nodes.cpp
  src/model/failure_groups.cpp
  src/model/headline.cpp
  src/model/port_counters.cpp
  src/model/slowest_pair.cpp
  src/model/fabric.cpp
  src/html/html_escape.cpp
  src/html/svg.cpp
  src/html/chart_axis.cpp
  src/html/line_chart.cpp
  src/html/bar_chart.cpp
  src/html/report_figures.cpp
  src/html/html_util.cpp
  src/html/html_style.cpp
  src/html/html_report.cpp
  src/html/html_failures.cpp
  src/html/html_grid.cpp
  src/html/html_node_actions.cpp
  src/html/html_node_coverage.cpp
  src/html/history_html.cpp
  src/html/html_plots.cpp
  src/html/html_inventory.cpp
  src/html/html_checkpoints.cpp
  src/html/html_phase_details.cpp
  src/html/html_fabric.cpp
  src/output/summary_json.cpp
  src/output/fabric_json.cpp
  src/output/junit_xml.cpp
  src/output/drain_files.cpp
  src/output/resume_files.cpp
  src/output/metrics_text.cpp
  src/output/history.cpp
  src/report_run.cpp
)
target_include_directories(gpuaccept_report PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_compile_options(gpuaccept_report PRIVATE -Wall -Wextra)
target_link_libraries(gpuaccept_report PUBLIC gpuaccept_thresholds)

add_executable(gpuaccept-report src/main.cpp)
target_compile_options(gpuaccept-report PRIVATE -Wall -Wextra)
target_link_libraries(gpuaccept-report PRIVATE gpuaccept_report)
