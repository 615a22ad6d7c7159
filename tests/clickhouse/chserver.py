"""chserver.py - a throw-away clickhouse-server on loopback for tests.

Each Server gets a temporary directory (config, users, data, logs) and
free ports on 127.0.0.1 only; stop() (or the context manager's exit, also
on failure) terminates it and removes the directory.  Python 3 standard
library only.
"""

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SERVER_BINS = ["/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server"]


def server_binary():
    for b in SERVER_BINS:
        if os.access(b, os.X_OK):
            return [b]
    ch = shutil.which("clickhouse")
    return [ch, "server"] if ch else None


def ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port():
    """A port free now, below the kernel's ephemeral range: the server binds
    it later, and a port the kernel hands out (port 0) can meanwhile become
    the source port of another test's connection (clickhouse-server then
    exits "Address already in use": seen in CI)."""
    lo, _ = ephemeral_range()
    lo = min(lo, 32768)
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        port = rng.randrange(lo // 2, lo)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/server.log</log>
    <errorlog>{d}/server.err.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <interserver_http_port>{inter}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/data/tmp/</tmp_path>
  <user_files_path>{d}/data/user_files/</user_files_path>
  <format_schema_path>{d}/data/format_schemas/</format_schema_path>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mlock_executable>false</mlock_executable>
  <remote_servers>{remote}</remote_servers>
</yandex>
"""

USERS = """<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
"""


def cluster_xml(name, tcp_ports):
    shards = "".join("<shard><replica><host>127.0.0.1</host><port>%d</port></replica></shard>"
                     % p for p in tcp_ports)
    return "<%s>%s</%s>" % (name, shards, name)


class Server:
    def __init__(self, tag="ch", remote="", dir=None):
        self.dir = dir or tempfile.mkdtemp(prefix="alloctrace-%s." % tag)
        os.makedirs(self.dir, exist_ok=True)
        self.http, self.tcp, self.inter = free_port(), free_port(), free_port()
        self.remote = remote
        self.proc = None
        self.start_seconds = None

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.http

    def write_config(self):
        with open(os.path.join(self.dir, "config.xml"), "w") as f:
            f.write(CONFIG.format(d=self.dir, http=self.http, tcp=self.tcp, inter=self.inter,
                                  remote=self.remote))
        with open(os.path.join(self.dir, "users.xml"), "w") as f:
            f.write(USERS)

    def start(self, timeout=60):
        self.write_config()
        t0 = time.monotonic()
        self.proc = subprocess.Popen(server_binary() + ["--config-file=" + os.path.join(
            self.dir, "config.xml")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd=self.dir)
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError("clickhouse-server exited with %d: %s" % (
                    self.proc.returncode, self.log_tail()))
            try:
                with urllib.request.urlopen(self.url + "/ping", timeout=1) as r:
                    if r.read().startswith(b"Ok"):
                        self.start_seconds = time.monotonic() - t0
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.05)
        raise RuntimeError("clickhouse-server did not answer in %d s: %s" % (
            timeout, self.log_tail()))

    def log_tail(self):
        p = os.path.join(self.dir, "server.err.log")
        try:
            with open(p) as f:
                return f.read()[-2000:]
        except OSError:
            return "(no log)"

    def query(self, sql, **settings):
        """The answer as text (TSV unless sql says FORMAT); raises on error."""
        params = urllib.parse.urlencode(settings)
        req = urllib.request.Request(self.url + "/" + ("?" + params if params else ""),
                                     data=sql.encode(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            raise RuntimeError("query failed: %s\n%s" % (e.read().decode()[:2000], sql))

    def rows(self, sql, **settings):
        """Rows of a query as lists of strings (TSV)."""
        out = self.query(sql + "\nFORMAT TabSeparated", **settings)
        return [line.split("\t") for line in out.splitlines()]

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, keep_dir=False):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
