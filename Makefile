# vrdma: a software RoCE v2 device behind a virtio-net (vhost-user) interface.
#
#   make            build into build/ (binaries build/bin, libraries build/lib)
#   make test       install what is missing, build plain + ASan/UBSan + fuzzers,
#                   run every test; the last line is "N passed, N failed, N skipped"
#   make demo       install what is missing, build, start a backend with two
#                   devices and run a program through them
#   make asan       the ASan+UBSan build in build/asan
#   make tsan       the daemon and test_trunk with ThreadSanitizer in build/tsan
#   make fuzz       libFuzzer targets in build/fuzz
#   make fuzz-soak  every fuzz target FUZZ_SECONDS (600) each, corpora merged back
#   make clean
#   make install    PREFIX=/usr/local DESTDIR= (see "Install" below); make uninstall
#   make deps       install the packages the build needs (scripts/deps.sh build)
#
# Sources are found by directory, so adding a file needs no edit here:
#   src/{common,vhost,virtio,port,roce,backend,libvrdma,cm,mgmt}/*.c -> build/lib/libvrdma-core.a
#   src/{common,vhost,virtio,libvrdma}/*.c                 -> build/lib/libvrdma.so
#   src/verbs/*.c + libvrdma objects                      -> build/lib/libibverbs.so.1
#   tools/NAME/*.c                                        -> build/bin/NAME
#   tests/tools/NAME/*.c (+ tests/common/*.c)            -> build/tests/bin/NAME (not installed)
#   src/verbs/*.c + tests/fake/*.c (the fake device)      -> build/tests/lib/libibverbs.so.1
#   tests/unit/test_*.c (+ tests/common/*.c)              -> build/tests/test_*
#   tests/verbs/NAME.c (against Debian's libibverbs)      -> build/tests/verbs/NAME
#   src/shmalloc/*.c                                      -> build/lib/libvrdma-shmalloc.so
#   src/devfiles/*.c                                      -> build/lib/libvrdma-devfiles.so
#   fuzz/fuzz_*.c (clang, libFuzzer)                      -> build/fuzz/fuzz_*

BUILD    ?= build
SANITIZE ?= 0
CC       ?= cc
ifeq ($(CC),cc)
CC := gcc
endif

CPPFLAGS += -Iinclude -Isrc -Itests -D_GNU_SOURCE
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -fPIC -pthread -MMD -MP
LDLIBS   += -lz -lisal -lpcap -lm -pthread
# Hardening (checked by tests/integration/hardening.sh with hardening-check).
CPPFLAGS += -D_FORTIFY_SOURCE=2
CFLAGS   += -fstack-protector-strong -fstack-clash-protection -fcf-protection
LDFLAGS  += -Wl,-z,relro,-z,now
EXE_LDFLAGS := -pie
$(BUILD)/bin/vhost-user-rdma: LDLIBS += -lseccomp -lxdp -lbpf

ifeq ($(SANITIZE),1)
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	   -fno-omit-frame-pointer -DVRDMA_SANITIZE=1
LDFLAGS += -fsanitize=address,undefined
endif

# ThreadSanitizer (make tsan): the daemon and the unit tests in build/tsan
ifeq ($(SANITIZE),thread)
CFLAGS  += -fsanitize=thread -fno-omit-frame-pointer -DVRDMA_SANITIZE=1 -Wno-tsan
LDFLAGS += -fsanitize=thread
endif

Q := @
ifeq ($(V),1)
Q :=
endif

