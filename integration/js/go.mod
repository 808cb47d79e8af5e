module github.com/basaltmc/basalt/integration/js

// This file keeps the Node.js client and its node_modules out of the Go
// module above, so go test ./... never walks them.

go 1.26.0
