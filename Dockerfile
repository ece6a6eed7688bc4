# syntax=docker/dockerfile:1
#
# kafkastreams-dr as a container image: a static binary on distroless,
# running as a non-root user (65532) with a read-only root filesystem in
# mind (configs/kubernetes). Build:
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t kafkastreams-dr .
#   docker run --rm kafkastreams-dr version
#
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 ...
# (the Go toolchain cross-compiles; no emulation needed).

# The builder's Go is the go directive of go.mod (go test ./configs checks).
FROM --platform=$BUILDPLATFORM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/kafkastreams-dr ./cmd/kafkastreams-dr

# distroless/static: CA certificates, /etc/passwd with nonroot (65532),
# tzdata; no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kafkastreams-dr /usr/local/bin/kafkastreams-dr
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kafkastreams-dr"]
CMD ["--help"]
