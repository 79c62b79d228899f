# pybpfprof — build, test, demo, bench.
#   make            build ./pybpfprof
#   sudo make demo  install Debian dependencies, build, profile the bundled example
#   make unit       build and run the unit tests (tests/unit/: no root, no BPF; any user)
#   sudo make check install Debian dependencies, build, run the unit then the end-to-end tests
#                   (tests/e2e/: real BPF, interpreters, as root)
#   sudo make bench overhead and size figures (not part of check), then bench-peers
#   sudo make bench-peers  side by side with Austin and CPython 3.15's sampler (bench/results/)
#   sudo make install  the binary, man page and bash completion (PREFIX=/usr/local, DESTDIR)
#   make fuzz       libFuzzer on every harness of fuzz/, FUZZ_SECONDS each (fuzz/README.md)
#   sudo make soak  the whole-host soak for SOAK_MINUTES (default 60; check runs it for 5)

BUILD    ?= build
CC       ?= cc
CLANG    ?= clang
BPFTOOL  ?= bpftool
ARCH     := x86

WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
CFLAGS    += -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -Iuser -I$(BUILD) -I$(BUILD)/gen
LDLIBS    := -lbpf -lseccomp -ldw -lelf -lzstd -llzma -lz -lm -lstdc++ -lprotobuf-c -lncursesw -lpthread
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(WARN) -Wno-unused-function \
	      -I. -Iinclude -Ibpf

SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(shell find user -name '*.c' | sort)
LIB_SRCS  := $(filter-out user/cli/main.c,$(USER_SRCS))
# pprof's profile.proto comes from Debian (golang-github-google-pprof-dev); protoc-c compiles it.
PPROF_PROTO := /usr/share/gocode/src/github.com/google/pprof/proto/profile.proto
PPROF_GEN   := $(BUILD)/gen/profile.pb-c.c $(BUILD)/gen/profile.pb-c.h
LIB_OBJS  := $(patsubst user/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(BUILD)/obj/gen/profile.pb-c.o
SAN_OBJS  := $(patsubst user/%.c,$(BUILD)/san/%.o,$(LIB_SRCS)) $(BUILD)/san/gen/profile.pb-c.o
# tests/unit/: the library in process, no root, no BPF; tests/e2e/: root, real BPF, interpreters,
# the pybpfprof binary. Both link tests/lib/ (built once per flavour).
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(wildcard tests/unit/test_*.c))
E2E_TESTS  := $(patsubst tests/e2e/%.c,$(BUILD)/tests/e2e/%,$(wildcard tests/e2e/test_*.c))
TESTS      := $(UNIT_TESTS) $(E2E_TESTS)
# tests/lib/*.c: helpers shared by tests, in one archive per flavour (a test links what it calls).
TESTLIB_SRCS := $(wildcard tests/lib/*.c)
TESTLIB_SAN  := $(BUILD)/tests/lib/libtestlib.a
TESTLIB      := $(BUILD)/tests/lib/libtestlib-nosan.a

# Fuzzing (fuzz/README.md): one harness fuzz/fuzz_<name>.c per input others control, its
# corpus in fuzz/corpus/fuzz_<name>/. `make fuzz` runs each under clang's libFuzzer for
# FUZZ_SECONDS; `make check` runs each corpus once (tests/unit/test_fuzz_corpus.c).
FUZZ_ALL      := mojo_reader tachyon_reader collapsed_reader py_linetable proc_maps \
		 py_debug_offsets elf_file unwind_table
FUZZ_NAMES    ?= $(FUZZ_ALL)
FUZZ_SECONDS  ?= 60
FUZZ_TIMEOUT  ?= 60
FUZZ_SRCS     := fuzz/fuzz_input.c fuzz/fuzz_profile.c $(FUZZ_ALL:%=fuzz/fuzz_%.c)
FUZZ_SAN_OBJS := $(patsubst fuzz/%.c,$(BUILD)/fuzz-san/%.o,$(FUZZ_SRCS))
FUZZ_CFLAGS   := -O1 -g -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -Iuser -I$(BUILD) -I$(BUILD)/gen -Ifuzz \
		 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# The layers a harness reaches (no BPF skeleton needed), built with libFuzzer's coverage.
FUZZ_LIB_OBJS := $(patsubst user/%.c,$(BUILD)/fuzz/lib/%.o,$(filter user/util/% user/profile/% \
		 user/formats/% user/proc/% user/elf/% user/python/% user/unwind/% user/symbolize/% user/parser/% user/worker/% \
		 user/cli/annotate.c user/cli/cli_error.c user/cli/options.c,$(LIB_SRCS))) $(BUILD)/fuzz/lib/gen/profile.pb-c.o
FUZZ_BINS     := $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)

# Debian packages the build, the tests and the demo need (python3-numpy and linux-perf:
# the native-stack tests profile numpy, and compare with perf's DWARF call graphs;
# chromium, chromium-driver and python3-selenium: test_flamegraph_browser opens an SVG;
# protobuf-c and pprof's .proto build the pprof writer; go and jsonschema: test_export;
# the servers, broker and load generator of test_services and bench/service.sh, for
# /usr/bin/python3.11: gunicorn, Flask, uvicorn, FastAPI, uWSGI and its python3 plugin,
# Celery, Redis and its client, wrk, uvloop; procps: pgrep and pkill, for the test runner's
# leftover processes and the soak's).
DEB_PACKAGES := make gcc clang llvm libbpf-dev bpftool libelf-dev libzstd-dev zlib1g-dev \
		pkg-config libcmocka-dev python3 debootstrap zstd \
		libdw-dev python3-numpy linux-perf libstdc++-12-dev libncurses-dev tmux \
		protobuf-c-compiler libprotobuf-c-dev golang-github-google-pprof-dev golang-go \
		python3-jsonschema chromium chromium-driver python3-selenium libcurl4-openssl-dev \
		liblzma-dev xz-utils binutils libclang-rt-14-dev libseccomp-dev \
		gunicorn python3-flask uvicorn python3-fastapi uwsgi-core uwsgi-plugin-python3 \
		python3-celery python3-redis redis-server wrk gdb python3-uvloop procps

.PHONY: all deps demo unit check bench bench-peers bench-flood soak clean vmlinux pythons gen-offsets install uninstall fuzz
.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS) $(FUZZ_ALL:%=$(BUILD)/fuzz/harness/fuzz_%.o) \
	    $(FUZZ_ALL:%=$(BUILD)/fuzz/harness/entry_%.o)

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

# the sources that include the generated skeleton (a fresh clone's parallel build needs it first)
SKEL_USERS := $(shell grep -l 'skel\.h"' $(USER_SRCS))
$(patsubst user/%.c,$(BUILD)/obj/%.o,$(SKEL_USERS)) $(patsubst user/%.c,$(BUILD)/san/%.o,$(SKEL_USERS)): $(SKELS)

$(PPROF_GEN): $(PPROF_PROTO)
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen -I$(dir $(PPROF_PROTO)) $(PPROF_PROTO)

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/san/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -c $< -o $@

$(BUILD)/obj/formats/pprof/pprof_writer.o $(BUILD)/san/formats/pprof/pprof_writer.o: $(PPROF_GEN)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

$(BUILD)/%.bpf.o: bpf/%.bpf.c | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
	llvm-strip -g $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@

# Unit and end-to-end tests run under ASan+UBSan against the same library ($(BUILD)/tests/unit/,
# $(BUILD)/tests/e2e/).
$(BUILD)/tests/lib/%.o: tests/lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -MMD -MP -Itests/lib -c $< -o $@

$(BUILD)/tests/lib/%-nosan.o: tests/lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -Itests/lib -c $< -o $@

$(TESTLIB_SAN): $(patsubst tests/lib/%.c,$(BUILD)/tests/lib/%.o,$(TESTLIB_SRCS))
	rm -f $@ && $(AR) rcs $@ $^

$(TESTLIB): $(patsubst tests/lib/%.c,$(BUILD)/tests/lib/%-nosan.o,$(TESTLIB_SRCS))
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/tests/%: tests/%.c $(TESTLIB_SAN) $(BUILD)/san/libpybpfprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -MMD -MP -Itests/lib -o $@ $< $(TESTLIB_SAN) $(BUILD)/san/libpybpfprof.a \
		$(LDLIBS) -lcmocka

# The heap warm-up is about glibc's malloc, which the sanitizers replace: built without them.
$(BUILD)/tests/unit/test_util_heap_warm: tests/unit/test_util_heap_warm.c $(TESTLIB) $(BUILD)/libpybpfprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -Itests/lib -o $@ $< $(TESTLIB) $(BUILD)/libpybpfprof.a $(LDLIBS) -lcmocka

# So is bulk_alloc's test: what it checks is that the blocks stay out of glibc's heap.
$(BUILD)/tests/unit/test_util_bulk_alloc: tests/unit/test_util_bulk_alloc.c $(TESTLIB) $(BUILD)/libpybpfprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -Itests/lib -o $@ $< $(TESTLIB) $(BUILD)/libpybpfprof.a $(LDLIBS) -lcmocka

# The fuzzing corpora's regression run: the harnesses linked into a cmocka test.
$(BUILD)/tests/unit/test_fuzz_corpus: tests/unit/test_fuzz_corpus.c $(FUZZ_SAN_OBJS) $(TESTLIB_SAN) \
				       $(BUILD)/san/libpybpfprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -MMD -MP -Itests/lib -Ifuzz -o $@ $< $(FUZZ_SAN_OBJS) $(TESTLIB_SAN) \
		$(BUILD)/san/libpybpfprof.a $(LDLIBS) -lcmocka

$(BUILD)/fuzz-san/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -Ifuzz -MMD -MP -c $< -o $@

$(BUILD):
	mkdir -p $@

# libFuzzer builds (clang only): the library and harnesses instrumented for coverage.
$(BUILD)/fuzz/lib/%.o: user/%.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(BUILD)/fuzz/lib/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/lib/formats/pprof/pprof_writer.o: $(PPROF_GEN)

$(BUILD)/fuzz/libpybpfprof.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/fuzz/harness/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(BUILD)/fuzz/harness/entry_%.o: fuzz/libfuzzer_entry.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -DFUZZ_TARGET=fuzz_$*_run -MMD -MP -c $< -o $@

$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/harness/entry_%.o $(BUILD)/fuzz/harness/fuzz_%.o \
		      $(BUILD)/fuzz/harness/fuzz_input.o $(BUILD)/fuzz/harness/fuzz_profile.o \
		      $(BUILD)/fuzz/libpybpfprof.a
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# The offsets rows of CPython 2.7 and 3.6-3.12, from each interpreter's own headers
# (PYENV_ROOT/versions/<version>/include), and the 3.13+ _Py_DebugOffsets layouts, from
# tests/data/cpython-debug-offsets/; test_py_offsets checks the committed files. The asyncio
# layouts of 3.11-3.13 come from those interpreters' debug information (gdb), and the
# instruction names of 3.11-3.15 from their dis and opcode modules.
gen-offsets:
	sh tools/gen_py_offsets.sh > user/python/py_offsets_table.inc.new
	mv user/python/py_offsets_table.inc.new user/python/py_offsets_table.inc
	sh tools/gen_debug_layouts.sh > user/python/py_debug_layouts.inc.new
	mv user/python/py_debug_layouts.inc.new user/python/py_debug_layouts.inc
	sh tools/gen_asyncio_layouts.sh > user/python/py_asyncio_table.inc.new
	mv user/python/py_asyncio_table.inc.new user/python/py_asyncio_table.inc
	sh tools/gen_py_opcodes.sh > user/profile/py_opcode_table.inc.new
	mv user/profile/py_opcode_table.inc.new user/profile/py_opcode_table.inc

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

# The unit tests: seconds, as any user (the pybpfprof binary is their parser worker).
unit:
	$(MAKE) all $(UNIT_TESTS)
	./tests/run-tests.sh unit: $(UNIT_TESTS)

# 3.14 and 3.15 come from a cached Debian sid chroot; if it cannot be built
# (no mirror), their tests say they are skipped and why.
check: deps
	$(MAKE) all $(TESTS)
	./tests/pythons/provision-sid.sh || echo "warning: Python 3.14/3.15 could not be provisioned; their tests will be skipped" >&2
	./tests/run-tests.sh unit: $(UNIT_TESTS) e2e: $(E2E_TESTS)

# Each harness for FUZZ_SECONDS from its corpus (FUZZ_NAMES picks some). What libFuzzer finds
# new goes to $(BUILD)/fuzz/found/, a crashing input to $(BUILD)/fuzz/artifacts/ (add it to
# the harness's corpus with the fix).
fuzz: deps
	$(MAKE) $(FUZZ_BINS)
	@failed=; for name in $(FUZZ_NAMES); do \
		mkdir -p $(BUILD)/fuzz/found/fuzz_$$name $(BUILD)/fuzz/artifacts; \
		echo "=== fuzz_$$name: $(FUZZ_SECONDS) s"; \
		$(BUILD)/fuzz/fuzz_$$name -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) \
			-print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/artifacts/fuzz_$$name- \
			$(BUILD)/fuzz/found/fuzz_$$name fuzz/corpus/fuzz_$$name || failed="$$failed fuzz_$$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: findings in:$$failed (inputs in $(BUILD)/fuzz/artifacts/)"; exit 1; fi

# A whole-host profile while ~200 short Python processes a minute come and go, some hostile:
# memory and CPU flat, every benign process profiled (tests/soak/soak.sh says what it checks).
SOAK_MINUTES ?= 60
soak: deps
	$(MAKE) all
	./tests/soak/soak.sh $(SOAK_MINUTES)

bench: deps
	$(MAKE) all $(BUILD)/bench/unwind_rows $(BUILD)/bench/stack_repeat $(BUILD)/bench/parser_cost
	./bench/bench.sh

bench-peers: deps
	$(MAKE) all
	./bench/peers.sh

# A new process on a host flooded with busy Python processes (bench/flood.sh): whether its native
# frames arrive in time. Prints the chain share and the -v table and late-unwinding lines.
bench-flood: deps
	$(MAKE) all
	./bench/flood.sh

# The bench's unwind table sizes, built with the profiler's own table code.
$(BUILD)/bench/unwind_rows: bench/unwind_rows.c $(BUILD)/libpybpfprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libpybpfprof.a $(LDLIBS)

# A file's symbols read by the parser worker against in process (doc/security.md).
$(BUILD)/bench/parser_cost: bench/parser_cost.c $(BUILD)/libpybpfprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libpybpfprof.a $(LDLIBS)

# The userspace cost per frame of a repeated stack (resolve, MOJO and Tachyon writers), no BPF.
$(BUILD)/bench/stack_repeat: bench/stack_repeat.c tests/lib/fake_python.h $(BUILD)/libpybpfprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libpybpfprof.a $(LDLIBS)

# Debian sid's python3.14 and python3.15 in a debootstrap'd chroot (cached).
pythons: deps
	./tests/pythons/provision-sid.sh

# A system tool's place: the binary, its man page, its bash completion.
PREFIX  ?= /usr/local
DESTDIR ?=
install: all
	install -D -m 0755 pybpfprof $(DESTDIR)$(PREFIX)/bin/pybpfprof
	install -D -m 0644 doc/pybpfprof.1 $(DESTDIR)$(PREFIX)/share/man/man1/pybpfprof.1
	install -D -m 0644 contrib/pybpfprof.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/pybpfprof

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/pybpfprof $(DESTDIR)$(PREFIX)/share/man/man1/pybpfprof.1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/pybpfprof

clean:
	rm -rf $(BUILD) pybpfprof
