# The two commands (README): `make run` and `make test`. Both install the Debian packages
# that are missing, configure and build Release, then run.
#   make run [SCENARIO=scenarios/x.yaml] [OUT=out/x] [SEED=n]
#   make test
#   make bench    (figures: Google Benchmark, then the whole-system benchmarks)
#   make tsan     (the driver on OS threads under ThreadSanitizer, against build/'s server)
#   make asan     (the whole suite but Python under AddressSanitizer and UBSan)
#   make fuzz [FUZZ_SECONDS=n] [FUZZ_KEEP=1]
#                 (each libFuzzer target for n seconds, 30 by default, under ASan and UBSan;
#                 FUZZ_KEEP=1 adds what it finds to the kept corpus, tests/fuzz/corpus)
BUILD    ?= build
SCENARIO ?= scenarios/smoke.yaml
OUT      ?= out/$(basename $(notdir $(SCENARIO)))
SEED     ?=

DEBIAN_PACKAGES := cmake ninja-build g++ pkg-config libsystemc-dev verilator libgtest-dev \
  libbenchmark-dev pybind11-dev python3-dev python3-pytest python3-yaml libyaml-cpp-dev \
  qemu-system-x86 busybox-static python3-matplotlib chromium python3-distributed yosys \
  clang libclang-rt-14-dev file ibverbs-utils ibverbs-providers python3-pyverbs \
  libibverbs-dev perftest

FUZZ_SECONDS ?= 30
FUZZ_KEEP    ?=

# SystemC prints its banner in every process it starts, the build's test discovery too.
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE := 1

.PHONY: run test tsan asan fuzz bench deps build clean

run: build
	$(BUILD)/bin/irdma-sim run $(SCENARIO) --out $(OUT) $(if $(SEED),--seed $(SEED))

test: build
	cd $(BUILD) && ctest --output-on-failure -j 2

tsan: build
	@cmake --preset tsan --log-level=WARNING > /dev/null
	@cmake --build build-tsan -- --quiet
	cd build-tsan && ctest --output-on-failure -j 2 -L tsan

asan: build
	@cmake --preset asan --log-level=WARNING > /dev/null
	@cmake --build build-asan -- --quiet
	cd build-asan && ctest --output-on-failure -j 2

fuzz: deps
	@cmake --preset fuzz --log-level=WARNING > /dev/null
	@cmake --build build-fuzz --target fuzz_targets -- --quiet
	tests/scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS) "$(FUZZ_KEEP)"

bench: build
	$(BUILD)/tests/bench/irdma_bench --benchmark_min_time=1
	for mode in approximate loose; do \
	  $(BUILD)/tests/bench/irdma-sim-bench model $$mode; \
	  $(BUILD)/tests/bench/irdma-sim-bench e2e $$mode; \
	done
	for pairs in 8 512 4096; do $(BUILD)/tests/bench/irdma-sim-bench scale approximate $$pairs; done
	$(BUILD)/tests/bench/irdma-sim-bench e2e vfio-user
	$(BUILD)/tests/bench/irdma-sim-bench doorbell-msix
	$(BUILD)/tests/bench/irdma-sim-soak | tail -1
	$(BUILD)/tests/bench/vfio_user_bench
	/usr/bin/python3 tests/bench/uverbs_bench.py $(BUILD)/bin/irdma-sim

build: deps
	@cmake --preset release -B $(BUILD) --log-level=WARNING > /dev/null
	@cmake --build $(BUILD) -- --quiet

deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages (log: $(BUILD)/apt.log):" $$missing; \
	  mkdir -p $(BUILD); \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  { $$sudo apt-get update -qq && \
	    $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 \
	      --no-install-recommends $$missing; } > $(BUILD)/apt.log 2>&1 || \
	    { tail -20 $(BUILD)/apt.log; echo "installing Debian packages failed: see $(BUILD)/apt.log"; exit 1; }; \
	fi

clean:
	rm -rf $(BUILD) build-tsan build-asan build-fuzz out
