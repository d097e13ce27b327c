// Package validate checks the deployment files under contrib/ (the
// Dockerfile, the Kubernetes manifest, the Prometheus scrape config)
// against the tools' own parsers and against each other and the
// repository: the port the units listen on, the path `make build` writes,
// the Go version of go.mod; and contrib/release/debversion, whose Debian
// versions dpkg must sort as the releases are ordered. It has no code, only tests (`make
// deploy-check`), and is a module of its own so that its Kubernetes and
// BuildKit dependencies stay out of udpstp's go.mod.
//
// Nothing here builds an image or talks to a cluster: no container engine
// or cluster is available to CI. docs/deploy.md says what was checked and
// what was not.
package validate
