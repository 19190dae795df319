# Makefile - the one, non-recursive build of weft.
#
#   make            build weftd, weft-cli, weft-sim and the tests (build/)
#   make SAN=1      the same with ASan + UBSan, in build-san/
#   make check      build, check the layering, run every TAP test with prove
#   make testnet    start a local 4-node committee under testnet/ (make testnet-stop,
#                   make testnet-clean)
#   make run        start one node (n = 1) in ./weft-data; make stop ends it
#   make campaign-brb  the BRB scenario suite with 10,000 seeds per case
#   make deps       install missing Debian packages (every target needs them)
#
# Sources are found by directory: src/lib, storage, net and protocols form
# libweft.a; each program directory (src/daemon, src/cli, src/sim) has a
# main.c and its other files form a library the tests can link.

.DEFAULT_GOAL := all
SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build-san
CC := clang
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else
BUILD ?= build
SANFLAGS :=
endif

PKGS := libevent libsodium lmdb libsecp256k1 msgpack libisal jansson inih
# Evaluated once, on first use, so that `make deps` can run before pkg-config.
PKG_CFLAGS = $(eval PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS)))$(PKG_CFLAGS)
PKG_LIBS = $(eval PKG_LIBS := $(shell pkg-config --libs $(PKGS)))$(PKG_LIBS)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SANFLAGS) -Iinclude -MMD -MP $(PKG_CFLAGS)
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)
LIBS = $(PKG_LIBS) -lm -lpthread

LIB_SRC := $(wildcard src/lib/*.c storage/*.c net/*.c protocols/*.c protocols/*/*.c)
PROGRAMS := weftd:src/daemon weft-cli:src/cli weft-sim:src/sim
TESTLIB_SRC := $(wildcard tests/lib/*.c)
TEST_SRC := $(wildcard tests/unit/*.c tests/integration/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
prog_dir = $(word 2,$(subst :, ,$(1)))
prog_name = $(word 1,$(subst :, ,$(1)))

LIBWEFT := $(BUILD)/libweft.a
TESTLIB := $(BUILD)/libwefttest.a
BINS :=
PROG_LIBS :=

# `make V=1` shows full commands.
ifeq ($(V),1)
say =
else
say = @printf '  %-5s %s\n' $(1) $(2);
endif

# One block per program: bin/NAME from DIR/main.c plus DIR's library.
define program_rules
$(1)_SRC := $$(filter-out $(2)/main.c,$$(wildcard $(2)/*.c))
ifneq ($$(wildcard $(2)/main.c),)
BINS += $(BUILD)/bin/$(1)
PROG_LIBS += $(BUILD)/lib$(1).a
$(BUILD)/lib$(1).a: $$(call obj,$$($(1)_SRC))
	@mkdir -p $$(@D)
	$$(call say,AR,$$@)rm -f $$@ && ar rcs $$@ $$^
$(BUILD)/bin/$(1): $$(call obj,$(2)/main.c) $(BUILD)/lib$(1).a $(LIBWEFT)
	@mkdir -p $$(@D)
	$$(call say,LINK,$$@)$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$(LIBS)
endif
endef
$(foreach p,$(PROGRAMS),$(eval $(call program_rules,$(call prog_name,$(p)),$(call prog_dir,$(p)))))

TESTS := $(patsubst %.c,$(BUILD)/%.t,$(TEST_SRC))

.PHONY: all deps check check-layers run stop clean tla fuzz testnet testnet-stop testnet-clean campaign-brb
all: $(BINS) $(TESTS)

deps:
	@sh tools/deps.sh

$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIBWEFT): $(call obj,$(LIB_SRC))
	@mkdir -p $(@D)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^

$(TESTLIB): $(call obj,$(TESTLIB_SRC))
	@mkdir -p $(@D)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/%.t: $(BUILD)/obj/tests/%.o $(TESTLIB) $(PROG_LIBS) $(LIBWEFT)
	@mkdir -p $(@D)
	$(call say,LINK,$@)$(CC) $(ALL_LDFLAGS) -o $@ $< $(TESTLIB) $(PROG_LIBS) $(LIBWEFT) $(LIBS)

# Integration tests find the programs and the source tree through these.
TEST_ENV = WEFT_BIN=$(abspath $(BUILD)/bin) WEFT_SRC=$(CURDIR)

check: all check-layers
	$(TEST_ENV) prove -e '' -j2 $(TESTS)

check-layers:
	@sh tools/check-layers.sh

testnet: all
	@sh tools/testnet.sh start

testnet-stop:
	@sh tools/testnet.sh stop

testnet-clean:
	@sh tools/testnet.sh clean

run: all
	@sh tools/run-node.sh start

stop:
	@sh tools/run-node.sh stop

# The BRB scenario suite with 10,000 seeds per case instead of 100.
campaign-brb: all
	$(TEST_ENV) WEFT_BRB_SEEDS=10000 prove -e '' -j2 $(BUILD)/tests/integration/brb_matrix_*.t

tla:
	@sh tla/run-tlc.sh

# libFuzzer targets (clang): build/fuzz/NAME; run e.g. build/fuzz/mp -max_total_time=60
FUZZ_SRC := $(wildcard tests/fuzz/*.c)
FUZZERS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
fuzz: $(FUZZERS)
$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIB_SRC) | deps
	@mkdir -p $(@D)
	$(call say,FUZZ,$@)clang -std=c11 -D_GNU_SOURCE -g -O1 -Iinclude -fsanitize=fuzzer,address,undefined \
		-o $@ $< $(LIB_SRC) $(LIBS)

clean:
	rm -rf build build-san

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
.SECONDARY:
