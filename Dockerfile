# The saltq image: saltq-master, saltq-minion and saltq in /usr/local/bin, run as user 10001.
# The Helm chart (charts/saltq) points at it:  docker build -t saltq:0.1.0 .

# Build: the three binaries, from the locked dependency versions; the minion with the `minion`
# profile (fat LTO, optimized for size: less resident memory on every host). protox compiles
# the .proto files in Rust and SQLite is bundled, so the toolchain image needs nothing added.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bins \
 && cargo build --profile minion --locked -p saltq-minion \
 && install -D -m 0755 -t /out target/release/saltq-master target/minion/saltq-minion target/release/saltq

# Run: Debian slim (the same glibc as the build) with CA certificates. Its shell and coreutils are
# used by the chart's init container (chown of the minion's key directory) and by `kubectl exec
# ... cat` to fetch issued certificates; util-linux's nsenter serves minions with host access.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 saltq \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/saltq --no-create-home \
      --shell /usr/sbin/nologin saltq \
 && install -d -o 10001 -g 10001 -m 0750 /etc/saltq /var/lib/saltq /var/cache/saltq
COPY --from=build /out/ /usr/local/bin/
USER 10001:10001
WORKDIR /var/lib/saltq
# gRPC: QUIC on UDP and HTTP/2 on TCP, on the same port; plain HTTP for /healthz, /readyz, /metrics.
EXPOSE 4506/udp 4506/tcp 8080/tcp
# Without a config file the master uses its defaults (pki in /etc/saltq/pki/master, job cache in
# /var/cache/saltq/master): `docker run -p 4506:4506/udp -p 4506:4506 saltq:0.1.0` is a master.
# The chart sets command and args for each container.
CMD ["saltq-master", "-c", "/etc/saltq"]
