# vrdma: a software RoCE v2 device behind a virtio-net (vhost-user) interface.
#
#   make            build into build/ (binaries build/bin, libraries build/lib)
#   make test       install what is missing, build plain + ASan/UBSan + fuzzers,
#                   run every test; the last line is "N passed, N failed, N skipped"
#   make demo       install what is missing, build, start a backend with two
#                   devices and run a program through them
#   make asan       the ASan+UBSan build in build/asan
#   make fuzz       libFuzzer targets in build/fuzz
#   make clean
#
# Sources are found by directory, so adding a file needs no edit here:
#   src/{common,vhost,virtio,port,roce,device,driver}/*.c -> build/lib/libvrdma-core.a
#   src/{common,vhost,virtio,driver}/*.c                   -> build/lib/libvrdma.so
#   src/verbs/*.c + libvrdma objects                      -> build/lib/libibverbs.so.1
#   tools/NAME/*.c                                        -> build/bin/NAME
#   tests/unit/test_*.c (+ tests/common/*.c)              -> build/tests/test_*
#   tests/verbs/NAME.c (against Debian's libibverbs)      -> build/tests/verbs/NAME
#   src/shmalloc/*.c                                      -> build/lib/libvrdma-shmalloc.so
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
LDLIBS   += -lz -lisal -lpcap -pthread
# Hardening (checked by tests/integration/hardening.sh with hardening-check).
CPPFLAGS += -D_FORTIFY_SOURCE=2
CFLAGS   += -fstack-protector-strong -fstack-clash-protection -fcf-protection
LDFLAGS  += -Wl,-z,relro,-z,now
EXE_LDFLAGS := -pie
$(BUILD)/bin/vhost-user-rdma: LDLIBS += -lseccomp

ifeq ($(SANITIZE),1)
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	   -fno-omit-frame-pointer -DVRDMA_SANITIZE=1
LDFLAGS += -fsanitize=address,undefined
endif

Q := @
ifeq ($(V),1)
Q :=
endif

CORE_DIRS   := src/common src/vhost src/virtio src/port src/roce src/device src/driver
DRIVER_DIRS := src/common src/vhost src/virtio src/driver
CORE_SRCS   := $(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.c))
DRIVER_SRCS := $(foreach d,$(DRIVER_DIRS),$(wildcard $(d)/*.c))
VERBS_SRCS  := $(wildcard src/verbs/*.c)
TOOLS       := $(notdir $(wildcard tools/*))
TEST_SRCS   := $(wildcard tests/unit/test_*.c)
VTEST_SRCS  := $(wildcard tests/verbs/*.c)
SHMALLOC_SRCS := $(wildcard src/shmalloc/*.c)
TESTCOMMON_SRCS := $(wildcard tests/common/*.c)
FUZZ_SRCS   := $(wildcard fuzz/fuzz_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

CORE_LIB    := $(BUILD)/lib/libvrdma-core.a
DRIVER_SO   := $(BUILD)/lib/libvrdma.so
VERBS_SO    := $(BUILD)/lib/libibverbs.so.1
TOOL_BINS   := $(addprefix $(BUILD)/bin/,$(TOOLS))
TEST_BINS   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
VTEST_BINS  := $(patsubst tests/verbs/%.c,$(BUILD)/tests/verbs/%,$(VTEST_SRCS))
SHMALLOC_SO := $(BUILD)/lib/libvrdma-shmalloc.so

ALL_TARGETS := $(CORE_LIB) $(DRIVER_SO) $(TOOL_BINS) $(TEST_BINS) $(VTEST_BINS)
ifneq ($(SHMALLOC_SRCS),)
ALL_TARGETS += $(SHMALLOC_SO)
endif
ifneq ($(VERBS_SRCS),)
ALL_TARGETS += $(VERBS_SO)
endif

.PHONY: all build asan fuzz test demo clean deps-build deps-test deps-demo
# Keep object files that pattern rules produce (else make deletes them as
# intermediates and rebuilds every tool each time).
.SECONDARY:
all: $(ALL_TARGETS)
build: all

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(CORE_LIB): $(call obj,$(CORE_SRCS))
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(DRIVER_SO): $(call obj,$(DRIVER_SRCS)) src/driver/libvrdma.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libvrdma.so -Wl,--version-script=src/driver/libvrdma.map \
		-Wl,-z,defs $(LDFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

$(VERBS_SO): $(call obj,$(VERBS_SRCS) $(DRIVER_SRCS)) src/verbs/libibverbs.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libibverbs.so.1 -Wl,--version-script=src/verbs/libibverbs.map \
		-Wl,-z,defs $(LDFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

.SECONDEXPANSION:
$(BUILD)/bin/%: $$(call obj,$$(wildcard tools/%/*.c)) $(CORE_LIB)
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
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -libverbs -pthread

# The shared-heap allocator preloaded by vrdma-run (zero-copy registration).
$(SHMALLOC_SO): $(call obj,$(SHMALLOC_SRCS))
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libvrdma-shmalloc.so -Wl,-z,defs $(LDFLAGS) $^ -o $@ -ldl -pthread

asan:
	$(Q)$(MAKE) --no-print-directory BUILD=build/asan SANITIZE=1 all

# libFuzzer targets: the library sources rebuilt with clang and coverage.
FUZZ_BUILD := build/fuzz
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined -Wall -Wextra -Werror -Wno-unused-command-line-argument \
	-Iinclude -Isrc -Itests -D_GNU_SOURCE -DVRDMA_FUZZING=1 -pthread
FUZZ_TARGETS := $(patsubst fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRCS))
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(CORE_SRCS))

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CLANG   $<"
	$(Q)clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/%: $(FUZZ_BUILD)/obj/fuzz/%.o $(FUZZ_LIB_OBJS)
	@echo "  LD      $@"
	$(Q)clang -fsanitize=fuzzer,address,undefined $^ -o $@ $(LDLIBS)

fuzz: $(FUZZ_TARGETS)

deps-build:
	$(Q)scripts/deps.sh build
deps-test:
	$(Q)scripts/deps.sh test
deps-demo:
	$(Q)scripts/deps.sh demo

test: deps-test
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory asan
	$(Q)$(MAKE) --no-print-directory fuzz
	$(Q)tests/run.sh --flavour build --flavour build/asan --fuzz $(FUZZ_BUILD)

demo: deps-demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)
