# Container image of tpu-webhook: `tpu-webhook serve` as a non-root user.
#   scripts/release.sh --registry REGISTRY   (docs/deploy.md, "Build a release")
# The build stage builds exactly as scripts/test.sh's gcc build (same
# configure line, tests off); the runtime stage carries only the shared
# libraries the binary links. tests/deploy/test_image.py checks both against
# the real build on every test run, since no Docker engine runs in CI.

# Build arguments: scripts/release.sh passes them all, from git (an image
# built without them says "unknown"). VERSION must be CMakeLists.txt's
# project(VERSION) (the build stage refuses another; tests/ops/test_version.py
# checks the default), REVISION the git commit (the build context has no
# .git, see .dockerignore), CREATED the commit's date (RFC 3339), SOURCE the
# repository's https:// address, and SOURCE_DATE_EPOCH the same date for the
# binary's build date, so that the binary logs "VERSION (REVISION)".
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=unknown

FROM debian:12 AS build
ARG VERSION
ARG REVISION
ARG SOURCE_DATE_EPOCH
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libmicrohttpd-dev libgnutls28-dev libssl-dev libcjson-dev libyaml-dev \
      libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# cmake/buildinfo.cmake takes the commit from WH_GIT_COMMIT without .git.
ENV WH_GIT_COMMIT=$REVISION
RUN cmake -S . -B build -DCMAKE_C_COMPILER=gcc -DBUILD_TESTING=OFF \
 && cmake --build build -j "$(nproc)" --target tpu-webhook \
 && test "$(build/tpu-webhook --version | head -n 1)" = "tpu-webhook $VERSION" \
 && strip --strip-debug -o /tpu-webhook build/tpu-webhook

FROM debian:12-slim
ARG VERSION
ARG REVISION
ARG CREATED
ARG SOURCE
LABEL org.opencontainers.image.title="tpu-webhook" \
      org.opencontainers.image.description="Admission webhook for TPU workloads on GKE (KubeRay, Jobs, JobSets)" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.created="$CREATED" \
      org.opencontainers.image.source="$SOURCE" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libmicrohttpd12 libgnutls30 libssl3 libcjson1 libyaml-0-2 libcurl4 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 2007 tpu-webhook \
 && useradd --system --uid 2007 --gid 2007 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin tpu-webhook
COPY --from=build /tpu-webhook /usr/local/bin/tpu-webhook
# Numeric, so that runAsNonRoot can verify it without a passwd lookup.
USER 2007:2007
# The default bind address is :443, like the reference. Binding it as
# non-root needs net.ipv4.ip_unprivileged_port_start <= 443 in the pod
# (deploy/ sets it) or a Docker engine (which sets it to 0).
EXPOSE 443
# No HEALTHCHECK: Kubernetes probes /healthz and /readyz.
ENTRYPOINT ["/usr/local/bin/tpu-webhook", "serve"]
