"""TLS for Dask connections: ``distributed.Security`` from files, and certificates to start.

A scheduler started with TLS (``dask scheduler --protocol tls --tls-ca-file ca.pem
--tls-cert cert.pem --tls-key key.pem``) accepts only clients and workers whose certificate
the CA signed. randsvm-dist clients take the same three files from ``--tls-ca-file``,
``--tls-cert`` and ``--tls-key`` or, without flags, from Dask's own configuration
(``distributed.comm.tls.ca-file``, ``.client.cert``, ``.client.key``, e.g. the environment
variables ``DASK_DISTRIBUTED__COMM__TLS__CA_FILE`` ...), which ``distributed.Client`` reads
itself. ``python -m randsvm_dist.engine.tls DIR`` writes a CA and one certificate/key pair
for a private cluster (see cluster/README.md).
"""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path

from randsvm_dist.exceptions import ParameterError


def make_security(ca_file: str | None = None, cert: str | None = None,
                  key: str | None = None):
    """A ``distributed.Security`` requiring TLS with these files, or None when none is given
    (then Dask's configuration applies).

    Args:
        ca_file: PEM file of the CA that signed the cluster's certificates.
        cert, key: PEM certificate and private key of this client.

    Returns:
        ``distributed.Security`` or None.

    Raises:
        ParameterError: only some of the three are given, or a file does not exist.
    """
    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if not any(given.values()):
        return None
    missing = [k for k, v in given.items() if not v]
    if missing:
        raise ParameterError(f"TLS needs --tls-ca-file, --tls-cert and --tls-key; missing "
                             f"{', '.join(missing)}")
    for flag, path in given.items():
        if not os.path.isfile(path):
            raise ParameterError(f"{flag} {path}: no such file")
    from distributed import Security

    return Security(tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key,
                    tls_scheduler_cert=cert, tls_scheduler_key=key, tls_worker_cert=cert,
                    tls_worker_key=key, require_encryption=True)


def _new_certificates(hosts: tuple[str, ...], days: int) -> tuple[bytes, bytes, bytes]:
    """A new CA and one certificate it signs for ``hosts``, valid ``days`` days.

    Returns:
        (CA certificate, certificate, its private key), PEM bytes (the key in PKCS8).
    """
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("randsvm-dist CA"))
          .issuer_name(name("randsvm-dist CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now)
          .not_valid_after(now + datetime.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    alt = []
    for h in hosts:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            alt.append(x509.DNSName(h))
    cert = (x509.CertificateBuilder().subject_name(name("dask-internal"))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return (ca.public_bytes(pem), cert.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def write_certificates(directory: str | os.PathLike, hosts: tuple[str, ...] = ("localhost",),
                       days: int = 365) -> dict[str, str]:
    """Write ``ca.pem``, ``cert.pem`` and ``key.pem`` (mode 0600) for a private cluster: a
    new CA and one certificate it signs, for every role (scheduler, workers, clients).

    Args:
        directory: created if missing.
        hosts: DNS names / IP addresses the certificate is valid for.
        days: validity.

    Returns:
        {"ca": path, "cert": path, "key": path}.

    Raises:
        ImportError: the ``cryptography`` package is missing (``pip install randsvm-dist[tls]``).
    """
    try:
        import cryptography  # noqa: F401
    except ImportError as exc:
        raise ImportError("writing TLS certificates needs the 'cryptography' package: "
                          "pip install 'randsvm-dist[tls]'") from exc
    ca, cert, key = _new_certificates(hosts, days)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    files = {"ca": (out / "ca.pem", ca), "cert": (out / "cert.pem", cert),
             "key": (out / "key.pem", key)}
    for path, data in files.values():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return {k: str(p) for k, (p, _) in files.items()}


def main(argv: list[str] | None = None) -> int:
    """``python -m randsvm_dist.engine.tls DIR [HOST ...]``: write a CA and a certificate.

    Returns:
        0.
    """
    import argparse

    p = argparse.ArgumentParser(prog="python -m randsvm_dist.engine.tls",
                                description="write ca.pem, cert.pem and key.pem (a private "
                                            "CA and one certificate it signs) into DIR")
    p.add_argument("directory", metavar="DIR")
    p.add_argument("hosts", nargs="*", metavar="HOST", default=["localhost", "127.0.0.1"],
                   help="names/addresses the certificate is valid for")
    p.add_argument("--days", type=int, default=365)
    args = p.parse_args(argv)
    paths = write_certificates(args.directory, tuple(args.hosts), days=args.days)
    print("\n".join(f"{k}: {v}" for k, v in paths.items()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
