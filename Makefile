# Gregor - one non-recursive GNU Makefile.
#   make run     deps + build + start the broker with config/server.properties
#   make run-cluster  ZooKeeper + three brokers (config/cluster/), data in ./data-cluster
#   make test    deps + build + unit and integration tests
#   make SANITIZE=1 ...   build with AddressSanitizer + UBSan (separate build dir)

CC      ?= gcc
PYTHON  ?= /usr/bin/python3
OPT     ?= -O2
BUILD   ?= build
CFLAGS  := -std=gnu11 $(OPT) -g -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc -I$(BUILD)/gen
DEPFLAGS := -MMD -MP
LDLIBS  := -lisal -lsnappy -llz4 -lzstd -lzookeeper_mt -ljansson -lmicrohttpd -lssl -lcrypto -lpthread

ifeq ($(SANITIZE),1)
BUILD   := build-san
CFLAGS  := -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc -I$(BUILD)/gen \
           -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

GEN_H    := $(BUILD)/gen/proto_msgs.h
GEN_C    := $(BUILD)/gen/proto_msgs.c
SCHEMAS  := $(wildcard src/proto/schema/*.api)

LIB_SRC  := $(filter-out src/broker/main.c,$(wildcard src/util/*.c src/proto/*.c src/net/*.c src/sec/*.c src/log/*.c src/cluster/*.c src/coord/*.c src/broker/*.c src/ops/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/proto_msgs.o $(BUILD)/obj/gen/web_assets.o
# the web console's files, built into the broker (src/ops/web_assets.h)
WEB_FILES := $(wildcard web/*.html web/*.js web/*.css)
BROKER   := $(BUILD)/bin/gregor

TOOL_LIB_SRC := $(wildcard tools/lib/*.c)
TOOL_LIB_OBJ := $(TOOL_LIB_SRC:%.c=$(BUILD)/obj/%.o)
# tools/lib/wire.c encodes and decodes with the broker's generated codecs
TOOL_LIB_OBJ += $(addprefix $(BUILD)/obj/src/,util/arena.o util/buf.o util/fdref.o proto/header.o) $(BUILD)/obj/gen/proto_msgs.o
# tools/lib/login.c: the SCRAM client side is the broker's (src/sec/scram.c)
TOOL_LIB_OBJ += $(BUILD)/obj/src/sec/scram.o
TOOL_SRC := $(wildcard tools/*.c)
TOOLS    := $(TOOL_SRC:tools/%.c=$(BUILD)/bin/%)
EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLES := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/bin/%)
ITEST_C_SRC := $(wildcard tests/integration/*.c)
ITEST_C  := $(ITEST_C_SRC:tests/integration/%.c=$(BUILD)/bin/itest/%)

# Go client test programs (sarama, kafka-go from Debian): GOPATH mode, build
# and module caches under $(BUILD) so a fresh checkout or root in CI needs no $HOME
GO_TEST_SRC := $(wildcard tests/go/*/main.go)
GO_TESTS := $(GO_TEST_SRC:tests/go/%/main.go=$(BUILD)/bin/go/%)
GO_ENV   = GO111MODULE=off GOFLAGS= GOPATH=$(abspath $(BUILD))/gopath:/usr/share/gocode \
	   GOCACHE=$(abspath $(BUILD))/gocache CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"

# LD_PRELOAD shims of the durability and crash-safety tests, never sanitized
# (tests/lib/syncshim.c)
SYNCSHIM := $(BUILD)/lib/syncshim.so

