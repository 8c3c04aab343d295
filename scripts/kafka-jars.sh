#!/usr/bin/env bash
# Fetch Apache Kafka's Java artifacts for one client generation from Maven Central into a
# cache outside the repository, and print that directory.
#   scripts/kafka-jars.sh 4      # the newest 4.x (scripts/kafka-versions.env)
#   scripts/kafka-jars.sh 3.9    # the 3.9.x line
# The directory holds kafka-clients, kafka-tools, kafka-streams, kafka_2.13 (the tools
# that still live in Kafka's core: ConfigCommand, BrokerApiVersionsCommand, ...), all
# their runtime dependencies and an slf4j-simple binding; run a tool as
#   java -cp "$DIR/*" org.apache.kafka.tools.TopicCommand --bootstrap-server ... --list
# The cache is ${MINIKAFKA_JAR_CACHE:-$HOME/.cache/minikafka/jars}/<version>/; a second
# call with the cache complete does nothing. Needs Java 17 and Maven (mvn).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=kafka-versions.env
. "$here/kafka-versions.env"

case "${1:-}" in
  4) version="$KAFKA_4_VERSION" ;;
  3.9) version="$KAFKA_3_9_VERSION" ;;
  *) echo "usage: $0 4|3.9" >&2; exit 2 ;;
esac

cache="${MINIKAFKA_JAR_CACHE:-$HOME/.cache/minikafka/jars}"
dir="$cache/$version"
if [ -f "$dir/.complete" ]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d "$cache/.fetch-$version.XXXXXX")"
trap 'rm -rf "$work"' EXIT

cat > "$work/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>minikafka</groupId>
  <artifactId>kafka-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$SLF4J_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>$SLF4J_VERSION</version></dependency>
  </dependencies>
</project>
POM

# Maven's own output goes to stderr: stdout is only the directory.
mvn -B -q -Dstyle.color=never -f "$work/pom.xml" \
  org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$work/jars" >&2

# Other slf4j bindings that came along would make slf4j pick one at random: keep ours.
find "$work/jars" \( -name 'slf4j-reload4j-*.jar' -o -name 'slf4j-log4j12-*.jar' \
  -o -name 'log4j-slf4j*-impl-*.jar' \) -delete
touch "$work/jars/.complete"

# Another caller may have finished first: keep whichever is complete.
if [ -f "$dir/.complete" ]; then
  echo "$dir"
  exit 0
fi
rm -rf "$dir"
mv "$work/jars" "$dir"
echo "$dir"
