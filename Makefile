# pybpfprof — build, test, demo, bench.
#   make            build ./pybpfprof
#   sudo make demo  install Debian dependencies, build, profile the bundled example
#   sudo make check install Debian dependencies, build, run every test (real BPF, as root)
#   sudo make bench overhead and size figures (not part of check)
#   sudo make soak  the whole-host soak for SOAK_MINUTES (default 60; check runs it for 5)

BUILD    ?= build
CC       ?= cc
CLANG    ?= clang
BPFTOOL  ?= bpftool
ARCH     := x86

WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
CFLAGS    += -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -Iuser -I$(BUILD)
LDLIBS    := -lbpf -ldw -lelf -lzstd -lz -lm -lstdc++
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(WARN) -Wno-unused-function \
	      -I. -Iinclude -Ibpf

SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(shell find user -name '*.c' | sort)
LIB_SRCS  := $(filter-out user/cli/main.c,$(USER_SRCS))
LIB_OBJS  := $(patsubst user/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
SAN_OBJS  := $(patsubst user/%.c,$(BUILD)/san/%.o,$(LIB_SRCS))
TEST_SRCS := $(wildcard tests/test_*.c)
TESTS     := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))

# Debian packages the build, the tests and the demo need (python3-numpy and linux-perf:
# the native-stack tests profile numpy, and compare with perf's DWARF call graphs).
DEB_PACKAGES := make gcc clang llvm libbpf-dev bpftool libelf-dev libzstd-dev zlib1g-dev \
		pkg-config libcmocka-dev python3 debootstrap zstd \
		libdw-dev python3-numpy linux-perf libstdc++-12-dev

.PHONY: all deps demo check bench soak clean vmlinux pythons gen-offsets
.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS)

all: pybpfprof

pybpfprof: $(BUILD)/obj/cli/main.o $(BUILD)/libpybpfprof.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libpybpfprof.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/san/libpybpfprof.a: $(SAN_OBJS)
	@rm -f $@
	ar rcs $@ $^

# Header dependencies are generated (-MMD -MP); only the sampler includes the skeleton.
$(BUILD)/obj/%.o: user/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/san/%.o: user/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/sampler/bpf_sampler.o $(BUILD)/san/sampler/bpf_sampler.o: $(SKELS)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

$(BUILD)/%.bpf.o: bpf/%.bpf.c | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
	llvm-strip -g $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@

# Unit and integration tests run under ASan+UBSan against the same library.
$(BUILD)/tests/%: tests/%.c $(BUILD)/san/libpybpfprof.a | $(BUILD)/tests
	$(CC) $(CFLAGS) $(SAN_FLAGS) -MMD -MP -Itests -o $@ $< $(BUILD)/san/libpybpfprof.a $(LDLIBS) -lcmocka

$(BUILD) $(BUILD)/tests:
	mkdir -p $@

# The offsets rows of CPython 2.7 and 3.6-3.12, from each interpreter's own headers
# (PYENV_ROOT/versions/<version>/include), and the 3.13+ _Py_DebugOffsets layouts, from
# tests/data/cpython-debug-offsets/; test_py_offsets checks the committed files.
gen-offsets:
	sh tests/scripts/gen_py_offsets.sh > user/target/py_offsets_table.inc.new
	mv user/target/py_offsets_table.inc.new user/target/py_offsets_table.inc
	sh tests/scripts/gen_debug_layouts.sh > user/target/py_debug_layouts.inc.new
	mv user/target/py_debug_layouts.inc.new user/target/py_debug_layouts.inc

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux.h

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "pybpfprof: missing Debian packages: $$missing (run as root: sudo make deps)" >&2; exit 1; fi; \
		echo "installing: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

demo: deps
	$(MAKE) all
	./examples/demo.sh

# 3.14 and 3.15 come from a cached Debian sid chroot; if it cannot be built
# (no mirror), their tests say they are skipped and why.
check: deps
	$(MAKE) all $(TESTS)
	./tests/pythons/provision-sid.sh || echo "warning: Python 3.14/3.15 could not be provisioned; their tests will be skipped" >&2
	./tests/run-tests.sh $(TESTS)

# A whole-host profile while ~200 short Python processes a minute come and go, some hostile:
# memory and CPU flat, every benign process profiled (tests/soak/soak.sh says what it checks).
SOAK_MINUTES ?= 60
soak: deps
	$(MAKE) all
	./tests/soak/soak.sh $(SOAK_MINUTES)

bench: deps
	$(MAKE) all $(BUILD)/bench/unwind_rows
	./bench/bench.sh

# The bench's unwind table sizes, built with the profiler's own table code.
$(BUILD)/bench/unwind_rows: bench/unwind_rows.c $(BUILD)/libpybpfprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libpybpfprof.a $(LDLIBS)

# Debian sid's python3.14 and python3.15 in a debootstrap'd chroot (cached).
pythons: deps
	./tests/pythons/provision-sid.sh

clean:
	rm -rf $(BUILD) pybpfprof
