"""The cluster's certificates, made per cluster with Python's ``cryptography`` (EC P-256, one day): a CA, the
API server's serving certificate (for 127.0.0.1, the node's address and the ``kubernetes`` service's names),
an admin client (``system:masters``: the harness, the controller manager, the scheduler, the API server's calls
to the kubelet), the kubelet's client (``system:node:<node>`` in ``system:nodes``, for the Node authorizer),
and the service-account signing key. Written as PEM files into one folder; nothing is kept across clusters.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Key = ec.EllipticCurvePrivateKey


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _write_key(path: Path, key: Key) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _cert(subject: x509.Name, key: Key, issuer: x509.Name, issuer_key: Key, *, ca: bool = False,
          server: bool = False, sans: list[x509.GeneralName] | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
    else:
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def make(folder: Path, *, node: str, addresses: list[str], service_ip: str) -> None:
    """Write into ``folder``: ``ca.crt``/``ca.key``, ``apiserver.crt``/``.key`` (for ``addresses``, the
    ``service_ip`` and the ``kubernetes`` service's DNS names), ``admin.crt``/``.key``, ``kubelet.crt``/``.key``
    (for ``node``), ``sa.key``/``sa.pub``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("streamchaos-k8s-ca")
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    _write_key(folder / "ca.key", ca_key)
    _write_cert(folder / "ca.crt", ca)
    dns = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
           "kubernetes.default.svc.cluster.local"]
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in dict.fromkeys([*addresses, service_ip])]
    leaves = {"apiserver": (_name("kube-apiserver"), True, sans),
              "admin": (_name("streamchaos-admin", "system:masters"), False, None),
              "kubelet": (_name(f"system:node:{node}", "system:nodes"), False, None)}
    for stem, (subject, server, names) in leaves.items():
        key = ec.generate_private_key(ec.SECP256R1())
        _write_key(folder / f"{stem}.key", key)
        _write_cert(folder / f"{stem}.crt", _cert(subject, key, ca_name, ca_key, server=server, sans=names))
    sa = ec.generate_private_key(ec.SECP256R1())
    _write_key(folder / "sa.key", sa)
    (folder / "sa.pub").write_bytes(sa.public_key().public_bytes(serialization.Encoding.PEM,
                                                                 serialization.PublicFormat.SubjectPublicKeyInfo))
