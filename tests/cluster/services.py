"""Real services for the cluster tests, started in a private directory and stopped after:
a one-node SLURM (munged, slurmctld, slurmd), an sshd serving two "hosts" (127.0.0.2,
127.0.0.3) and a Dask Gateway. Each ``start`` raises ``Unavailable`` with the reason
(what is missing, or the daemon's log) when the service cannot be installed or started;
the fixtures turn that into a skip with that reason."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Unavailable(RuntimeError):
    """The service cannot be installed or started here (the message says why)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def need(*programs: str, hint: str) -> None:
    """Raise ``Unavailable`` unless every program is on PATH (or in /usr/sbin)."""
    missing = [p for p in programs if not shutil.which(p, path=os.environ.get("PATH", "")
                                                        + ":/usr/sbin:/sbin")]
    if missing:
        raise Unavailable(f"{', '.join(missing)} not installed ({hint})")


def need_root(what: str) -> None:
    """Raise ``Unavailable`` when not running as root."""
    if os.geteuid() != 0:
        raise Unavailable(f"{what} needs root (the tests start it as root: CI does)")


def program(name: str) -> str:
    """Full path of an installed program (also /usr/sbin, off a user's PATH)."""
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def log_tail(path: Path, lines: int = 15) -> str:
    """The last lines of a log file, or a note that there is none."""
    if not path.exists():
        return f"(no {path.name})"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def wait_until(check, timeout: float, what: str, log: Path | None = None) -> None:
    """Poll ``check()`` every 0.2 s until true; ``Unavailable`` (with the log) after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise Unavailable(f"{what} did not start within {timeout:.0f} s"
                              + (f"; {log.name}:\n{log_tail(log)}" if log else ""))
        time.sleep(0.2)


def stop_pid_file(pid_file: Path, timeout: float = 20) -> None:
    """SIGTERM the process whose id the file holds (one this module started), SIGKILL it
    after ``timeout`` seconds."""
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


class Slurm:
    """A one-node SLURM for this host: its own munge key and socket, a ``slurm.conf`` with
    free ports on 127.0.0.1 and this host's CPUs and memory (``slurmd -C``), one
    partition ``debug``. Commands see it through ``SLURM_CONF`` (``env()``)."""

    def __init__(self, root: Path):
        self.root = root
        self.conf = root / "slurm.conf"
        self.log = root / "log"

    def env(self) -> dict[str, str]:
        """The environment of a user of this cluster (``SLURM_CONF`` set)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, cwd: Path | None = None, check: bool = True,
            env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run a SLURM command (``sbatch``, ``squeue``, ``scancel``...) on this cluster."""
        return subprocess.run([program(argv[0]), *argv[1:]], cwd=cwd, check=check,
                              capture_output=True, text=True, timeout=timeout,
                              env={**self.env(), **(env or {})})

    def start(self) -> Slurm:
        """Start munged, slurmctld and slurmd; ``Unavailable`` if they cannot run here."""
        need("munged", "slurmctld", "slurmd", "sbatch",
             hint="apt-get install slurm-wlm munge")
        need_root("slurmd (it starts jobs as their users)")
        for sub in ("state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        key = self.root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self._run_daemon([program("munged"), f"--socket={self.root}/munge.sock",
                          f"--key-file={key}", f"--pid-file={self.root}/munged.pid",
                          f"--log-file={self.log}/munged.log",
                          f"--seed-file={self.root}/munge.seed", "--force"],
                         self.log / "munged.log")
        self.conf.write_text(self._config())
        self._run_daemon([program("slurmctld"), "-f", str(self.conf)],
                         self.log / "slurmctld.log")
        self._run_daemon([program("slurmd"), "-f", str(self.conf)], self.log / "slurmd.log")
        wait_until(lambda: self.run("sinfo", "-h", "-o", "%T", check=False).stdout.strip()
                   == "idle", 60, "the SLURM node", self.log / "slurmd.log")
        return self

    def _run_daemon(self, argv: list[str], log: Path) -> None:
        """Start a daemon (it forks into the background); ``Unavailable`` if it fails."""
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                              env=self.env())
        if done.returncode:
            raise Unavailable(f"{Path(argv[0]).name} did not start: {done.stderr.strip()}"
                              f"\n{log_tail(log)}")

    def _config(self) -> str:
        """``slurm.conf``: this host as the one node (``slurmd -C``), loopback ports."""
        node = subprocess.run([program("slurmd"), "-C"], capture_output=True, text=True,
                              check=True).stdout.splitlines()[0]
        name = node.split()[0].split("=", 1)[1]
        r = self.root
        return "\n".join([
            "ClusterName=randsvmtest", f"SlurmctldHost={name}(127.0.0.1)",
            f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
            "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge",
            "CredType=cred/munge", f"AuthInfo=socket={r}/munge.sock",
            f"StateSaveLocation={r}/state", f"SlurmdSpoolDir={r}/spool",
            f"SlurmctldPidFile={r}/slurmctld.pid", f"SlurmdPidFile={r}/slurmd.pid",
            f"SlurmctldLogFile={self.log}/slurmctld.log",
            f"SlurmdLogFile={self.log}/slurmd.log",
            # no cgroups needed (containers): process groups track a job's processes
            "ProctrackType=proctrack/pgid", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "MpiDefault=none", "ReturnToService=2", "KillWait=5", "MinJobAge=600",
            f"{node} NodeAddr=127.0.0.1 State=UNKNOWN",
            f"PartitionName=debug Nodes={name} Default=YES MaxTime=INFINITE State=UP", ""])

    def jobs(self) -> dict[str, str]:
        """Job id -> state of every job SLURM still lists."""
        out = self.run("squeue", "-h", "-o", "%i %T", check=False).stdout
        return dict(line.split() for line in out.splitlines() if line.strip())

    def stop(self) -> None:
        """Cancel every job, then stop slurmd, slurmctld and munged."""
        if self.conf.exists():
            self.run("scancel", "--partition", "debug", check=False)
            deadline = time.monotonic() + 30
            while self.jobs() and time.monotonic() < deadline:
                time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            stop_pid_file(self.root / f"{name}.pid")


def python_env(extra: dict | None = None) -> dict[str, str]:
    """This test run's environment for processes the services start: the package (this
    checkout first) and this interpreter's scripts first on PATH."""
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PYTHONPATH": str(ROOT),
            "PATH": f"{bindir}:{os.environ.get('PATH', '')}", **(extra or {})}


