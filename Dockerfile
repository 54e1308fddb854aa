# Multi-stage build: compile with the full Rust toolchain, ship only the binary
# on a slim runtime running as a non-root user.
FROM rust:1.95-bookworm AS builder
RUN apt-get update && apt-get install -y --no-install-recommends cmake && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin groundgate

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home groundgate
COPY --from=builder /src/target/release/groundgate /usr/local/bin/groundgate
USER 10001
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/groundgate"]
CMD ["run"]
