# Makefile - the one, non-recursive build of weft.
#
#   make            build weftd, weft-cli, weft-sim and the tests (build/)
#   make SAN=1      the same with ASan + UBSan, in build-san/
#   make check      build, check the layering, run every TAP test with prove
#   make testnet    start a local 4-node committee under testnet/ (make testnet-stop,
#                   make testnet-clean)
#   make run        start one node (n = 1) in ./weft-data; make stop ends it
#   make campaign-brb  the BRB scenario suite with 10,000 seeds per case
#   make campaign-sim  every tests/sim scenario over its full seed range
#   make docker-image  the image weft:local from the built binaries (docs/docker.md)
#   make docker-testnet  4 nodes in containers under docker-testnet/ (make docker-testnet-stop)
#   make campaign MANIFEST=F  a fault-injection campaign on a docker testnet (docs/campaigns.md);
#                   make campaign-random SEED= COUNT= NODES= DURATION=, make campaign-report
#   make deps       install missing Debian packages (every target needs them)
#
# Sources are found by directory: src/lib, storage, net and protocols form
# libweft.a; each program directory (src/daemon, src/cli, src/sim,
# src/campaign) has a main.c and its other files form a library the tests
# can link.

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
PROGRAMS := weftd:src/daemon weft-cli:src/cli weft-sim:src/sim weft-campaign:src/campaign weft-service:src/service
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

.PHONY: all deps check check-layers run stop clean tla fuzz testnet testnet-stop testnet-clean campaign-brb campaign-sim docker-image docker-testnet docker-testnet-stop campaign campaign-random campaign-report
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

# make check runs a representative slice of the seed matrices (every case,
# fewer seeds); the campaign-* targets run them in full.
NPROC := $(shell nproc 2>/dev/null || echo 2)
CHECK_BRB_SEEDS ?= 10
CHECK_SIM_SEEDS ?= 5
check: all check-layers
	$(TEST_ENV) WEFT_BRB_SEEDS=$${WEFT_BRB_SEEDS:-$(CHECK_BRB_SEEDS)} WEFT_SIM_SEEDS=$${WEFT_SIM_SEEDS-$(CHECK_SIM_SEEDS)} \
		prove -e '' -j$(NPROC) $(TESTS)

check-layers:
	@sh tools/check-layers.sh

testnet: all
	@sh tools/testnet.sh start

testnet-stop:
	@sh tools/testnet.sh stop

testnet-clean:
	@sh tools/testnet.sh clean

# ---- Docker testnets (docs/docker.md) ----
#   make docker-image         the image weft:local (WEFT_IMAGE), FROM scratch
#                             out of build/bin: nothing is pulled
#   make docker-testnet       DOCKER_NODES containers (default 4) under
#                             docker-testnet/, generated the first time
#   make docker-testnet-stop  remove its containers, network and volumes, and
#                             any other leftovers labelled org.weft.testnet
DOCKER_NODES ?= 4
DOCKER_TESTNET_DIR := docker-testnet
docker-image: all
	@sh docker/build-image.sh

docker-testnet: docker-image
	@if [ ! -f $(DOCKER_TESTNET_DIR)/testnet.env ]; then \
		sh tools/docker-testnet.sh gen --dir $(DOCKER_TESTNET_DIR) --nodes $(DOCKER_NODES) --image $${WEFT_IMAGE:-weft:local}; \
	elif [ "$(origin DOCKER_NODES)" != file ] && ! grep -qx 'N=$(DOCKER_NODES)' $(DOCKER_TESTNET_DIR)/testnet.env; then \
		echo "docker-testnet: $(DOCKER_TESTNET_DIR) holds another number of nodes; make docker-testnet-stop, rm -rf $(DOCKER_TESTNET_DIR), then again" >&2; \
		exit 1; \
	fi
	@sh tools/docker-testnet.sh up --dir $(DOCKER_TESTNET_DIR)

docker-testnet-stop:
	@sh tools/docker-testnet.sh down --dir $(DOCKER_TESTNET_DIR)
	@sh tools/docker-testnet.sh clean

run: all
	@sh tools/run-node.sh start

stop:
	@sh tools/run-node.sh stop

# The BRB scenario suite with 10,000 seeds per case instead of 100.
campaign-brb: all
	$(TEST_ENV) WEFT_BRB_SEEDS=10000 prove -e '' -j$(NPROC) $(BUILD)/tests/integration/brb_matrix_*.t

campaign-sim: all
	$(TEST_ENV) WEFT_SIM_SEEDS= prove -v -e '' $(BUILD)/tests/integration/sim_suite.t

