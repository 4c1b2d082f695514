# SPDX-License-Identifier: Apache-2.0
# gpuipc_test: flat, non-recursive build. `make`, `make check`, `make help`.

# The build needs no CUDA toolkit: the driver API is declared in
# lib/gpu/cuda_api.h and cuda_pfn.h, and libcuda is loaded at run time. A
# toolkit's cuda.h, where there is one, serves only `make cuda-check`.
CUDA_HOME ?= /usr/local/cuda
PREFIX ?= /usr/local
DESTDIR ?=
# Where make install puts things (and --help looks for the documentation).
BINDIR := $(PREFIX)/bin
MANDIR := $(PREFIX)/share/man/man1
DOCDIR := $(PREFIX)/share/doc/gpuipc-test
BASHCOMPDIR := $(PREFIX)/share/bash-completion/completions
CC ?= cc
PKG_CONFIG ?= pkg-config
BUILD ?= build
PROG ?= gpuipc_test

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
# CFLAGS may be given on the command line (make asan does); override keeps
# what every build needs, the sanitizer flags included, in that case too.
CFLAGS ?= -O2 -g
override CFLAGS += -std=c11 -pthread $(WARN) -MMD -MP $(SAN_CFLAGS)
# The checkout's path stays out of the objects (debug info, __FILE__): two
# builds of one commit in different directories give the same binary, and
# the packages the same bytes (deploy/package.sh).
override CFLAGS += -ffile-prefix-map=$(CURDIR)=.
# Full RELRO: every symbol bound at start, the GOT then read-only (lintian's
# hardening-no-bindnow); the program dlopens libcuda and NVML itself, which
# this does not touch.
override LDFLAGS += -Wl,-z,relro,-z,now $(SAN_LDFLAGS)
# What the program changes of Check, linked statically: its temporary file,
# also where no directory can be written, and its SIGINT handler
# (lib/app/check_shim.c). Every link of lib/app (HOST_OBJS) takes these.
SHIM_LDFLAGS := -Wl,--wrap=mkstemp,--wrap=sigaction
ifeq ($(WERROR),1)
override CFLAGS += -Werror
endif
CPPFLAGS += -D_GNU_SOURCE -Ilib

# Check and subunit are linked statically, so that the binary also runs where
# libcheck is not installed (the GPU machines). Recursive variables: they are
# evaluated only when a recipe needs them, after deploy/deps.sh has run.
CHECK_CFLAGS = $(shell $(PKG_CONFIG) --cflags check)
CHECK_LIBS_ALL = $(shell $(PKG_CONFIG) --libs check)
CHECK_LIBS = -Wl,-Bstatic $(filter -lcheck% -lsubunit,$(CHECK_LIBS_ALL)) -Wl,-Bdynamic \
	$(filter-out -lcheck% -lsubunit,$(CHECK_LIBS_ALL))
LDLIBS += -ldl -lm -pthread

# What make install (and make deb and rpm) put in place as the program: the
# release binary (make release) where it was built, else ./gpuipc_test.
INSTALL_BIN ?= $(if $(wildcard build-release/gpuipc_test),build-release/gpuipc_test,gpuipc_test)

# What the build needs (Check, pkg-config) and make check too (xmllint):
# where one is missing, make installs it when run as root (apt-get, or dnf
# with EPEL: deploy/deps.sh says what it installs, never through sudo), and
# otherwise stops in one line naming the command to run as root, before 70
# failed compiles say it worse. deps, help, clean, release, cuda-check and
# pmix-check need none of them; install, deb and rpm none where the program
# they install is there already.
NO_CHECK_GOALS := deps help clean release cuda-check pmix-check layers uninstall \
	$(if $(wildcard $(INSTALL_BIN)),install deb rpm)
