# Developer and CI entry points. `make test` is the README's test command and
# all that CI runs (.ci/run calls it and adds nothing); `make demo` is the
# README's main command. Both install what they need (the tools target).

.PHONY: test check gotest lint staticcheck bench demo tools sysdeps demo-sysdeps goversion generate checkgenerate

# test installs what the tests need, then runs lint (gofmt, go vet,
# staticcheck), the staleness check of the generated code and every test
# with the race detector. No test skips for a missing tool: tools installs
# them all, and a test that cannot find one fails.
test: tools lint checkgenerate gotest

check: test

BUF := tools/node_modules/.bin/buf
STATICCHECK := .bin/staticcheck

# tools installs everything the tests and the demo use that Go does not
# bring: the Debian packages of missing commands (sysdeps); buf, prebuilt,
# from the npm registry at the version pinned in tools/package.json; and
# staticcheck, built from tools/go.mod, a module of its own so that no tool
# enters the library's dependency graph.
tools: sysdeps $(BUF) $(STATICCHECK)

# sysdeps installs with apt-get the Debian package of everything missing
# that the tests use, naming each with its purpose first
# (tools/sysdeps.sh; etcd-server with its system service neither started
# nor enabled). Each entry is a command, or an absolute path of a file, the
# package that provides it and what it is for. apt-get needs root; without
# it, sysdeps names the packages to install and fails. The demo needs only
# ip (DEMO_SYSDEPS).
SYSDEPS := "dot:graphviz:the SVG graphs and their tests" \
	"protoc:protobuf-compiler:the plugin's test under plain protoc" \
	"/usr/include/google/protobuf/descriptor.proto:libprotobuf-dev:the well-known types protoc imports" \
	"npm:npm:installing buf, prebuilt" \
	"ip:iproute2:the network namespaces of the demo and the Linux tests" \
	"nft:nftables:checking the Linux plugin's nftables rules (nft list ruleset) in its tests" \
	"etcd:etcd-server:the etcd server that the etcd source's tests start" \
	"chromium:chromium:the headless browser that tests the operator page"
DEMO_SYSDEPS := "ip:iproute2:the demo's network namespace"
sysdeps:
	@sh tools/sysdeps.sh $(SYSDEPS)

demo-sysdeps:
	@sh tools/sysdeps.sh $(DEMO_SYSDEPS)

$(BUF): tools/package.json
	@sh tools/sysdeps.sh "npm:npm:installing buf, prebuilt"
	cd tools && npm install --no-package-lock --no-audit --no-fund
	@touch $@

$(STATICCHECK): tools/go.mod tools/go.sum
	@$(MAKE) --no-print-directory goversion
	@echo "building staticcheck (tools/go.mod)"
	cd tools && go build -o ../$(STATICCHECK) honnef.co/go/tools/cmd/staticcheck

# goversion stops with a clear message when the Go toolchain cannot build
# tools/go.mod (staticcheck needs the Go version of its go line): with
# GOTOOLCHAIN=local the go command would not fetch a newer toolchain and
# fail with less to say. README.md's set-up states the same versions, and
# docs/readme_test.go checks that it does.
goversion:
	@need="$$(sed -n 's/^go \([0-9.]*\).*/\1/p' tools/go.mod)"; \
	have="$$(cd tools && go env GOVERSION 2>/dev/null | sed 's/^go//')"; \
	if [ -z "$$have" ] || [ "$$(printf '%s\n%s\n' "$$need" "$$have" | sort -V | head -n1)" != "$$need" ]; then \
		echo "make test needs Go $$need or newer to build staticcheck (tools/go.mod); this go is $${have:-unknown}"; \
		echo "  (the library itself needs only the version of go.mod's go line; see README.md, Set-up)"; \
		exit 1; \
	fi

# generate regenerates options/ (the annotation vocabulary's Go package,
# which the plugin imports), generated/ (the models) and docs/models (the
# models' reference pages, protoc-gen-kvdescriptor's docs=true output) with
# buf and the local plugins protoc-gen-go and protoc-gen-connect-go
# (pinned by go.mod's tool directives) and
# protoc-gen-kvdescriptor (built from this tree).
generate: $(BUF)
	mkdir -p .bin
	go build -o .bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	go build -o .bin/protoc-gen-connect-go connectrpc.com/connect/cmd/protoc-gen-connect-go
	$(BUF) generate --template buf.gen.options.yaml
	go build -o .bin/protoc-gen-kvdescriptor ./protoc-gen-kvdescriptor
	$(BUF) generate

# checkgenerate regenerates and fails when that changed anything under
# options/, generated/ or docs/models, new and removed files included. It compares the
# files' contents before and after, so it needs no git and judges the tree as
# it is, uncommitted edits included; what it rewrote stays, to be committed.
GENSUM := find options generated docs/models -type f -print0 | sort -z | xargs -0 sha256sum
checkgenerate: $(BUF)
	@mkdir -p .bin
	@$(GENSUM) >.bin/generated.before
	@$(MAKE) --no-print-directory generate >/dev/null
	@$(GENSUM) >.bin/generated.after
	@if ! cmp -s .bin/generated.before .bin/generated.after; then \
		echo "the generated code (or docs/models) was stale; make generate has rewritten these files (commit them):"; \
		diff .bin/generated.before .bin/generated.after | sed -n 's/^[<>] [0-9a-f]*  //p' | sort -u; \
		exit 1; \
	fi

# lint: gofmt must list no tracked .go file (outside a git checkout: every
# .go file but testdata), go vet and staticcheck must be clean.
lint: $(STATICCHECK)
	@files="$$(git ls-files -- '*.go' 2>/dev/null || find . -name '*.go' -not -path '*/testdata/*')"; \
	if [ -n "$$files" ]; then \
		unformatted="$$(gofmt -l $$files)" || exit 1; \
		if [ -n "$$unformatted" ]; then \
			echo "gofmt -l lists these files (run gofmt -w on them):"; \
			echo "$$unformatted"; \
			exit 1; \
		fi; \
	fi
	go vet ./...
	$(STATICCHECK) ./...

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

# gotest runs every test with the race detector, and nothing else (the
# quick loop of a developer whose tools are installed).
gotest:
	go test -race -count=1 ./...

bench:
	go test -run='^$$' -bench=. -benchmem ./runtime/...

# demo builds the reference agent (examples/agent) and runs it as a person
# would: on a configuration file, against a network namespace of its own
# (as root; without root, on its in-memory southbound), edits the file,
# and prints the transaction log, the statuses and the kernel's state.
# DEMO_ARGS=-keep leaves the agent running to explore its API. The
# quickstart, which needs nothing, is `go run ./examples/quickstart`.
demo: demo-sysdeps
	mkdir -p .bin
	go build -o .bin/agent ./examples/agent
	go run ./examples/agent/demo -agent .bin/agent $(DEMO_ARGS)
