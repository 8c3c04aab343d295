"""docker-compose.yml and Dockerfile, checked without a Docker engine (scripts/compose-test.sh,
which .ci/run runs after the suite, brings them up with a real one).

* ``docker-compose config`` (Debian's docker-compose 1.29: ``apt-get install -y
  --no-install-recommends docker-compose``) must accept the file, offline, in a clean
  environment pointed at a Docker socket that does not exist;
* the YAML must describe ZooKeeper and brokers 1-3 with internal and external
  listeners, host ports 9092-9094 published on 127.0.0.1 unless ``MINIKAFKA_BIND`` says
  otherwise, and the Spark job in a profile;
* every broker's command line must pass ``minikafka broker ... --check-config``
  (which needs neither ZooKeeper nor free ports).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from minikafka.cli.main import build_parser
from process_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
BROKERS = {"broker-1": (1, 9092), "broker-2": (2, 9093), "broker-3": (3, 9094)}
INSTALL_HINT = "apt-get install -y --no-install-recommends docker-compose"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def _docker_compose(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("docker-compose")
    assert exe is not None, f"docker-compose is not installed: {INSTALL_HINT} (.ci/run installs it)"
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    clean = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
             # any attempt to reach an engine would fail: `config` must not need one
             "DOCKER_HOST": f"unix://{tmp_path}/no-docker-engine.sock", **(env or {})}
    return subprocess.run([exe, "-f", str(COMPOSE_FILE), *args], cwd=tmp_path, env=clean,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def _defaults(command: list[str]) -> list[str]:
    """The command as compose runs it without variables set: ``${NAME:-default}`` is the default."""
    return [re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", arg) for arg in command]


def _broker_args(service: dict):
    command = service["command"]
    assert isinstance(command, list), "broker commands are lists, not shell strings"
    assert command[0] == "broker"
    return build_parser().parse_args(_defaults(command))


BIND_DEFAULT = "${MINIKAFKA_BIND:-127.0.0.1}"


def _published(service: dict) -> list[tuple[int, int]]:
    """(host port, container port) of each published port, all bound to ``MINIKAFKA_BIND``
    (127.0.0.1 unless set)."""
    out = []
    for p in service.get("ports", []):
        bind, host, container = str(p).rsplit(":", 2)
        assert bind == BIND_DEFAULT, f"{p}: publish on {BIND_DEFAULT}, not on every interface"
        out.append((int(host), int(container)))
    return out


# ---------------------------------------------------------------- docker-compose itself

def test_docker_compose_config_accepts_the_file_offline(tmp_path):
    r = _docker_compose(tmp_path, "config")
    assert r.returncode == 0, r.stderr
    normalized = yaml.safe_load(r.stdout)
    assert set(normalized["services"]) == {"zookeeper", "cluster-secret", "broker-1", "broker-2", "broker-3", "spark",
                                        "spark-kafka", "spark-master", "spark-worker", "zookeeper-2", "zookeeper-3"}
    for name, (_, port) in BROKERS.items():
        assert _normalized_ports(normalized["services"][name]) == \
            [("127.0.0.1", port, port), ("127.0.0.1", port + 20000, port + 20000)]
    # MINIKAFKA_BIND publishes them elsewhere, when asked
    r = _docker_compose(tmp_path, "config", env={"MINIKAFKA_BIND": "0.0.0.0"})
    assert r.returncode == 0, r.stderr
    for name in BROKERS:
        assert {ip for ip, _, _ in _normalized_ports(yaml.safe_load(r.stdout)["services"][name])} == {"0.0.0.0"}


def _normalized_ports(service: dict) -> list[tuple[str, int, int]]:
    """(host address, host port, container port) of `docker-compose config`'s ports: the
    short "IP:HOST:CONTAINER/tcp" form, or the long one (published, target, host_ip)."""
    out = []
    for p in service["ports"]:
        if isinstance(p, dict):
            out.append((p.get("host_ip", "0.0.0.0"), int(p["published"]), int(p["target"])))
        else:
            ip, host, container = str(p).split("/")[0].rsplit(":", 2)
            out.append((ip, int(host), int(container)))
    return out


def test_docker_compose_knows_the_spark_profile(tmp_path):
    r = _docker_compose(tmp_path, "--profile", "spark", "config", "--services")
    assert r.returncode == 0, r.stderr
    assert set(r.stdout.split()) - {"zookeeper-2", "zookeeper-3"} == {
        "zookeeper", "cluster-secret", "broker-1", "broker-2", "broker-3", "spark", "spark-kafka",
        "spark-master", "spark-worker"}


def test_docker_compose_knows_the_zookeeper_ensemble_profile(tmp_path):
    r = _docker_compose(tmp_path, "--profile", "zookeeper-ensemble", "config", "--services")
    assert r.returncode == 0, r.stderr
    assert {"zookeeper", "zookeeper-2", "zookeeper-3", "broker-1"} <= set(r.stdout.split()), r.stdout
    servers = "server.1=zookeeper:2888:3888;2181 server.2=zookeeper-2:2888:3888;2181 server.3=zookeeper-3:2888:3888;2181"
    r = _docker_compose(tmp_path, "--profile", "zookeeper-ensemble", "config",
                        env={"MINIKAFKA_ZOO_SERVERS": servers,
                             "MINIKAFKA_ZOOKEEPER_CONNECT": "zookeeper:2181,zookeeper-2:2181,zookeeper-3:2181"})
    assert r.returncode == 0, r.stderr
    assert "--zookeeper=zookeeper:2181,zookeeper-2:2181,zookeeper-3:2181" in r.stdout
    assert r.stdout.count("server.2=zookeeper-2:2888:3888;2181") == 3  # every server's ZOO_SERVERS


def test_docker_compose_is_installed():
    """CI installs Debian's docker-compose in .ci/run; without it the file is not validated."""
    assert shutil.which("docker-compose"), f"docker-compose is not installed: {INSTALL_HINT}"


# ---------------------------------------------------------------- the YAML

def test_services_and_profiles(compose):
    services = compose["services"]
    assert set(services) == {"zookeeper", "cluster-secret", "broker-1", "broker-2", "broker-3", "spark",
                                        "spark-kafka", "spark-master", "spark-worker", "zookeeper-2", "zookeeper-3"}
    for name in ("spark", "spark-kafka", "spark-master", "spark-worker"):
        assert services[name]["profiles"] == ["spark"], name
    assert services["zookeeper-2"]["profiles"] == services["zookeeper-3"]["profiles"] == ["zookeeper-ensemble"]
    for name in ("zookeeper", *BROKERS):
        assert "profiles" not in services[name], f"{name} must start with a plain `docker compose up`"
    for name, service in services.items():
        # users kill brokers to watch failover: nothing may bring them back by itself
        assert "restart" not in service, name
    assert set(compose["volumes"]) >= {"zookeeper-data", "broker-1-data", "broker-2-data", "broker-3-data"}


def test_zookeeper_service(compose):
    zk = compose["services"]["zookeeper"]
    assert zk["image"] == "zookeeper:3.8"
    assert "ruok" in zk["environment"]["ZOO_4LW_COMMANDS_WHITELIST"].split(",")
    test = " ".join(zk["healthcheck"]["test"])
    assert "ruok" in test and "2181" in test and "imok" in test
    assert "ports" not in zk, "ZooKeeper stays inside the compose network"


@pytest.mark.parametrize("name", sorted(BROKERS))
def test_broker_listeners_and_ports(compose, name):
    broker_id, external_port = BROKERS[name]
    service = compose["services"][name]
    args = _broker_args(service)
    assert args.id == broker_id
    assert args.zookeeper == "zookeeper:2181"
    # internal: all interfaces of the container, advertised under the service name
    assert args.listen == ("0.0.0.0", 19092)
    assert args.advertise == (name, 19092)
    # external: its own port, published on the same host port, advertised as localhost
    assert args.listen_external == ("0.0.0.0", external_port)
    assert args.advertise_external == ("localhost", external_port)
    kafka_port = external_port + 20000
    assert _published(service) == [(external_port, external_port), (kafka_port, kafka_port)]
    # Kafka's binary protocol: broker-N:39092 inside the network, localhost:2909x outside
    assert args.kafka_listen == ("0.0.0.0", 39092)
    assert args.kafka_advertise is None  # defaults to the service name, as --advertise says
    assert args.kafka_listen_external == ("0.0.0.0", kafka_port)
    assert args.kafka_advertise_external == ("localhost", kafka_port)
    # disk storage on a named volume
    assert args.storage == "disk"
    assert f"{name}-data:{args.data_dir}" in service["volumes"]
    # the broker image (built once, by the cluster-secret service); waits for a healthy ZooKeeper
    assert service["image"] == "minikafka:local" and "build" not in service
    assert service["depends_on"]["zookeeper"]["condition"] == "service_healthy"
    # the cluster credential, made once by the cluster-secret service in a shared volume
    assert service["depends_on"]["cluster-secret"]["condition"] == "service_completed_successfully"
    assert args.cluster_secret_file == "/secrets/cluster-secret"
    assert "cluster-secret:/secrets:ro" in service["volumes"]
    # ... which also guards the cluster's znodes: only its holders may change them
    assert "zookeeper.set.acl=true" in args.config
    # healthy = the HTTP API answers on the internal listener
    assert "healthcheck.py 127.0.0.1:19092" in " ".join(service["healthcheck"]["test"])


def test_external_ports_are_distinct(compose):
    published = [hp for name in BROKERS for hp in _published(compose["services"][name])]
    assert sorted(published) == [(9092, 9092), (9093, 9093), (9094, 9094),
                                 (29092, 29092), (29093, 29093), (29094, 29094)]


@pytest.mark.process
@pytest.mark.parametrize("name", sorted(BROKERS))
def test_broker_command_passes_check_config(compose, name):
    # as compose runs it without variables set: ${NAME:-default} is the default
    command = _defaults(compose["services"][name]["command"])
    assert "--zookeeper=zookeeper:2181" in command
    r = run_cli(*command, "--check-config")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"config ok: broker {BROKERS[name][0]} listens on 0.0.0.0:19092 (advertised {name}:19092)")
    assert f"(external, advertised localhost:{BROKERS[name][1]})" in r.stdout
    assert (f"Kafka protocol on 0.0.0.0:39092 (advertised {name}:39092) and 0.0.0.0:{BROKERS[name][1] + 20000} "
            f"(external, advertised localhost:{BROKERS[name][1] + 20000})") in r.stdout
    assert "zookeeper zookeeper:2181" in r.stdout
    # the flags in Kafka's words, as docs/deployment.md shows them
    ext = BROKERS[name][1]
    assert (f"advertised.listeners=INTERNAL://{name}:19092,EXTERNAL://localhost:{ext},KAFKA://{name}:39092,"
            f"KAFKA_EXTERNAL://localhost:{ext + 20000}") in r.stdout.splitlines()


def test_healthcheck_is_a_shell_command_running_the_script(compose):
    """CMD-SHELL with a script: podman's Docker API splits exec-form arguments at spaces."""
    test = compose["services"]["broker-1"]["healthcheck"]["test"]
    assert test == ["CMD-SHELL", "python /opt/minikafka/scripts/healthcheck.py 127.0.0.1:19092"]
    assert compose["services"]["zookeeper"]["healthcheck"]["test"][0] == "CMD-SHELL"


@pytest.mark.process
def test_healthcheck_script_tells_a_live_broker_from_a_dead_port(cluster):
    import sys
    script = str(ROOT / "scripts" / "healthcheck.py")
    live = subprocess.run([sys.executable, script, cluster.endpoint(1)], capture_output=True, text=True, timeout=30)
    assert live.returncode == 0, live.stderr
    from process_helpers import free_port
    dead = subprocess.run([sys.executable, script, f"127.0.0.1:{free_port()}"], capture_output=True, text=True,
                          timeout=30)
    assert dead.returncode == 1 and "does not answer" in dead.stderr


def test_spark_job_service(compose):
    spark = compose["services"]["spark"]
    assert spark["entrypoint"] == ["python", "scripts/spark_job.py"]
    command = spark["command"]
    opts = dict(zip(command[::2], command[1::2]))
    assert opts["--topic"] == "demo"
    assert opts["--output-topic"] == "demo-key-counts"
    assert opts["--bootstrap-server"].split(",") == [f"{name}:19092" for name in sorted(BROKERS)]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in spark["volumes"]}
    assert any(opts["--output"].startswith(path) for path in mounts), "the output lands on a volume"
    for name in BROKERS:
        assert spark["depends_on"][name]["condition"] == "service_healthy"
    # the job is the driver of the profile's standalone cluster
    assert opts["--master"] == "spark://spark-master:7077"
    assert spark["depends_on"]["spark-worker"]["condition"] == "service_healthy"


