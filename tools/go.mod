// Command-line tools of the repository's own checks, kept in a module of
// their own so that they never enter the library's dependency graph: a
// program that imports runtime/kv or runtime/scheduler compiles none of
// this. make tools builds them into .bin/.
module github.com/kvdescriptor/kvdescriptor/tools

go 1.25.0

tool honnef.co/go/tools/cmd/staticcheck

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.31.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/tools v0.40.1-0.20260108161641-ca281cf95054 // indirect
	honnef.co/go/tools v0.7.0 // indirect
)