# ---- fault-injection campaigns on docker testnets (docs/campaigns.md) ----
#   make campaign MANIFEST=tests/campaign/kill-partition.json
#                          one campaign, into build/campaigns/NAME
#   make campaign-random SEED=1 COUNT=10 NODES=4 DURATION=120
#                          COUNT campaigns drawn from SEED, run in a row
#   make campaign-report   the results section of docs/campaigns.md and its
#                          charts (docs/campaigns/) from CAMPAIGN_DIRS (every
#                          campaign under build/campaigns)
MANIFEST ?= tests/campaign/ci-short.json
SEED ?= 1
COUNT ?= 10
NODES ?= 4
DURATION ?= 120
CAMPAIGN_DIRS ?= $(sort $(dir $(wildcard build/campaigns/*/result.json build/campaigns/*/*/result.json)))
campaign: all docker-image
	$(BUILD)/bin/weft-campaign run $(MANIFEST)

campaign-random: all docker-image
	$(BUILD)/bin/weft-campaign random --seed $(SEED) --count $(COUNT) --nodes $(NODES) --duration-s $(DURATION)

campaign-report: all
	$(BUILD)/bin/weft-campaign report --into docs/campaigns.md --images docs/campaigns $(CAMPAIGN_DIRS)

# The trace checks of models.txt run weft-sim and weftd: build them when
# there is a TLC to check with (without one the runner says "skipped").
tla:
	@if [ -n "$$TLA2TOOLS_JAR" ] || command -v tlc >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(BUILD)/bin/weft-sim $(BUILD)/bin/weftd $(BUILD)/bin/weft-cli || exit 1; fi
	@sh tla/run-tlc.sh

# ---- fuzzing: libFuzzer targets, one per decoder (tests/fuzz/README) ----
#   make fuzz-build   build every tests/fuzz/NAME.c as $(BUILD)/fuzz/NAME
#   make fuzz         build, then run each target for FUZZ_SECONDS (make -j2
#                     runs two at a time) on $(BUILD)/fuzz/corpus-NAME, a
#                     working copy seeded from tests/fuzz/corpus/NAME (the
#                     tree is never written), after its regression inputs
#                     tests/fuzz/regress/NAME-*; prints per target the
#                     executions and coverage, and fails when any target
#                     crashes, leaks or times out, leaving the reproducer in
#                     $(BUILD)/fuzz/NAME-crash-* (or leak-, timeout-, oom-)
#                     and the log in $(BUILD)/fuzz/NAME.log
#   make fuzz-NAME    the same for one target
#   make fuzz-seeds   rewrite tests/fuzz/corpus/ with the targets' seed writers
# Library objects are built once with coverage instrumentation into
# $(BUILD)/fuzz/libweft-fuzz.a: libweft's sources, the program libraries of
# FUZZ_PROG_DIRS (without main.c), tests/lib and tests/fuzz/lib.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_PROG_DIRS ?= src/sim
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -g -O1 $(FUZZ_SAN) -Iinclude -MMD -MP $(PKG_CFLAGS)
FUZZ_SRC := $(wildcard tests/fuzz/*.c)
FUZZ_NAMES := $(patsubst tests/fuzz/%.c,%,$(FUZZ_SRC))
FUZZERS := $(addprefix $(FUZZ_DIR)/,$(FUZZ_NAMES))
FUZZ_LIB_SRC := $(LIB_SRC) $(foreach d,$(FUZZ_PROG_DIRS),$(filter-out $(d)/main.c,$(wildcard $(d)/*.c))) \
	$(TESTLIB_SRC) $(wildcard tests/fuzz/lib/*.c)
FUZZ_LIB := $(FUZZ_DIR)/libweft-fuzz.a
fuzzobj = $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(1))

.PHONY: fuzz-build fuzz-seeds $(addprefix fuzz-,$(FUZZ_NAMES))
fuzz-build: $(FUZZERS)

fuzz: $(addprefix fuzz-,$(FUZZ_NAMES))
	@sh tests/fuzz/run.sh summary $(FUZZ_DIR) $(FUZZ_NAMES)

$(addprefix fuzz-,$(FUZZ_NAMES)): fuzz-%: $(FUZZ_DIR)/%
	@sh tests/fuzz/run.sh run $(FUZZ_DIR) $* $(FUZZ_SECONDS)

fuzz-seeds: $(FUZZERS)
	@sh tests/fuzz/run.sh seeds $(FUZZ_DIR) $(FUZZ_NAMES)

$(FUZZ_DIR)/obj/tests/fuzz/%.o: tests/fuzz/%.c | deps
	@mkdir -p $(@D)
	$(call say,CC,$<)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -c -o $@ $<

$(FUZZ_DIR)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	$(call say,CC,$<)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_LIB): $(call fuzzobj,$(FUZZ_LIB_SRC))
	@mkdir -p $(@D)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^

$(FUZZERS): $(FUZZ_DIR)/%: $(FUZZ_DIR)/obj/tests/fuzz/%.o $(FUZZ_LIB)
	$(call say,LINK,$@)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $(LDFLAGS) -o $@ $< $(FUZZ_LIB) $(LIBS)

-include $(shell find $(FUZZ_DIR)/obj -name '*.d' 2>/dev/null)

clean:
	rm -rf build build-san

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
.SECONDARY:
