"""Reaching a Dask scheduler at an address, every step bounded: the address checked, a
quick TCP probe that tells a Dask scheduler from an HTTP or SSH server or silence, then the
Client's handshake (TLS when the address asks for it)."""

from __future__ import annotations

import socket

from randsvm_dist.exceptions import ClusterError

CONNECT_TIMEOUT = "10s"  # the Client's handshake
PROBE_TIMEOUT = 5.0  # seconds for the TCP connect and for a first answer


def split_address(address: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a scheduler address (``tcp://host:8786``, ``host:8786``).

    Raises:
        ClusterError: not of the form ``tcp://HOST:PORT`` or ``tls://HOST:PORT``.
    """
    scheme, sep, rest = str(address).partition("://")
    if not sep:
        scheme, rest = "tcp", str(address)
    host, colon, port = rest.rstrip("/").rpartition(":")
    host = host.strip("[]")
    if scheme not in ("tcp", "tls") or not colon or not host or not port.isdigit() \
            or not 0 < int(port) < 65536:
        raise ClusterError(f"{address!r} is not a Dask scheduler address; expected "
                           "tcp://HOST:PORT or tls://HOST:PORT (e.g. tcp://127.0.0.1:8786)")
    return scheme, host, int(port)


def probe(address: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Check, in seconds, that a Dask scheduler may answer at ``address``: something accepts
    TCP connections there and, for ``tcp://``, what answers speaks Dask's protocol (not HTTP,
    e.g. the dashboard port, nor SSH).

    Raises:
        ClusterError: naming the address and what answered (nothing, HTTP, SSH, silence).
    """
    scheme, host, port = split_address(address)
    with _open_socket(address, host, port, timeout) as sock:
        if scheme != "tcp":
            return  # TLS: the handshake itself is bounded by the Client's timeout
        first = _first_bytes(sock, timeout)
        if first is None:
            return  # reset: let the Client report it
        if first.startswith(b"SSH-"):
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: it answered "
                               "but is not a Dask scheduler (an SSH server)")
        if first:
            return
        reply = _http_reply(sock)
    if reply.startswith(b"HTTP/"):
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: it answered but "
                           "is not a Dask scheduler (HTTP: a dashboard or web server?); the "
                           "scheduler's port is the one `dask scheduler` prints as "
                           "'Scheduler at', usually 8786")
    raise ClusterError(f"cannot reach the Dask scheduler at {address}: it accepts "
                       f"connections but did not answer as a Dask scheduler within "
                       f"{timeout:g} s")


def _open_socket(address: str, host: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection to ``host:port`` within ``timeout`` seconds.

    Args:
        address: the scheduler address, for the error message.
        host, port: where to connect.
        timeout: seconds for the connect.

    Returns:
        the connected socket (the caller closes it).

    Raises:
        ClusterError: naming the address and why it failed (host not found, connection
            refused, no answer, another OS error).
    """
    try:
        return socket.create_connection((host, port), timeout=timeout)
    except socket.gaierror as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: host {host!r} "
                           f"not found ({e.strerror})") from None
    except ConnectionRefusedError:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: nothing listens "
                           "there (connection refused); start one (randsvm-dist cluster "
                           "start) or fix --scheduler / $RANDSVM_DIST_SCHEDULER") from None
    except TimeoutError:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: no answer within "
                           f"{timeout:g} s (a firewall, or the wrong host?)") from None
    except OSError as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                           f"{e.strerror or e}") from None


def _first_bytes(sock: socket.socket, timeout: float) -> bytes | None:
    """What the server sends first, unasked, within ``timeout`` seconds (a Dask scheduler
    speaks first: its handshake).

    Returns:
        up to 8 bytes; b"" when it stayed silent; None when the connection failed (e.g.
        reset).
    """
    sock.settimeout(timeout)
    try:
        return sock.recv(8)
    except TimeoutError:
        return b""
    except OSError:
        return None


def _http_reply(sock: socket.socket) -> bytes:
    """The first bytes a silent server answers to an HTTP request (b"": no answer)."""
    try:
        sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        return sock.recv(16)
    except OSError:
        return b""


def _tls_configured(security) -> bool:
    if security is not None:
        return bool(getattr(security, "tls_client_cert", None)
                    or getattr(security, "tls_ca_file", None))
    import dask

    return bool(dask.config.get("distributed.comm.tls.ca-file", None)
                or dask.config.get("distributed.comm.tls.client.cert", None))


def connect(address: str, security=None):
    """A client of the scheduler at ``address``, every step bounded: a quick TCP probe
    (:func:`probe`), then the Client's handshake within ``CONNECT_TIMEOUT``.

    Args:
        address: e.g. "tcp://host:8786" or "tls://host:8786".
        security: a ``distributed.Security`` (TLS; see ``randsvm_dist.engine.tls``); None:
            Dask's configuration.

    Raises:
        ClusterError: it cannot be reached, it is not a Dask scheduler, or TLS is asked for
            without certificates (each naming the address and what answered).
    """
    scheme, _, _ = split_address(address)
    if scheme == "tls" and not _tls_configured(security):
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: a TLS address "
                           "but no certificates were given; pass --tls-ca-file, --tls-cert "
                           "and --tls-key (or set Dask's distributed.comm.tls.* "
                           "configuration)")
    probe(address)
    from distributed import Client

    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False,
                      security=security)
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                           f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") \
            from None
