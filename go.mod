module github.com/lockmux/lockmux

go 1.26.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.49.0
)

require (
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
