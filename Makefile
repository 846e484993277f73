# Developer and CI entry points. `make check` is what CI runs (see .ci/run).

.PHONY: check lint test bench demo tools graphviz generate checkgenerate

check: lint test

BUF := tools/node_modules/.bin/buf

# tools installs buf, prebuilt, from the npm registry at the exact version
# pinned in tools/package.json (kept out of go.mod on purpose).
tools: $(BUF) graphviz

$(BUF): tools/package.json
	cd tools && npm install --no-package-lock --no-audit --no-fund
	@touch $@

# graphviz installs graphviz's dot, which the SVG tests run, with apt-get
# when it is missing (as root only; otherwise it says what to install).
graphviz:
	@command -v dot >/dev/null 2>&1 || { \
		if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz; \
		else \
			echo "graphviz's dot is missing: install graphviz (e.g. sudo apt-get install graphviz)"; \
			exit 1; \
		fi; \
	}

# generate regenerates options/ (the annotation vocabulary's Go package,
# which the plugin imports) and generated/ (the models) with buf and the
# local plugins protoc-gen-go (pinned by go.mod's tool directive) and
# protoc-gen-kvdescriptor (built from this tree).
generate: $(BUF)
	mkdir -p .bin
	go build -o .bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	$(BUF) generate --template buf.gen.options.yaml
	go build -o .bin/protoc-gen-kvdescriptor ./protoc-gen-kvdescriptor
	$(BUF) generate

# checkgenerate fails when regenerating changes anything, new files
# included (git status, not git diff).
checkgenerate: generate
	@changed="$$(git status --porcelain -- options generated)"; \
	if [ -n "$$changed" ]; then \
		echo "generated code is stale; run make generate and commit:"; \
		echo "$$changed"; \
		exit 1; \
	fi

# gofmt must list no tracked .go file (outside a git checkout: every .go
# file but testdata), and go vet must be clean.
lint:
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

test:
	go test -race -count=1 ./...

bench:
	go test -run='^$$' -bench=. -benchmem ./runtime/...

# demo drives the scheduler and the Linux plugin against the kernel, in a
# network namespace of its own (needs root). The quickstart, which needs
# nothing, is `go run ./examples/quickstart`.
demo:
	go run ./examples/linuxdemo
