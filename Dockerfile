# minikafka: one image for the brokers of docker-compose.yml and the example Spark job.
#
#   docker build -t minikafka .
#   docker run --rm minikafka --help
#
# bookworm, not the default trixie: Debian trixie has no openjdk-17 package.
FROM python:3.11-slim-bookworm

# Java 17 runs Spark (and ZooKeeper from the pyspark jars for `minikafka zookeeper`;
# docker-compose.yml uses the official zookeeper image instead).
# /usr/share/man/man1 is missing in slim images and the JRE's postinst wants it.
RUN set -eux; \
    mkdir -p /usr/share/man/man1; \
    apt-get update; \
    apt-get install -y --no-install-recommends openjdk-17-jre-headless; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/*

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Every dependency comes as a wheel: no compiler needed, nothing left behind.
COPY pyproject.toml README.md /tmp/src/
COPY minikafka /tmp/src/minikafka
RUN set -eux; \
    pip install --no-cache-dir '/tmp/src[spark]'; \
    rm -rf /tmp/src; \
    minikafka --help > /dev/null; \
    java -version

WORKDIR /opt/minikafka
COPY scripts ./scripts

# Brokers keep checkpoints (and with --storage disk their logs) in /data; a named
# volume mounted there starts out owned by this user.
RUN set -eux; \
    useradd --create-home --uid 1000 --user-group minikafka; \
    mkdir -p /data; \
    chown minikafka:minikafka /data
USER minikafka

ENTRYPOINT ["minikafka"]
CMD ["--help"]
