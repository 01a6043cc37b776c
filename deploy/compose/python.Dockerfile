# A stand-in for python:3.11-slim built from Debian's own packages (no registry of images needed):
# Debian 12's python3.11 (with its C headers, as the official image has) in a venv at /usr/local/python, first on PATH, so `python` and `pip` behave as in
# the official image (Debian's system interpreter refuses pip installs: PEP 668). It trusts the building
# machine's certificate authorities (host-ca-certificates.crt, copied by local-images.sh), so that pip reaches
# PyPI through a TLS-inspecting proxy as the host does; pip is told to use that bundle.
ARG DEBIAN_IMAGE=rlvr-local/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3.11 python3.11-venv python3.11-dev ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY host-ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV PATH=/usr/local/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
RUN python3.11 -m venv /usr/local/python \
    && pip install --no-cache-dir --quiet --upgrade pip
CMD ["python3"]
