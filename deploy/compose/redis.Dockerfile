# A stand-in for redis:7-alpine from Debian 12's redis-server (7.0): redis-server and redis-cli on PATH.
ARG DEBIAN_IMAGE=rlvr-local/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
CMD ["redis-server"]
