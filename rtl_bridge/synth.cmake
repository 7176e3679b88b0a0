# Synthesizes the RTL with yosys (Debian's) and reports its size; run by the rtl_synth test:
#   cmake -DYOSYS=... -DTOP=... -DSOURCES="a.v;b.v" [-DPARAMS="NAME=VALUE;..."] -P synth.cmake
# PARAMS overrides the top's parameters (the CQ writer's context store is synthesized small:
# generic synthesis maps a memory to flip-flops, a context's worth each).
# Fails when yosys does, when `check -assert` finds a problem (multiply driven nets,
# combinational loops) before or after synthesis, or when nothing is left of the design.
string(REPLACE ";" " " files "${SOURCES}")
set(chparams "")
foreach(p ${PARAMS})
  string(REPLACE "=" ";" kv "${p}")
  list(GET kv 0 k)
  list(GET kv 1 v)
  string(APPEND chparams "chparam -set ${k} ${v} ${TOP}; ")
endforeach()
execute_process(
  COMMAND ${YOSYS} -p "read_verilog -sv ${files}; ${chparams}hierarchy -check -top ${TOP}; proc; check -assert; synth -top ${TOP}; check -assert; stat"
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
# The last count is the whole design's (the hierarchy's total when there are submodules).
string(REGEX MATCHALL "Number of cells: +[0-9]+" counts "${stats}")
list(GET counts -1 last)
string(REGEX MATCH "[0-9]+" cells "${last}")
if(NOT cells GREATER 0)
  message(FATAL_ERROR "${TOP} synthesized to no cells: its logic was optimized away (outputs undriven?)")
endif()
# Flip-flops likewise: the hierarchy's summary when there is one.
string(FIND "${stats}" "=== design hierarchy ===" hier)
if(NOT hier EQUAL -1)
  string(SUBSTRING "${stats}" ${hier} -1 stats)
endif()
string(REGEX MATCHALL "\\$_[A-Z]*DFF[A-Z0-9_]*_ +[0-9]+" flops "${stats}")
set(ff 0)
foreach(f ${flops})
  string(REGEX MATCH "[0-9]+$" k "${f}")
  math(EXPR ff "${ff} + ${k}")
endforeach()
message(STATUS "rtl_synth: ${TOP} ${PARAMS}: ${cells} cells, ${ff} of them flip-flops (yosys synth, generic gates)")
