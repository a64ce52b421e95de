# syntax=docker/dockerfile:1
#
# The sessionmem server image: the static binary scripts/build.sh makes (for one commit and
# VERSION, the binary of the linux release archive of that architecture) on
# distroless/static (CA certificates, time zones, a nonroot user; no shell), run as nonroot.
#
#   docker build --build-arg VERSION=v0.4.0 -t sessionmem:v0.4.0 .
#
# Build from a clean git checkout: the commit is stamped from .git (.dockerignore keeps it),
# and files git does not know mark the build "modified". compose.yaml runs it as a team.

# Pinned: scripts/release.sh builds with this Go as well (GOTOOLCHAIN), so that this image's
# binary and the release archives' are the same bytes.
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
# Empty: the version the toolchain stamps from the commit (a v0.0.0-… pseudo-version).
ARG VERSION=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# git refuses a checkout owned by another user than the one running it.
RUN git config --global --add safe.directory /src \
 && GOTOOLCHAIN=local scripts/build.sh "$TARGETOS" "$TARGETARCH" "$VERSION" /out/sessionmem \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sessionmem /usr/local/bin/sessionmem
# The store of a single container (compose.yaml gives the team a PostgreSQL store instead).
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV SESSIONMEM_STORE=/data
VOLUME ["/data"]
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/sessionmem"]
# Needs SESSIONMEM_TOKEN: serve refuses a non-loopback address without one.
CMD ["serve", "--http", "0.0.0.0:8080", "--allow-remote"]