DEPS := check pkg-config $(if $(filter check asan valgrind,$(MAKECMDGOALS)),xmllint)
ifeq ($(filter $(NO_CHECK_GOALS),$(MAKECMDGOALS)),)
# Check is present where pkg-config gives what the build asks of it, its
# flags (deploy/deps.sh asks the same).
ifneq ($(shell $(PKG_CONFIG) --cflags --libs check >/dev/null 2>&1 && \
	{ [ -z "$(filter xmllint,$(DEPS))" ] || command -v xmllint >/dev/null; } && echo yes),yes)
DEPS_SAID := $(shell PKG_CONFIG='$(PKG_CONFIG)' sh deploy/deps.sh install $(DEPS))
ifneq ($(DEPS_SAID),)
$(error $(DEPS_SAID))
endif
endif
endif

# The commit the program is built from, for --version and the result
# document: git's, with -dirty for a changed tree; in a tree without .git
# (git archive, a release tarball) the one .commit was stamped with
# (export-subst in .gitattributes); else "unknown".
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
ifneq ($(GIT_COMMIT),)
COMMIT := $(GIT_COMMIT)$(shell git status --porcelain --untracked-files=no 2>/dev/null | \
	grep -q . && echo -dirty)
else
COMMIT := $(shell sed -n 's/^commit: \([0-9a-f]\{12\}\).*/\1/p' .commit 2>/dev/null)
endif
COMMIT := $(or $(COMMIT),unknown)