CORE_DIRS   := src/common src/vhost src/virtio src/port src/roce src/backend src/libvrdma src/cm src/mgmt
DRIVER_DIRS := src/common src/vhost src/virtio src/libvrdma
CORE_SRCS   := $(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.c))
DRIVER_SRCS := $(foreach d,$(DRIVER_DIRS),$(wildcard $(d)/*.c))
VERBS_SRCS  := $(wildcard src/verbs/*.c)
RDMACM_SRCS := $(wildcard src/rdmacm/*.c) src/cm/cm_mad.c
TOOLS       := $(notdir $(wildcard tools/*))
TEST_TOOLS  := $(notdir $(wildcard tests/tools/*))
FAKE_SRCS   := $(wildcard tests/fake/*.c)
TEST_SRCS   := $(wildcard tests/unit/test_*.c)
VTEST_SRCS  := $(wildcard tests/verbs/*.c)
SHMALLOC_SRCS := $(wildcard src/shmalloc/*.c)
DEVFILES_SRCS := $(wildcard src/devfiles/*.c)
FAKE_DEVFILES_SRCS := $(wildcard tests/fake/devfiles/*.c)
TESTCOMMON_SRCS := $(wildcard tests/common/*.c)
FUZZ_SRCS   := $(wildcard fuzz/fuzz_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

CORE_LIB    := $(BUILD)/lib/libvrdma-core.a
DRIVER_SO   := $(BUILD)/lib/libvrdma.so
VERBS_SO    := $(BUILD)/lib/libibverbs.so.1
RDMACM_SO   := $(BUILD)/lib/librdmacm.so.1
TOOL_BINS   := $(addprefix $(BUILD)/bin/,$(TOOLS))
TEST_TOOL_BINS := $(addprefix $(BUILD)/tests/bin/,$(TEST_TOOLS))
FAKE_VERBS_SO := $(BUILD)/tests/lib/libibverbs.so.1
TEST_BINS   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
VTEST_BINS  := $(patsubst tests/verbs/%.c,$(BUILD)/tests/verbs/%,$(VTEST_SRCS))
SHMALLOC_SO := $(BUILD)/lib/libvrdma-shmalloc.so
DEVFILES_SO := $(BUILD)/lib/libvrdma-devfiles.so
FAKE_DEVFILES_SO := $(BUILD)/tests/lib/libvrdma-devfiles.so

ALL_TARGETS := $(CORE_LIB) $(DRIVER_SO) $(TOOL_BINS) $(TEST_TOOL_BINS) $(TEST_BINS) $(VTEST_BINS)
ifneq ($(SHMALLOC_SRCS),)
ALL_TARGETS += $(SHMALLOC_SO)
endif
ifneq ($(VERBS_SRCS),)
ALL_TARGETS += $(VERBS_SO) $(RDMACM_SO) $(FAKE_VERBS_SO)
endif
ifneq ($(DEVFILES_SRCS),)
ALL_TARGETS += $(DEVFILES_SO) $(FAKE_DEVFILES_SO)
endif

.PHONY: all build asan tsan fuzz fuzz-soak test demo clean deps deps-build deps-test deps-demo qemu \
	depcheck install uninstall
# Keep object files that pattern rules produce (else make deletes them as
# intermediates and rebuilds every tool each time).
.SECONDARY:
all: depcheck $(ALL_TARGETS)

# ---- missing build dependencies: say which and how to get them ----------------
# One probe per package of scripts/deps.sh's build set, before any compiler
# error about a missing header.
DEP_PROBES := zlib.h:zlib1g-dev isa-l.h:libisal-dev pcap/pcap.h:libpcap-dev \
	infiniband/verbs.h:libibverbs-dev xdp/xsk.h:libxdp-dev bpf/libbpf.h:libbpf-dev
depcheck:
	@missing=""; \
	command -v $(CC) >/dev/null 2>&1 || missing="$$missing gcc"; \
	for p in $(DEP_PROBES); do \
		h=$${p%%:*}; pkg=$${p#*:}; \
		echo "#include <$$h>" | $(CC) -E -x c - >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "vrdma: missing build dependencies:$$missing" >&2; \
		echo "vrdma: run: make deps   (or: sudo scripts/deps.sh build)" >&2; \
		exit 1; \
	fi
build: all

$(BUILD)/obj/%.o: %.c | depcheck
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(CORE_LIB): $(call obj,$(CORE_SRCS))
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(DRIVER_SO): $(call obj,$(DRIVER_SRCS)) src/libvrdma/libvrdma.map Makefile
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libvrdma.so.$(VRDMA_SOMAJOR) \
		-Wl,--version-script=src/libvrdma/libvrdma.map \
		-Wl,-z,defs $(LDFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)
	$(Q)ln -sf libvrdma.so $@.$(VRDMA_SOMAJOR)

$(VERBS_SO): $(call obj,$(VERBS_SRCS) $(DRIVER_SRCS)) src/verbs/libibverbs.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libibverbs.so.1 -Wl,--version-script=src/verbs/libibverbs.map \
		-Wl,-z,defs $(LDFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

# The same library with the fake device of VRDMA_FAKE_DEVICE (tests only).
$(FAKE_VERBS_SO): $(call obj,$(VERBS_SRCS) $(FAKE_SRCS) $(DRIVER_SRCS)) src/verbs/libibverbs.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libibverbs.so.1 -Wl,--version-script=src/verbs/libibverbs.map \
		-Wl,-z,defs $(LDFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

# librdmacm.so.1 (src/rdmacm + the CM wire codec) on top of our libibverbs.so.1.
$(RDMACM_SO): $(call obj,$(RDMACM_SRCS)) src/rdmacm/librdmacm.map $(VERBS_SO)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,librdmacm.so.1 -Wl,--version-script=src/rdmacm/librdmacm.map \
		-Wl,-z,defs $(LDFLAGS) $(filter %.o,$^) $(VERBS_SO) -o $@ $(LDLIBS)

.SECONDEXPANSION:
$(BUILD)/bin/%: $$(call obj,$$(wildcard tools/%/*.c)) $(CORE_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) $(EXE_LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/bin/%: $$(call obj,$$(wildcard tests/tools/%/*.c)) $(call obj,$(TESTCOMMON_SRCS)) $(CORE_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) $(EXE_LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(call obj,$(TESTCOMMON_SRCS)) $(CORE_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# Verbs-level test programs: plain libibverbs programs (built against
# Debian's headers and library, run through vrdma-run like any other).
$(BUILD)/tests/verbs/%: $(BUILD)/obj/tests/verbs/%.o
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -Wl,--as-needed -lrdmacm -libverbs -pthread

# The shared-heap allocator preloaded by vrdma-run (zero-copy registration).
$(SHMALLOC_SO): $(call obj,$(SHMALLOC_SRCS))
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libvrdma-shmalloc.so -Wl,-z,defs $(LDFLAGS) $^ -o $@ -ldl -pthread

# The device files of vrdma devices preloaded by vrdma-run (src/devfiles).
$(DEVFILES_SO): $(call obj,$(DEVFILES_SRCS))
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libvrdma-devfiles.so -Wl,-z,defs $(LDFLAGS) $^ -o $@ -ldl

# The same library serving the fake devices of VRDMA_FAKE_DEVICE too (tests only).
$(FAKE_DEVFILES_SO): $(call obj,$(DEVFILES_SRCS) $(FAKE_DEVFILES_SRCS))
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libvrdma-devfiles.so -Wl,-z,defs $(LDFLAGS) $^ -o $@ -ldl

asan:
	$(Q)$(MAKE) --no-print-directory BUILD=build/asan SANITIZE=1 all

# The daemon and the unit tests with ThreadSanitizer (--threads; programs
# under vrdma-run keep the plain libraries).
tsan:
	$(Q)$(MAKE) --no-print-directory BUILD=build/tsan SANITIZE=thread \
		build/tsan/bin/vhost-user-rdma build/tsan/tests/test_trunk

# libFuzzer targets: the library sources rebuilt with clang and coverage.
FUZZ_BUILD := build/fuzz
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined -Wall -Wextra -Werror -Wno-unused-command-line-argument \
	-Iinclude -Isrc -Itests -D_GNU_SOURCE -DVRDMA_FUZZING=1 -pthread
FUZZ_TARGETS := $(patsubst fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRCS))
# (the AF_XDP uplink needs libxdp, which only the daemon links)
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(filter-out src/port/afxdp.c,$(CORE_SRCS)))

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CLANG   $<"
	$(Q)clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/%: $(FUZZ_BUILD)/obj/fuzz/%.o $(FUZZ_LIB_OBJS)
	@echo "  LD      $@"
	$(Q)clang -fsanitize=fuzzer,address,undefined $^ -o $@ $(LDLIBS)

fuzz: $(FUZZ_TARGETS)

# Every fuzz target for FUZZ_SECONDS (600) each, corpora merged back
# (scripts/fuzz_soak.sh; not part of make test).
fuzz-soak: fuzz
	$(Q)scripts/fuzz_soak.sh

deps deps-build:
	$(Q)scripts/deps.sh build
deps-test:
	$(Q)scripts/deps.sh test
deps-demo:
	$(Q)scripts/deps.sh demo

test: deps-test
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory asan
	$(Q)$(MAKE) --no-print-directory fuzz
	$(Q)$(MAKE) --no-print-directory qemu
	$(Q)$(MAKE) --no-print-directory tsan
	$(Q)tests/run.sh --flavour build --flavour build/asan --tsan build/tsan --fuzz $(FUZZ_BUILD)

# QEMU 10 with the vhost-user device for guest_vm.sh and guest_pair.sh: built once (about 11
# minutes on 2 cores), cached in /var/cache/vrdma keyed by version and patch.
qemu:
	$(Q)echo "  QEMU    scripts/qemu-build.sh (cached after the first build)"
	$(Q)scripts/qemu-build.sh >/dev/null || echo "  QEMU    build failed (guest_vm.sh reports it)"

demo: deps-demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh

clean:
	rm -rf build

# ---- Install (make install PREFIX=/usr DESTDIR=/tmp/stage) ---------------------
# The daemon goes to sbin, the tools to bin, libvrdma (soname libvrdma.so.1)
# with its headers and vrdma.pc to the usual places. The drop-in
# libibverbs.so.1 (and librdmacm.so.1 when built), the allocator and the
# device files library go to a private PKGLIBDIR, never on the loader's
# path: vrdma-run finds them in ../lib/vrdma next to itself.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
LIBDIR     ?= $(PREFIX)/lib
PKGLIBDIR  := $(LIBDIR)/vrdma
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR    ?= $(LIBDIR)/systemd/system
VRDMA_VERSION := 1.0.0
VRDMA_SOMAJOR := 1
INSTALL_SBIN  := vhost-user-rdma
INSTALL_BIN   := vrdma-run vrdmactl vrdma-netcat
DROPIN_LIBS   := libibverbs.so.1 librdmacm.so.1
PRELOAD_LIBS  := libvrdma-shmalloc.so libvrdma-devfiles.so
MAN_PAGES     := $(wildcard man/*.[1-8])

# NO_BUILD=1 installs what $(BUILD) holds without building (tests).
install: $(if $(NO_BUILD),,all)
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(INCLUDEDIR)/vrdma $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSCONFDIR)/vrdma
	install -m 755 $(addprefix $(BUILD)/bin/,$(INSTALL_SBIN)) $(DESTDIR)$(SBINDIR)/
	install -m 755 $(addprefix $(BUILD)/bin/,$(INSTALL_BIN)) $(DESTDIR)$(BINDIR)/
	install -m 755 $(DRIVER_SO) $(DESTDIR)$(LIBDIR)/libvrdma.so.$(VRDMA_VERSION)
	ln -sf libvrdma.so.$(VRDMA_VERSION) $(DESTDIR)$(LIBDIR)/libvrdma.so.$(VRDMA_SOMAJOR)
	ln -sf libvrdma.so.$(VRDMA_SOMAJOR) $(DESTDIR)$(LIBDIR)/libvrdma.so
	install -m 644 include/vrdma/*.h $(DESTDIR)$(INCLUDEDIR)/vrdma/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VRDMA_VERSION)|' dist/vrdma.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/vrdma.pc
	for l in $(DROPIN_LIBS) $(PRELOAD_LIBS); do \
		[ ! -e $(BUILD)/lib/$$l ] || install -m 755 $(BUILD)/lib/$$l $(DESTDIR)$(PKGLIBDIR)/ || exit 1; \
	done
	for m in $(MAN_PAGES); do \
		s=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s && \
		install -m 644 $$m $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; \
	done
	sed -e 's|@SBINDIR@|$(SBINDIR)|; s|@SYSCONFDIR@|$(SYSCONFDIR)|' \
		dist/vhost-user-rdma.service.in >$(DESTDIR)$(UNITDIR)/vhost-user-rdma.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/vrdma/vrdma.conf ] || \
		install -m 644 dist/vrdma.conf $(DESTDIR)$(SYSCONFDIR)/vrdma/vrdma.conf

uninstall:
	rm -f $(addprefix $(DESTDIR)$(SBINDIR)/,$(INSTALL_SBIN)) \
		$(addprefix $(DESTDIR)$(BINDIR)/,$(INSTALL_BIN)) \
		$(DESTDIR)$(LIBDIR)/libvrdma.so.$(VRDMA_VERSION) \
		$(DESTDIR)$(LIBDIR)/libvrdma.so.$(VRDMA_SOMAJOR) $(DESTDIR)$(LIBDIR)/libvrdma.so \
		$(DESTDIR)$(LIBDIR)/pkgconfig/vrdma.pc \
		$(addprefix $(DESTDIR)$(PKGLIBDIR)/,$(DROPIN_LIBS) $(PRELOAD_LIBS)) \
		$(addprefix $(DESTDIR)$(INCLUDEDIR)/vrdma/,$(notdir $(wildcard include/vrdma/*.h))) \
		$(DESTDIR)$(UNITDIR)/vhost-user-rdma.service
	for m in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/}; done
	# The config file stays if it was edited.
	! cmp -s dist/vrdma.conf $(DESTDIR)$(SYSCONFDIR)/vrdma/vrdma.conf || \
		rm -f $(DESTDIR)$(SYSCONFDIR)/vrdma/vrdma.conf
	-rmdir $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(INCLUDEDIR)/vrdma $(DESTDIR)$(SYSCONFDIR)/vrdma \
		2>/dev/null

-include $(shell find $(BUILD)/obj $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)
