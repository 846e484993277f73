# Developer and CI entry points. `make check` is what CI runs (see .ci/run).

.PHONY: check lint test bench demo

check: lint test

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

demo:
	go run ./examples/quickstart
