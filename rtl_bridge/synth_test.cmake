# Included from tests/CMakeLists.txt: the RTL synthesizes with yosys, its cell count reported.
if(IRDMA_SIM_TESTS AND IRDMA_RTL_SOURCES)
  find_program(YOSYS_BIN yosys REQUIRED)
  add_test(NAME rtl_synth
           COMMAND ${CMAKE_COMMAND} -DYOSYS=${YOSYS_BIN} -DTOP=cq_writer -DPARAMS=CQ_ID_W=4 "-DSOURCES=${IRDMA_RTL_SOURCES}"
                   -P ${PROJECT_SOURCE_DIR}/rtl_bridge/synth.cmake)
endif()
