# Multi-stage build: compile with the full Rust toolchain, ship only the binary
# on a slim runtime running as a non-root user.
FROM rust:1.95-bookworm AS builder
RUN apt-get update && apt-get install -y --no-install-recommends cmake libssl-dev libcurl4-openssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
# Link Debian's OpenSSL and libcurl (OAUTHBEARER/OIDC) instead of building
# the vendored OpenSSL: the image then gets their security fixes from Debian
# (rebuild, or `apt-get upgrade` the runtime layer) and the build skips
# compiling OpenSSL. librdkafka and zstd are built from source, linked statically.
ENV OPENSSL_NO_VENDOR=1
WORKDIR /src
COPY . .
# The build context has no .git, so the commit the binary reports
# (`--version`, groundgate_build_info) is given here:
#   docker build --build-arg GG_BUILD_GIT_SHA=$(git rev-parse --short=12 HEAD) .
# Without it, it is "unknown".
ARG GG_BUILD_GIT_SHA
RUN cargo build --release --locked --bin groundgate

FROM debian:bookworm-slim
# ca-certificates: the brokers' public CAs (librdkafka reads the system store
# when kafka.ssl_ca_file is not set); libssl3: TLS; libcurl4: the OIDC token
# endpoint.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libssl3 libcurl4 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home groundgate
COPY --from=builder /src/target/release/groundgate /usr/local/bin/groundgate
# The binary embeds word tables derived from WordNet: its notice travels with it.
COPY --from=builder /src/src/core/grounding/data/LICENSE-WordNet /usr/share/doc/groundgate/LICENSE-WordNet
# The JSON Schemas of the records this binary reads and writes, so that a
# pipeline can validate or register exactly the shapes of the image it runs.
# The binary embeds the same files (`groundgate schema` reads nothing at run
# time); these copies serve tools that read files, e.g. `docker cp`.
COPY --from=builder /src/schemas /usr/share/groundgate/schemas
USER 10001
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/groundgate"]
CMD ["run"]
