"""Redis with replicas, for the failover tests and `make failover`: a Sentinel-managed master and replica
with three sentinels, and what the tests ask of a set of Redis servers (who is master, whose replica)."""

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from dev.services import Process, StartFailed, _redis_ping, free_port, start_cluster_node, start_redis

SERVICE = "profile-poke"


def role(port: int) -> list:
    """What ROLE answers on 127.0.0.1:`port`: ["master", offset, replicas] or ["slave", host, port, ...]."""
    with redis.Redis(port=port, socket_timeout=1, socket_connect_timeout=1) as client:
        return client.execute_command("ROLE")


def is_master(port: int) -> bool:
    try:
        return role(port)[0] == b"master"
    except redis.RedisError:
        return False


def replica_ports(master_port: int) -> list[int]:
    """The ports of the replicas connected to the master on `master_port`."""
    return [int(replica[1]) for replica in role(master_port)[2]]


def cluster_masters(port: int) -> list[int]:
    """The ports of the masters serving slots, as the cluster node on `port` sees them."""
    nodes = subprocess.run(["redis-cli", "-p", str(port), "cluster", "nodes"], capture_output=True, text=True).stdout
    fields = [line.split() for line in nodes.splitlines()]
    return sorted(
        int(f[1].split("@")[0].rpartition(":")[2]) for f in fields if "master" in f[2] and "fail" not in f[2] and f[8:]
    )


def wait_for(condition, timeout: float, what: str, step: float = 0.02) -> float:
    """Poll `condition()` until true; the monotonic time it became true. StartFailed naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        time.sleep(step)
    raise StartFailed(f"{what}: not after {timeout} s")


@dataclass
class SentinelSet:
    servers: dict[int, Process]  # port -> redis-server, the master and its replica
    sentinels: dict[int, Process]  # port -> sentinel
    workdir: Path

    def url(self, db: int = 0) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}"

    def named_master(self) -> int | None:
        """The port of the master the first sentinel names now."""
        with redis.Redis(port=next(iter(self.sentinels)), socket_timeout=1) as sentinel:
            address = sentinel.sentinel_get_master_addr_by_name(SERVICE)
        return int(address[1]) if address else None

    def replica(self) -> int:
        """The port of the server that is not the named master."""
        return next(port for port in self.servers if port != self.named_master())

    def revive_replica(self) -> None:
        """Start the server a failover left dead again, as the named master's replica, and wait until every
        sentinel sees it in sync."""
        master, replica = self.named_master(), self.replica()
        if not self.servers[replica].alive():
            args = ("--replicaof", "127.0.0.1", str(master))
            self.servers[replica] = start_redis(replica, workdir=self.workdir, extra_args=args)
        wait_for(lambda: all(_sees_everyone(port) for port in self.sentinels), 30, "a revived replica", 0.1)

    def stop(self) -> None:
        for process in [*self.sentinels.values(), *self.servers.values()]:
            process.stop()


def start_sentinel_set(workdir: Path, *, down_after_ms: int = 1000, failover_timeout_ms: int = 5000) -> SentinelSet:
    """A master, its replica and three sentinels watching them (quorum 2), every sentinel aware of the
    others and of the replica in sync before this returns."""
    master_port, replica_port = free_port(), free_port()
    ha = SentinelSet({}, {}, workdir)
    try:
        ha.servers[master_port] = start_redis(master_port, workdir=workdir)
        args = ("--replicaof", "127.0.0.1", str(master_port))
        ha.servers[replica_port] = start_redis(replica_port, workdir=workdir, extra_args=args)
        for port in (free_port() for _ in range(3)):
            conf = workdir / f"sentinel-{port}.conf"  # Sentinel rewrites its own configuration file
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {workdir}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {master_port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {down_after_ms}\n"
                f"sentinel failover-timeout {SERVICE} {failover_timeout_ms}\n"
            )
            argv = ["redis-server", str(conf), "--sentinel"]
            ha.sentinels[port] = Process(f"sentinel:{port}", argv, log_path=workdir / f"sentinel-{port}.log")
            ha.sentinels[port].wait_until(lambda port=port: _redis_ping(port))
        wait_for(lambda: all(_sees_everyone(port) for port in ha.sentinels), 30, "sentinels see each other", 0.1)
    except BaseException:
        ha.stop()
        raise
    return ha


def revive_cluster(nodes: dict[int, Process], workdir: Path, **node_settings) -> None:
    """Start every dead node of a cluster again (each rejoins as a replica of the master that replaced it)
    and wait until all are in sync."""
    revived = [port for port, node in nodes.items() if not node.alive()]
    for port in revived:
        nodes[port] = start_cluster_node(port, workdir=workdir, **node_settings)
    wait_for(lambda: all(_replicating(port) for port in revived), 30, "revived cluster nodes in sync", 0.1)


def _replicating(port: int) -> bool:
    try:
        answer = role(port)
    except redis.RedisError:
        return False
    return answer[0] == b"slave" and answer[3] == b"connected"


def _sees_everyone(sentinel_port: int) -> bool:
    with redis.Redis(port=sentinel_port, socket_timeout=1) as sentinel:
        state = sentinel.sentinel_master(SERVICE)
        replicas = sentinel.sentinel_slaves(SERVICE)
    in_sync = [r for r in replicas if r.get("master-link-status") == "ok" and not r["is_sdown"]]
    return state["num-other-sentinels"] >= 2 and bool(in_sync)
