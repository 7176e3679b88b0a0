# Included from tests/CMakeLists.txt: Verilator lint of the RTL with every warning enabled.
# IRDMA_RTL_SOURCES is set by rtl_bridge/ (absent when IRDMA_SIM_RTL is OFF).
if(IRDMA_SIM_TESTS AND IRDMA_RTL_SOURCES)
  add_test(NAME rtl_lint COMMAND ${VERILATOR_BIN} --lint-only -Wall -I${PROJECT_SOURCE_DIR}/rtl_bridge/rtl ${IRDMA_RTL_SOURCES})
  # The view yosys synthesizes (its monitors left out) is linted too.
  add_test(NAME rtl_lint_synthesis
           COMMAND ${VERILATOR_BIN} --lint-only -Wall -DSYNTHESIS -I${PROJECT_SOURCE_DIR}/rtl_bridge/rtl ${IRDMA_RTL_SOURCES})
endif()