# The library, by folder (lib/<layer>/). Code that needs the CUDA driver lives
# in gpu/ and in every folder named cuda/, which only the program links; the
# no-GPU suites link the rest, so a socket bug can never be a CUDA bug. A new
# file needs no edit here.
HOST_DIRS := core wire session run launch mech bench app
GPU_DIRS := gpu mech/cuda bench/cuda app/cuda
srcs_in = $(wildcard $(addprefix lib/,$(addsuffix /*.c,$(1))))
HOST_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(call srcs_in,$(HOST_DIRS)))
GPU_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(call srcs_in,$(GPU_DIRS)))

# What the suites share (tests/helpers.h): the th_*.c helpers, the container
# splits and the JSON reader. A new th_*.c needs no edit here.
TEST_HELPER_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/th_*.c) tests/containers.c \
	tests/jschema.c)
TEST_NOGPU := $(BUILD)/tests/check_nogpu
TEST_NOGPU_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/test_*.c) tests/check_nogpu.c) \
	$(TEST_HELPER_OBJS)
TEST_GPU := $(BUILD)/tests/check_gpu
TEST_GPU_OBJS := $(BUILD)/tests/check_gpu.o $(TEST_HELPER_OBJS)
# Runs a command under a confinement made on purpose (tests/wrap.c), for the
# container suite's deliberate refusals; beside the suites that use it.
WRAP := $(BUILD)/tests/wrap
# Another user of the GPU, for the suite's runs beside one.
GPU_CHURN := $(BUILD)/tests/gpu_churn
# The Prometheus text format held to its rules where promtool is absent.
PROMCHECK := $(BUILD)/tests/promcheck
# lib/launch under a real PMIx launcher (tests/launch.sh, make check).
PMIX_PROBE := $(BUILD)/tests/pmix_probe
# The golden corpus's normaliser of result documents (tests/golden.sh, make check).
GOLDEN_NORM := $(BUILD)/tests/golden_norm
# Stand-ins for the driver's libraries (tests/standin/), found through
# LD_LIBRARY_PATH by tests/ranks.sh's plan by NVLink domain.
STANDIN := $(BUILD)/tests/standin/libnvidia-ml.so.1 $(BUILD)/tests/standin/libcuda.so.1

.PHONY: layers all check check-gpu cuda-check pmix-check deps clean install uninstall deb rpm help asan valgrind fuzz fuzz-run fuzz-seeds bench release
all: $(PROG) $(TEST_NOGPU) $(TEST_GPU) $(GPU_CHURN) $(BUILD)/tests/doc_check $(PROMCHECK) \
	$(PMIX_PROBE) $(GOLDEN_NORM) $(STANDIN)

help:
	@echo "make deps       install Check, pkg-config and xmllint if missing (as root: apt-get or"
	@echo "                dnf; make and make check do it themselves); else name the command"
	@echo "make            build ./gpuipc_test and the test suites"
	@echo "make check      cuda-check, the layers' includes, the docs' samples, the no-GPU"
	@echo "                suites, then ./gpuipc_test (exit 77 = skipped); every step runs,"
	@echo "                and the last line counts them: N passed, N failed, N skipped"
	@echo "make cuda-check compare lib/gpu/cuda_api.h and cuda_pfn.h with $(CUDA_H) at"
	@echo "                compile time (skipped, saying so, where it is absent)"
	@echo "make pmix-check compare lib/launch/pmix_api.h and pmix_pfn.h with the PMIx headers"
	@echo "                in $(PMIX_INCLUDE) at compile time (skipped where absent)"
	@echo "make check-gpu  run the GPU suite (on a machine with a GPU)"
	@echo "make bench      gpuipc_test --bench on this GPU: bench/results/<device>-<date>.json and .md"
	@echo "make asan       the no-GPU suites and tests/launch.sh built with AddressSanitizer and"
	@echo "                UBSan (build-asan/)"
	@echo "make valgrind   the no-GPU suites under valgrind memcheck (the tests valgrind cannot run are named and left out)"
	@echo "make fuzz       build the libFuzzer target of the message decoder with clang"
	@echo "make fuzz-run   run it over tests/corpus/wire for FUZZ_SECONDS (default 60)"
	@echo "make install    install the program (the release binary where it was built), its"
	@echo "                manual page, README.md, docs/ and bash completion under"
	@echo "                \$$(DESTDIR)\$$(PREFIX) (PREFIX=$(PREFIX)); make uninstall removes them"
	@echo "make deb        build-pkg/gpuipc-test_<version>_<arch>.deb (dpkg-deb), of what make"
	@echo "                install puts under /usr, stripped, and gpuipc-test-dbgsym (its debug info)"
	@echo "make rpm        the same as RPM packages, gpuipc-test and gpuipc-test-debuginfo (needs"
	@echo "                rpmbuild: Debian's package rpm)"
	@echo "make release    the distributed binary, built in a Debian 11 root so that it runs on"
	@echo "                glibc 2.28 and later (build-release/gpuipc_test; needs root, debootstrap"
	@echo "                and Debian's package servers)"
	@echo "variables: WERROR=1 (warnings are errors); CUDA_HOME=$(CUDA_HOME) (only for cuda-check:"
	@echo "           the build itself needs no CUDA toolkit)"

deps:
	@PKG_CONFIG='$(PKG_CONFIG)' sh deploy/deps.sh install check pkg-config xmllint
	@echo "deps: Check, pkg-config and xmllint are installed"

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CHECK_CFLAGS) $(CFLAGS) -c $< -o $@

# The commit, in a header rewritten only when it changes.
.PHONY: FORCE
$(BUILD)/gen/commit.h: FORCE
	@mkdir -p $(dir $@)
	@echo '#define GPUIPC_COMMIT "$(COMMIT)"' > $@.new; \
	cmp -s $@.new $@ && rm -f $@.new || mv $@.new $@
$(BUILD)/lib/app/version.o: $(BUILD)/gen/commit.h
$(BUILD)/lib/app/version.o: CPPFLAGS += -I$(BUILD)/gen

# Where make install puts the documentation, for --help (which looks beside
# the program first: one binary serves every prefix); rewritten when PREFIX
# changes.
$(BUILD)/gen/docdir.h: FORCE
	@mkdir -p $(dir $@)
	@echo '#define GPUIPC_DOCDIR "$(DOCDIR)"' > $@.new; \
	cmp -s $@.new $@ && rm -f $@.new || mv $@.new $@
$(BUILD)/lib/app/usage.o: $(BUILD)/gen/docdir.h
$(BUILD)/lib/app/usage.o: CPPFLAGS += -include $(BUILD)/gen/docdir.h

$(PROG): $(BUILD)/gpuipc_test.o $(HOST_OBJS) $(GPU_OBJS)
	$(CC) $(LDFLAGS) $(SHIM_LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# openpty (the progress tests) is in libutil before glibc 2.34.
$(TEST_NOGPU): $(TEST_NOGPU_OBJS) $(HOST_OBJS) | $(WRAP) $(PROMCHECK)
	$(CC) $(LDFLAGS) $(SHIM_LDFLAGS) -o $@ $(filter %.o,$^) $(CHECK_LIBS) $(LDLIBS) -lutil

$(TEST_GPU): $(TEST_GPU_OBJS) $(HOST_OBJS) | $(WRAP)
	$(CC) $(LDFLAGS) $(SHIM_LDFLAGS) -o $@ $(filter %.o,$^) $(CHECK_LIBS) $(LDLIBS)

# Holds result documents written on a GPU machine against the schema.
$(BUILD)/tests/doc_check: $(BUILD)/tests/doc_check.o $(BUILD)/tests/jschema.o \
		$(BUILD)/tests/th_files.o
	$(CC) $(LDFLAGS) -o $@ $^ -lm

$(GOLDEN_NORM): $(BUILD)/tests/golden_norm.o $(BUILD)/tests/jschema.o
	$(CC) $(LDFLAGS) -o $@ $^ -lm

$(WRAP): $(BUILD)/tests/wrap.o
	$(CC) $(LDFLAGS) -o $@ $^

$(PROMCHECK): $(BUILD)/tests/promcheck.o
	$(CC) $(LDFLAGS) -o $@ $^

# Shared objects of their own, with no sanitizer (an instrumented program
# loads them as it would the driver's).
$(BUILD)/tests/standin/libnvidia-ml.so.1: tests/standin/nvml.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -fPIC -shared -o $@ $<
$(BUILD)/tests/standin/libcuda.so.1: tests/standin/cuda.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -fPIC -shared -o $@ $<

# Only core, wire and launch: the launcher layer needs nothing else.
$(PMIX_PROBE): $(BUILD)/tests/pmix_probe.o $(filter $(BUILD)/lib/core/% $(BUILD)/lib/wire/% $(BUILD)/lib/launch/%,$(HOST_OBJS))
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(GPU_CHURN): $(BUILD)/tests/gpu_churn.o $(BUILD)/lib/gpu/cudrv.o $(BUILD)/lib/gpu/cutrack.o \
		$(HOST_OBJS)
	$(CC) $(LDFLAGS) $(SHIM_LDFLAGS) -o $@ $^ $(LDLIBS)

# The project's driver API declarations held against a toolkit's: the check
# is a translation unit of _Static_asserts (tests/cuda_check.c), so it passes
# by compiling, and a mismatch fails the build with the declaration's name.
# Where no toolkit is installed it is skipped, and says so.
CUDA_H := $(CUDA_HOME)/include/cuda.h
CUDA_CHECK := $(BUILD)/tests/cuda_check.o
ifneq ($(wildcard $(CUDA_H)),)
cuda-check: $(CUDA_CHECK)
	@echo "cuda-check: lib/gpu/cuda_api.h and cuda_pfn.h match $(CUDA_H)" \
		"(CUDA_VERSION $$(sed -n 's/^#define CUDA_VERSION //p' $(CUDA_H)))"

# -Werror always: two of its findings are warnings (a CUDAAPI that differs
# from cuda.h's, a type in cuda_pfn.h that no table entry uses), and a check
# that warns is no check. -isystem: the toolkit's headers are not ours to
# warn about.
$(CUDA_CHECK): tests/cuda_check.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -isystem $(CUDA_HOME)/include $(filter-out -Werror,$(CFLAGS)) -Werror \
		-c $< -o $@
else
cuda-check:
	@echo "cuda-check: skipped: no CUDA toolkit header at $(CUDA_H) (set CUDA_HOME to" \
		"check lib/gpu/cuda_api.h against one)"
endif

# The same for PMIx (tests/pmix_check.c): the project's declarations of
# the PMIx client API held against Debian's libpmix-dev headers (or those in
# PMIX_INCLUDE), skipped, saying so, where they are absent.
PMIX_INCLUDE ?= /usr/lib/x86_64-linux-gnu/pmix2/include
PMIX_CHECK := $(BUILD)/tests/pmix_check.o
PMIX_VERSION_H := $(PMIX_INCLUDE)/pmix_version.h
ifneq ($(wildcard $(PMIX_INCLUDE)/pmix.h),)
pmix-check: $(PMIX_CHECK)
	@echo "pmix-check: lib/launch/pmix_api.h and pmix_pfn.h match $(PMIX_INCLUDE)/pmix.h" \
		"(PMIx $$(sed -n -e 's/^#define PMIX_VERSION_MAJOR \([0-9]*\).*/\1/p' \
		-e 's/^#define PMIX_VERSION_MINOR \([0-9]*\).*/\1/p' $(PMIX_VERSION_H) | paste -sd .))"

$(PMIX_CHECK): tests/pmix_check.c lib/launch/pmix_api.h lib/launch/pmix_pfn.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -isystem $(PMIX_INCLUDE) $(filter-out -Werror,$(CFLAGS)) -Werror \
		-c $< -o $@
else
pmix-check:
	@echo "pmix-check: skipped: no PMIx header at $(PMIX_INCLUDE)/pmix.h (install" \
		"libpmix-dev, or set PMIX_INCLUDE, to check lib/launch/pmix_api.h against one)"
endif

# tests/check.sh runs the declarations' checks, the scripts, the no-GPU
# suites, lib/launch and --ranks under mpirun (tests/launch.sh,
# tests/ranks.sh, skipped, saying so, without mpirun), then the program
# itself, whose exit 77 (no GPU here) is counted as skipped, not as a pass.
# Every step runs; the last line counts the whole run: "make check: N
# passed, N failed, N skipped".
check: gpuipc_test $(TEST_NOGPU) $(PROMCHECK) $(PMIX_PROBE) $(GOLDEN_NORM) $(STANDIN)
	@MAKE='$(MAKE)' GPUIPC_STANDIN_DIR=$(BUILD)/tests/standin sh tests/check.sh $(BUILD) ./gpuipc_test

# Every include in lib/ goes to its own layer or one below (tests/layers.sh).
layers:
	@sh tests/layers.sh

check-gpu: gpuipc_test $(TEST_GPU) $(GPU_CHURN)
	GPUIPC_TEST_BIN=./gpuipc_test GPUIPC_CHURN_BIN=$(GPU_CHURN) $(TEST_GPU)
	GPUIPC_TEST_BIN=./gpuipc_test bash tests/gpu_causes.sh

# libFuzzer: the message decoder and its control-message path (clang only).
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SRC := tests/fuzz_wire.c lib/wire/wire.c lib/wire/msg.c lib/wire/encode.c lib/wire/decode.c \
	$(wildcard lib/core/*.c)
FUZZ := $(BUILD)/fuzz/fuzz_wire

fuzz: $(FUZZ)

$(FUZZ): $(FUZZ_SRC) $(wildcard lib/core/*.h lib/wire/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		$(CPPFLAGS) -o $@ $(FUZZ_SRC)

# The corpus grows in $(BUILD)/fuzz/corpus; the seeds stay in the repository.
fuzz-run: $(FUZZ)
	@mkdir -p $(BUILD)/fuzz/corpus
	$(FUZZ) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -timeout=5 \
		$(BUILD)/fuzz/corpus tests/corpus/wire

# The benchmark (needs a GPU): bench/results/<device>-<date>.json and .md.
# Order-only, so that a carried binary is used as it is on a machine
# without Check.
bench: | $(PROG)
	sh bench/run.sh ./$(PROG) bench/results $(BENCH_ARGS)

# Rewrites the seed corpus: one valid message of each type.
fuzz-seeds: $(BUILD)/tests/fuzz_seeds
	@mkdir -p tests/corpus/wire
	$(BUILD)/tests/fuzz_seeds tests/corpus/wire

$(BUILD)/tests/fuzz_seeds: $(BUILD)/tests/fuzz_seeds.o $(HOST_OBJS)
	$(CC) $(LDFLAGS) $(SHIM_LDFLAGS) -o $@ $^ $(LDLIBS)

# make install: the program, its manual page (gzipped, as distributions ship
# them), README.md, CHANGELOG.md, docs/ with the recipes and the result
# schema, the licence (deploy/copyright: this project's Apache-2.0 and the
# statically linked Check's LGPL-2.1), and bash completion. The binary is the
# release binary (make release) where it was built, else ./gpuipc_test.
# make uninstall removes exactly these files, then the documentation's own
# directories if they are empty; directories others share (bin, man1, the
# completions) stay, except under a DESTDIR, where the empty ones go. Run it
# from the tree that installed, with the same PREFIX: it computes the same
# list.
DOC_TOP := README.md CHANGELOG.md
DOC_DOCS := $(sort $(wildcard docs/*.md)) docs/result.schema.json
DOC_RECIPES := $(sort $(wildcard docs/recipes/*.sh))
# NHC's check file is read by NHC (sourced), not run: not executable.
DOC_RECIPES_READ := $(sort $(wildcard docs/recipes/*.nhc))
INSTALLED := $(BINDIR)/gpuipc_test $(MANDIR)/gpuipc_test.1.gz \
	$(BASHCOMPDIR)/gpuipc_test $(DOCDIR)/copyright \
	$(addprefix $(DOCDIR)/,$(DOC_TOP) $(DOC_DOCS) $(DOC_RECIPES) $(DOC_RECIPES_READ))
# Deepest first, for rmdir.
INSTALLED_DIRS := $(DOCDIR)/docs/recipes $(DOCDIR)/docs $(DOCDIR)

# The program is installed as it is: built only where it is missing, never
# remade (a PREFIX other than the build's would rewrite build/gen/docdir.h
# and relink the tested ./gpuipc_test; --help finds the documentation beside
# the installed program anyway).
INSTALL_NEEDS := $(if $(wildcard $(INSTALL_BIN)),,$(INSTALL_BIN))

install: $(INSTALL_NEEDS)
	@b=$(INSTALL_BIN); case $$b in */*) ;; *) b=./$$b ;; esac; \
	c=$$($$b --version | sed -n 's/.*(commit \([^,]*\),.*/\1/p'); \
	h=$$(git rev-parse --short=12 HEAD 2>/dev/null || true); \
	if [ -n "$$h" ] && [ "$${c%-dirty}" != "$$h" ] && [ "$(ALLOW_OTHER_COMMIT)" != 1 ]; then \
		echo "install: $(INSTALL_BIN) is of commit $${c:-unknown}, the tree is at $$h:" \
			"rebuild it (make release, or make), or set ALLOW_OTHER_COMMIT=1" >&2; \
		exit 1; \
	fi
	@echo "install: $(INSTALL_BIN) ($(if $(filter build-release/%,$(INSTALL_BIN)),the release \
	binary,the local build: make release first to install the one for glibc 2.28)) into \
	$(DESTDIR)$(PREFIX)"
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)$(BASHCOMPDIR) \
		$(DESTDIR)$(DOCDIR)/docs/recipes
	install -m 0755 $(INSTALL_BIN) $(DESTDIR)$(BINDIR)/gpuipc_test
	gzip -9n < docs/gpuipc_test.1 > $(DESTDIR)$(MANDIR)/gpuipc_test.1.gz
	chmod 0644 $(DESTDIR)$(MANDIR)/gpuipc_test.1.gz
	install -m 0644 deploy/gpuipc_test.bash $(DESTDIR)$(BASHCOMPDIR)/gpuipc_test
	install -m 0644 deploy/copyright $(DESTDIR)$(DOCDIR)/copyright
	install -m 0644 $(DOC_TOP) $(DESTDIR)$(DOCDIR)/
	install -m 0644 $(DOC_DOCS) $(DESTDIR)$(DOCDIR)/docs/
	install -m 0755 $(DOC_RECIPES) $(DESTDIR)$(DOCDIR)/docs/recipes/
	install -m 0644 $(DOC_RECIPES_READ) $(DESTDIR)$(DOCDIR)/docs/recipes/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	@for d in $(addprefix $(DESTDIR),$(INSTALLED_DIRS)); do \
		[ ! -d "$$d" ] || rmdir "$$d" 2>/dev/null || \
			echo "uninstall: $$d left: it holds files make install did not put there"; \
	done
	@# Under a DESTDIR (a staging tree) the directories install made are
	@# removed too where empty, up to DESTDIR; a real prefix keeps them.
	@if [ -n "$(DESTDIR)" ] && [ -d "$(DESTDIR)" ]; then \
		cd "$(DESTDIR)" && for d in $(patsubst /%,%,$(BINDIR) $(MANDIR) $(BASHCOMPDIR) \
			$(PREFIX)/share/doc); do \
			[ ! -d "$$d" ] || rmdir -p --ignore-fail-on-non-empty "$$d"; \
		done; \
	fi

# Packages of what make install puts under /usr (deploy/package.sh): the
# .deb by dpkg-deb, the .rpm by rpmbuild, into build-pkg/.
deb: $(INSTALL_NEEDS)
	sh deploy/package.sh deb $(INSTALL_BIN)

rpm: $(INSTALL_NEEDS)
	sh deploy/package.sh rpm $(INSTALL_BIN)

# The no-GPU suites and the program they drive, and lib/launch and --ranks
# under mpirun (tests/launch.sh, tests/ranks.sh), built with AddressSanitizer and UBSan into build-asan/:
# any report fails the run.
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0:malloc_context_size=30 \
	UBSAN_OPTIONS=print_stacktrace=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
asan:
	$(MAKE) BUILD=build-asan PROG=build-asan/gpuipc_test CFLAGS="-O1 -g" \
		SAN_CFLAGS="$(ASAN_FLAGS)" \
		SAN_LDFLAGS="-fsanitize=address,undefined -static-libasan -static-libubsan" \
		build-asan/gpuipc_test build-asan/tests/check_nogpu build-asan/tests/pmix_probe \
		build-asan/tests/standin/libnvidia-ml.so.1 build-asan/tests/standin/libcuda.so.1
	$(ASAN_ENV) GPUIPC_TEST_BIN=build-asan/gpuipc_test build-asan/tests/check_nogpu
	$(ASAN_ENV) sh tests/launch.sh build-asan/tests/pmix_probe
	$(ASAN_ENV) GPUIPC_STANDIN_DIR=build-asan/tests/standin sh tests/ranks.sh build-asan/gpuipc_test

# memcheck follows the suites' forked test processes; a definite or indirect
# leak or a memory error in one fails that test (exit 99). The programs the
# suites start run natively (make asan covers them): under valgrind their
# deadlines would be the test.
valgrind: $(PROG) $(TEST_NOGPU)
	GPUIPC_VALGRIND=1 GPUIPC_TEST_BIN=./$(PROG) valgrind -q --error-exitcode=99 \
		--leak-check=full --errors-for-leak-kinds=definite,indirect \
		--suppressions=tests/valgrind.supp $(TEST_NOGPU)

# The distributed binary: built from the committed tree in a Debian 11 root
# (.ci/release), checked to need no glibc symbol above 2.28.
release:
	bash .ci/release

clean:
	rm -rf $(BUILD) build-asan build-release build-pkg gpuipc_test

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