UNIT_SRC := $(wildcard tests/unit/*/test_*.c)
UNITS    := $(patsubst tests/unit/%.c,$(BUILD)/bin/unit/%,$(UNIT_SRC))

.PHONY: all deps run run-cluster test unit integration clean style install bench fuzz fuzz-smoke sanitize-smoke go-tests test-powercut
.SECONDARY:
all: $(BROKER) $(TOOLS) $(EXAMPLES) $(ITEST_C) $(UNITS) $(SYNCSHIM)

deps:
	@sh mk/deps.sh

$(GEN_H) $(GEN_C) &: src/proto/gen.py $(SCHEMAS)
	@mkdir -p $(BUILD)/gen
	$(PYTHON) src/proto/gen.py src/proto/schema $(BUILD)/gen

$(BUILD)/obj/gen/proto_msgs.o: $(GEN_C) $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/gen/web_assets.c: mk/embed.py $(WEB_FILES)
	@mkdir -p $(BUILD)/gen
	$(PYTHON) mk/embed.py $@ $(WEB_FILES)

$(BUILD)/obj/gen/web_assets.o: $(BUILD)/gen/web_assets.c src/ops/web_assets.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.c | $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BROKER): $(BUILD)/obj/src/broker/main.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bin/unit/%: tests/unit/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(LIB_OBJ) -o $@ $(LDLIBS) -lcmocka

$(BUILD)/bin/%: tools/%.c $(TOOL_LIB_OBJ) | $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools $(LDFLAGS) $< $(TOOL_LIB_OBJ) -o $@ -lrdkafka -ljansson -lssl -lcrypto -lpthread -lm

$(BUILD)/bin/%: examples/%.c $(TOOL_LIB_OBJ) | $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools $(LDFLAGS) $< $(TOOL_LIB_OBJ) -o $@ -lrdkafka -lsqlite3 -lssl -lcrypto -lpthread -lm

$(BUILD)/bin/itest/%: tests/integration/%.c $(TOOL_LIB_OBJ) | $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools $(LDFLAGS) $< $(TOOL_LIB_OBJ) -o $@ -lrdkafka -lssl -lcrypto -lpthread -lm

$(BUILD)/bin/go/%: tests/go/%/main.go
	@mkdir -p $(dir $@) $(BUILD)/gopath
	$(GO_ENV) go build -o $@ $<

go-tests: $(GO_TESTS)

$(SYNCSHIM): tests/lib/syncshim.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -shared -fPIC $< -o $@ -ldl

run: deps $(BROKER)
	@mkdir -p data
	$(BROKER) config/server.properties

# ZooKeeper + three brokers on 127.0.0.1:9092-9094, data in ./data-cluster (docs/cluster.md)
run-cluster: deps $(BROKER)
	@bash mk/run-cluster.sh $(BROKER)

unit: $(UNITS)
	@sh mk/run-unit.sh $(UNITS)

# Tests run two at a time (each has its own broker, port and data dir);
# ITEST_JOBS=1 runs them one by one.
ITEST_JOBS ?= 2
integration: all
	@BUILD=$(BUILD) ITEST_JOBS=$(ITEST_JOBS) sh tests/integration/run.sh

# Power cuts on a loop-device ext4 (root; exits 77 without loop devices).
# Also part of make integration as 9030-powercut.py.
test-powercut: all
	@BUILD=$(BUILD) $(PYTHON) tests/powercut/powercut.py

test: deps
	@$(MAKE) --no-print-directory -j$(shell nproc) all
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory fuzz-smoke
	@$(MAKE) --no-print-directory integration
	@$(MAKE) --no-print-directory sanitize-smoke

# A representative part of the integration suite against an ASan+UBSan
# broker (the whole suite: make SANITIZE=1 integration).
SAN_TESTS ?= 0003 0004 0030 1001 2002 3001 4001 5100 5141 8020 9001 9010 9011 9012 9013 9014 9015 9016
sanitize-smoke:
	@$(MAKE) --no-print-directory SANITIZE=1 BUILD=build-san -j$(shell nproc) all
	@SANITIZE=1 BUILD=build-san ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp ITEST_JOBS=$(ITEST_JOBS) sh tests/integration/run.sh $(SAN_TESTS)

# libFuzzer targets (clang); fuzz-smoke is the short pass inside make test
FUZZ_SECONDS ?= 60
fuzz:
	@sh fuzz/run.sh $(FUZZ_SECONDS)
fuzz-smoke:
	@sh fuzz/run.sh 5

STYLE_FILES = $(shell git ls-files 'src/*.[ch]' 'tools/*.[ch]' 'examples/*.c' 'fuzz/*.[ch]' \
		'tests/unit/*.c' 'tests/integration/*.c' 'tests/lib/*.[ch]' 'bench/*.c' 2>/dev/null)
style:
	clang-format --dry-run -Werror $(STYLE_FILES)

PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BROKER) $(TOOLS) $(BUILD)/bin/eos-copier $(DESTDIR)$(PREFIX)/bin/   # gregor-verify-eos runs the eos-copier next to it

clean:
	rm -rf build build-san build-fuzz build-hard

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
