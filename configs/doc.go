// Package configs holds no code: it is the home of the example configs
// (*.yaml), the Kubernetes manifests (kubernetes/) and their tests, which
// check them against the real CLI: every example passes `config validate`,
// every manifest decodes strictly into the Kubernetes API types and runs a
// command line the CLI's flag parser accepts, the Dockerfile builds the
// binary it describes, the CI drill workflow runs the same command as
// `make drill`, and docs/OPERATIONS.md's alert rules and IAM policy name
// only metrics and S3 actions the code has.
package configs
