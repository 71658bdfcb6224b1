"""dask-gateway-server configuration: per-user passwords, clusters as local processes.

    dask-gateway-server -f cluster/gateway_config.py

Users log in with HTTP Basic auth (``dask_gateway.BasicAuth(user, password)``) checked
against ``$GATEWAY_USERS``, a JSON file ``{"user": "<sha256 hex of the password>"}``
readable only by the gateway's account (``python -c "import hashlib, getpass;
print(hashlib.sha256(getpass.getpass().encode()).hexdigest())"``). A user sees, connects
to and stops only their own clusters; each cluster's scheduler takes TLS connections with
credentials the gateway makes for that cluster and hands only to its owner.

Clusters run as local processes of the gateway's account (``UnsafeLocalBackend``: every
user's scheduler and workers run as one OS user, so the separation between users is the
gateway's, not the operating system's). ``GATEWAY_BACKEND=local`` selects
``LocalBackend`` (the gateway runs as root and starts each cluster as its user's own OS
account, which must exist). Clusters bind to 127.0.0.1; the gateway listens on
``$GATEWAY_ADDRESS`` (HTTP API, default 127.0.0.1:8000) and ``$GATEWAY_TCP_ADDRESS``
(schedulers' TLS, default 127.0.0.1:8786). Serve the API over HTTPS
(``c.Proxy.tls_cert``, ``c.Proxy.tls_key``) before listening beyond loopback: Basic auth
sends the password with every request.

``tests/cluster/test_gateway.py`` starts this file with ``dask-gateway-server`` on
loopback and runs ``cluster/gateway_cluster.py``'s ``connect`` for two users.
"""

import base64
import hashlib
import hmac
import json
import os
import sys

from dask_gateway_server.auth import Authenticator, User, unauthorized


class PasswordFileAuthenticator(Authenticator):
    """HTTP Basic auth against the users and password hashes of ``$GATEWAY_USERS``."""

    async def authenticate(self, request):
        """The request's user, or 401 when its name or password is not in the file."""
        kind, _, token = request.headers.get("Authorization", "").partition(" ")
        if kind != "Basic":
            raise unauthorized("Basic")
        user, _, password = base64.b64decode(token).decode().partition(":")
        with open(os.environ["GATEWAY_USERS"]) as f:
            expected = json.load(f).get(user, "")
        given = hashlib.sha256(password.encode()).hexdigest()
        if not expected or not hmac.compare_digest(given, expected):
            raise unauthorized("Basic")
        return User(user)


c = get_config()  # noqa: F821 (dask-gateway-server defines it when it reads this file)
c.DaskGateway.authenticator_class = PasswordFileAuthenticator
c.DaskGateway.backend_class = (
    "dask_gateway_server.backends.local.LocalBackend"
    if os.environ.get("GATEWAY_BACKEND") == "local"
    else "dask_gateway_server.backends.local.UnsafeLocalBackend")
c.Proxy.address = os.environ.get("GATEWAY_ADDRESS", "127.0.0.1:8000")
c.Proxy.tcp_address = os.environ.get("GATEWAY_TCP_ADDRESS", "127.0.0.1:8786")
c.DaskGateway.address = "127.0.0.1:0"  # the gateway's private API (its proxy's peer)
# the environment with randsvm-dist (this one by default); single-threaded workers
python = os.environ.get("GATEWAY_PYTHON", sys.executable)
c.ClusterConfig.scheduler_cmd = [python, "-m", "distributed.cli.dask_scheduler"]
c.ClusterConfig.worker_cmd = [python, "-m", "distributed.cli.dask_worker"]
c.ClusterConfig.worker_cores = 1
c.ClusterConfig.worker_threads = 1
c.ClusterConfig.worker_memory = os.environ.get("GATEWAY_WORKER_MEMORY", "4 G")
c.ClusterConfig.cluster_max_workers = int(os.environ.get("GATEWAY_MAX_WORKERS", "32"))
c.ClusterConfig.idle_timeout = 3600  # an unused cluster is stopped after an hour
c.ClusterConfig.environment = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                               "MKL_NUM_THREADS": "1"}