def scheduler_file_address(path: Path) -> str:
    """The scheduler address a ``--scheduler-file`` holds."""
    return json.loads(path.read_text())["address"]


class Sshd:
    """An sshd of its own (its host key, port and authorized keys) listening on
    127.0.0.2 and 127.0.0.3: two "hosts" reached with a key of this test's, whose host
    keys are checked against a ``known_hosts`` file written here."""

    HOSTS = ("127.0.0.2", "127.0.0.3")

    def __init__(self, root: Path):
        self.root = root
        self.port = free_port(self.HOSTS[0])
        self.key = root / "id_ed25519"
        self.known_hosts = root / "known_hosts"
        self.proc: subprocess.Popen | None = None

    def connect_options(self) -> dict:
        """asyncssh's options for these hosts: this user, the key, the checked host keys."""
        return {"port": self.port, "username": os.environ.get("USER", "root"),
                "client_keys": [str(self.key)], "known_hosts": str(self.known_hosts)}

    def start(self) -> Sshd:
        """Keys, ``sshd_config``, sshd in the foreground; ``Unavailable`` if it cannot."""
        need("sshd", "ssh-keygen", hint="apt-get install openssh-server")
        need_root("sshd (it logs users in)")
        host_key = self.root / "host_ed25519"
        for path in (host_key, self.key):
            subprocess.run([program("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-f",
                            str(path)], check=True)
        (self.root / "authorized_keys").write_text(self.key.with_suffix(".pub").read_text())
        (self.root / "authorized_keys").chmod(0o600)
        public = host_key.with_suffix(".pub").read_text().split()[:2]
        self.known_hosts.write_text("".join(f"[{h}]:{self.port} {' '.join(public)}\n"
                                            for h in self.HOSTS))
        env = python_env()
        conf = self.root / "sshd_config"
        conf.write_text("\n".join([
            *(f"ListenAddress {h}:{self.port}" for h in self.HOSTS),
            f"HostKey {host_key}", f"PidFile {self.root}/sshd.pid",
            f"AuthorizedKeysFile {self.root}/authorized_keys",
            "PubkeyAuthentication yes", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
            # StrictModes refuses any authorized_keys under /tmp (world-writable); this
            # one is mode 0600 in pytest's private (0700) directory
            "UsePAM no", "StrictModes no",
            # the login environment of a host where randsvm-dist is installed
            f"SetEnv PYTHONPATH={env['PYTHONPATH']} PATH={env['PATH']}", ""]))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation
        log = self.root / "sshd.log"
        self.proc = subprocess.Popen([program("sshd"), "-D", "-f", str(conf), "-E", str(log)])
        wait_until(self._listening, 30, "sshd", log)
        return self

    def _listening(self) -> bool:
        """sshd accepts connections on both hosts (and is still running)."""
        if self.proc.poll() is not None:
            raise Unavailable(f"sshd exited ({self.proc.returncode}): "
                              f"{log_tail(self.root / 'sshd.log')}")
        for host in self.HOSTS:
            try:
                socket.create_connection((host, self.port), timeout=1).close()
            except OSError:
                return False
        return True

    def stop(self) -> None:
        """Stop sshd (and with it the sessions it serves)."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Gateway:
    """``dask-gateway-server -f cluster/gateway_config.py`` on loopback ports, with the
    users and passwords given (their hashes in a private ``GATEWAY_USERS`` file)."""

    def __init__(self, root: Path, users: dict[str, str]):
        self.root = root
        self.users = users
        self.address = f"http://127.0.0.1:{free_port()}"
        self.proxy_address = f"gateway://127.0.0.1:{free_port()}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> Gateway:
        """Start the gateway; ``Unavailable`` when dask-gateway-server is missing or did
        not come up."""
        try:
            import dask_gateway  # noqa: F401
            import dask_gateway_server  # noqa: F401
        except ImportError as e:
            raise Unavailable(f"{e.name} not installed (pip install dask-gateway "
                              "'dask-gateway-server[local]', or randsvm-dist[cluster])") from e
        import hashlib

        users = self.root / "users.json"
        users.write_text(json.dumps({u: hashlib.sha256(p.encode()).hexdigest()
                                     for u, p in self.users.items()}))
        users.chmod(0o600)
        log = self.root / "gateway.log"
        env = python_env({"GATEWAY_USERS": str(users),
                          "GATEWAY_ADDRESS": self.address.split("//")[1],
                          "GATEWAY_TCP_ADDRESS": self.proxy_address.split("//")[1],
                          "GATEWAY_WORKER_MEMORY": "2 G"})
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "dask_gateway_server", "-f",
                 str(ROOT / "cluster" / "gateway_config.py")], cwd=self.root, env=env,
                stdout=out, stderr=subprocess.STDOUT)
        wait_until(self._healthy, 60, "dask-gateway-server", log)
        return self

    def _healthy(self) -> bool:
        """The gateway answers its health check (and is still running)."""
        import urllib.request

        if self.proc.poll() is not None:
            raise Unavailable(f"dask-gateway-server exited ({self.proc.returncode}): "
                              f"{log_tail(self.root / 'gateway.log')}")
        try:
            with urllib.request.urlopen(f"{self.address}/api/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the gateway (it stops the clusters it started)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
