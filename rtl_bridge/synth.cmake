# Synthesizes the RTL with yosys (Debian's) and reports its size; run by the rtl_synth test:
#   cmake -DYOSYS=... -DTOP=... -DSOURCES="a.v;b.v" -P synth.cmake
# Fails when yosys does, when `check -assert` finds a problem (multiply driven nets,
# combinational loops) before or after synthesis, or when nothing is left of the design.
string(REPLACE ";" " " files "${SOURCES}")
execute_process(
  COMMAND ${YOSYS} -p "read_verilog -sv ${files}; hierarchy -check -top ${TOP}; proc; check -assert; synth -top ${TOP}; check -assert; stat"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "yosys could not synthesize ${TOP} (status ${rc}):\n${err}\n${out}")
endif()
# synth prints statistics of its own: the last block is the final netlist's.
string(FIND "${out}" "Printing statistics" at REVERSE)
if(at EQUAL -1)
  message(FATAL_ERROR "yosys reported no statistics for ${TOP}:\n${out}")
endif()
string(SUBSTRING "${out}" ${at} -1 stats)
string(REGEX MATCH "Number of cells: +[0-9]+" last "${stats}")
string(REGEX MATCH "[0-9]+" cells "${last}")
if(NOT cells GREATER 0)
  message(FATAL_ERROR "${TOP} synthesized to no cells: its logic was optimized away (outputs undriven?)")
endif()
string(REGEX MATCHALL "\\$_[A-Z]*DFF[A-Z0-9_]*_ +[0-9]+" flops "${stats}")
set(ff 0)
foreach(f ${flops})
  string(REGEX MATCH "[0-9]+$" k "${f}")
  math(EXPR ff "${ff} + ${k}")
endforeach()
message(STATUS "rtl_synth: ${TOP}: ${cells} cells, ${ff} of them flip-flops (yosys synth, generic gates)")