def test_spark_standalone_services(compose):
    """spark-master and spark-worker run Spark's own Master and Worker from the spark image."""
    master, worker = compose["services"]["spark-master"], compose["services"]["spark-worker"]
    assert master["image"] == worker["image"] == "minikafka-spark:local"
    assert "build" not in master and "build" not in worker
    assert master["entrypoint"] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    assert worker["entrypoint"] == ["spark-class", "org.apache.spark.deploy.worker.Worker"]
    m = dict(zip(master["command"][::2], master["command"][1::2]))
    assert (m["--host"], m["--port"]) == ("spark-master", "7077")
    assert worker["command"][-1] == f"spark://spark-master:{m['--port']}"
    w = dict(zip(worker["command"][:-1:2], worker["command"][1:-1:2]))
    assert w["--memory"] == "1g", "one executor of Spark's default spark.executor.memory fits"
    assert w["--work-dir"].startswith("/tmp/"), "the image's user may write there"
    assert worker["depends_on"]["spark-master"]["condition"] == "service_healthy"
    health = worker["healthcheck"]["test"]
    assert health[0] == "CMD-SHELL" and "spark_healthcheck.py spark-master:" + m["--webui-port"] + " 1" in health[1]
    # executors write the jobs' Parquet output where the driver (the job's container) sees it
    assert worker["volumes"] == compose["services"]["spark"]["volumes"]
    assert "ports" not in master and "ports" not in worker, "the Spark cluster stays inside the compose network"


def test_spark_kafka_job_service(compose):
    """The same job with Spark's own format("kafka"), through the Kafka listeners, on the spark image."""
    job, spark = compose["services"]["spark-kafka"], compose["services"]["spark"]
    assert job["image"] == spark["image"] == "minikafka-spark:local" and "build" not in job
    assert job["entrypoint"] == spark["entrypoint"]
    command = job["command"]
    opts = dict(zip(command[::2], command[1::2]))
    assert opts["--format"] == "kafka" and opts["--topic"] == "demo"
    assert opts["--bootstrap-server"].split(",") == [f"{name}:39092" for name in sorted(BROKERS)]
    assert opts["--master"] == "spark://spark-master:7077"
    assert job["depends_on"] == spark["depends_on"] and job["volumes"] == spark["volumes"]


# ---------------------------------------------------------------- the Dockerfile

def test_each_image_is_built_once_from_its_dockerfile_target(compose):
    builds = {name: svc["build"] for name, svc in compose["services"].items() if "build" in svc}
    assert builds == {"cluster-secret": {"context": ".", "target": "broker"},
                      "spark": {"context": ".", "target": "spark"}}
    assert compose["services"]["cluster-secret"]["image"] == "minikafka:local"
    assert compose["services"]["spark"]["image"] == "minikafka-spark:local"


def test_dockerfile():
    text = DOCKERFILE.read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    base, rest = code.split("FROM base AS broker")
    broker, spark = rest.split("FROM base AS spark")
    broker = base + broker
    assert re.search(r"^FROM python:3\.11-slim-bookworm AS base", base, re.M)
    # the broker image has no JRE and no PySpark; the spark image adds them
    assert "openjdk" not in broker and "pyspark" not in broker
    assert "openjdk-17-jre-headless" in spark and "pyspark" in spark
    assert "--no-install-recommends" in spark and "rm -rf /var/lib/apt/lists/*" in spark
    # pinned: every pip install uses constraints.txt, which pins every package it installs
    installs = re.findall(r"pip install [^;]*", code)
    assert installs and all("-c /" in cmd for cmd in installs)
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[^ ]+", line) for line in pins)
    assert {"aiohttp", "kazoo", "msgpack", "pyspark", "pyarrow"} <= {line.split("==")[0] for line in pins}
    assert 'ENTRYPOINT ["minikafka"]' in base
    assert "COPY scripts" in spark, "the Spark service runs scripts/spark_job.py from the image"
    # Spark's Kafka connector is resolved at build time, and sessions take it from the image
    assert "python -m minikafka.spark.kafka_jars --into /opt/spark-kafka-jars" in spark
    assert "ENV MINIKAFKA_SPARK_KAFKA_JARS=/opt/spark-kafka-jars" in spark
