// Not Go: this file keeps the go tool out of the npm workspace, whose
// node_modules holds packages that ship .go files of their own.
module github.com/tower-dev/breakglass/backstage

go 1.26
