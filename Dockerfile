# minikafka images, two targets of one file:
#
#   docker build --target broker -t minikafka:local .        # brokers and the CLI (~200 MB)
#   docker build --target spark -t minikafka-spark:local .   # + Java 17, PySpark and Spark's Kafka connector
#   docker run --rm minikafka:local --help
#
# docker-compose.yml builds both (one build per image). Versions are pinned by
# constraints.txt. bookworm, not the default trixie: Debian trixie has no openjdk-17.
FROM python:3.11-slim-bookworm AS base

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The broker needs aiohttp, kazoo, msgpack, crc32c, cramjam and zstandard: wheels for all of them;
# the project itself is built from its source.
COPY constraints.txt pyproject.toml README.md /tmp/src/
COPY minikafka /tmp/src/minikafka
RUN set -eux; \
    pip install --no-cache-dir -c /tmp/src/constraints.txt /tmp/src; \
    cp /tmp/src/constraints.txt /opt/constraints.txt; \
    rm -rf /tmp/src; \
    minikafka --version

# Brokers keep checkpoints (and with --storage disk their logs) in /data; a named
# volume mounted there starts out owned by this user.
RUN set -eux; \
    useradd --create-home --uid 1000 --user-group minikafka; \
    mkdir -p /data; \
    chown minikafka:minikafka /data
WORKDIR /opt/minikafka
ENTRYPOINT ["minikafka"]
CMD ["--help"]


# The brokers' image (scripts/healthcheck.py is its container healthcheck).
FROM base AS broker
COPY scripts ./scripts
USER minikafka


# The Spark job's image: Java 17 and PySpark (with pyarrow and pandas) on top, and
# Spark's own Kafka connector for format("kafka"): spark-sql-kafka-0-10 for the pinned
# PySpark and its dependencies, resolved from Maven Central by Spark's Ivy at build time
# into /opt/spark-kafka-jars (only the jars PySpark does not ship); sessions take them
# from there (MINIKAFKA_SPARK_KAFKA_JARS: spark.jars, no download when a job runs).
# /usr/share/man/man1 is missing in slim images and the JRE's postinst wants it.
FROM base AS spark
RUN set -eux; \
    mkdir -p /usr/share/man/man1; \
    apt-get update; \
    apt-get install -y --no-install-recommends openjdk-17-jre-headless; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/*; \
    pip install --no-cache-dir -c /opt/constraints.txt pyspark 'pyarrow>=14' 'pandas<3'; \
    java -version; \
    python -m minikafka.spark.kafka_jars --into /opt/spark-kafka-jars; \
    rm -rf /root/.ivy2*
ENV MINIKAFKA_SPARK_KAFKA_JARS=/opt/spark-kafka-jars
COPY scripts ./scripts
USER minikafka
