"""The cluster's certificates, made per cluster (EC P-256, one day) with Python's ``cryptography`` when it is
installed (it is no dependency of the plugin), else with the ``openssl`` command: a CA, the
API server's serving certificate (for 127.0.0.1, the node's address and the ``kubernetes`` service's names),
an admin client (``system:masters``: the harness, the controller manager, the scheduler, the API server's calls
to the kubelet), the kubelet's client (``system:node:<node>`` in ``system:nodes``, for the Node authorizer),
and the service-account signing key. Written as PEM files into one folder; nothing is kept across clusters.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_streamchaos.machine import commands
from pytest_streamchaos.stack.base import StackError

if TYPE_CHECKING:
    from cryptography import x509

Key = Any  #: an EC private key of ``cryptography``
#: the Kubernetes service's DNS names (the API server's certificate names them)
DNS = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
       "kubernetes.default.svc.cluster.local")


def make(folder: Path, *, node: str, addresses: list[str], service_ip: str, tool: str | None = None) -> None:
    """Write into ``folder``: ``ca.crt``/``ca.key``, ``apiserver.crt``/``.key`` (for ``addresses``, the
    ``service_ip`` and :data:`DNS`), ``admin.crt``/``.key``, ``kubelet.crt``/``.key`` (for ``node``),
    ``sa.key``/``sa.pub``; with ``tool`` ("cryptography" or "openssl"; default: the first available)."""
    folder.mkdir(parents=True, exist_ok=True)
    ips = list(dict.fromkeys([*addresses, service_ip]))
    if tool is None:
        try:
            import cryptography  # noqa: F401
            tool = "cryptography"
        except ImportError:
            tool = "openssl"
    (_with_cryptography if tool == "cryptography" else _with_openssl)(folder, node, ips)


def _name(cn: str, org: str | None = None) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _write_key(path: Path, key: Key) -> None:
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _cert(subject: x509.Name, key: Key, issuer: x509.Name, issuer_key: Key, *, ca: bool = False,
          server: bool = False, sans: list[x509.GeneralName] | None = None) -> x509.Certificate:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID

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
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _with_cryptography(folder: Path, node: str, ips: list[str]) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("streamchaos-k8s-ca")
    _write_key(folder / "ca.key", ca_key)
    _write_cert(folder / "ca.crt", _cert(ca_name, ca_key, ca_name, ca_key, ca=True))
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in DNS]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in ips]
    for stem, (cn, org) in _leaves(node).items():
        key = ec.generate_private_key(ec.SECP256R1())
        _write_key(folder / f"{stem}.key", key)
        server = stem == "apiserver"
        _write_cert(folder / f"{stem}.crt", _cert(_name(cn, org), key, ca_name, ca_key, server=server,
                                                   sans=sans if server else None))
    sa = ec.generate_private_key(ec.SECP256R1())
    _write_key(folder / "sa.key", sa)
    (folder / "sa.pub").write_bytes(sa.public_key().public_bytes(serialization.Encoding.PEM,
                                                                 serialization.PublicFormat.SubjectPublicKeyInfo))


def _leaves(node: str) -> dict[str, tuple[str, str | None]]:
    """Each leaf certificate's file stem: its common name and organisation."""
    return {"apiserver": ("kube-apiserver", None), "admin": ("streamchaos-admin", "system:masters"),
            "kubelet": (f"system:node:{node}", "system:nodes")}


def _with_openssl(folder: Path, node: str, ips: list[str]) -> None:
    openssl = commands.need("openssl", "apt-get install openssl (or pip install cryptography)", StackError)

    def run(*args: str) -> None:
        commands.run([openssl, *args], timeout=60, error=StackError)

    def key(stem: str) -> str:
        path = str(folder / f"{stem}.key")
        run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path)
        (folder / f"{stem}.key").chmod(0o600)
        return path

    ca_key = key("ca")
    cnf = folder / "openssl.cnf"  # no system config: the CA's extensions are these alone
    cnf.write_text("[req]\ndistinguished_name = dn\nx509_extensions = ca\nprompt = no\n[dn]\n[ca]\n"
                   "basicConstraints = critical,CA:TRUE\nkeyUsage = critical,digitalSignature,keyCertSign,cRLSign\n"
                   "subjectKeyIdentifier = hash\n")
    run("req", "-config", str(cnf), "-x509", "-new", "-key", ca_key, "-subj", "/CN=streamchaos-k8s-ca", "-days", "1",
        "-out", str(folder / "ca.crt"))
    for stem, (cn, org) in _leaves(node).items():
        leaf_key = key(stem)
        csr, ext = folder / f"{stem}.csr", folder / f"{stem}.ext"
        subject = f"/CN={cn}" + (f"/O={org}" if org else "")
        run("req", "-config", str(cnf), "-new", "-key", leaf_key, "-subj", subject, "-out", str(csr))
        lines = ["basicConstraints=critical,CA:FALSE"]
        if stem == "apiserver":
            names = [f"DNS:{d}" for d in DNS] + [f"IP:{a}" for a in ips]
            lines += ["extendedKeyUsage=serverAuth", "subjectAltName=" + ",".join(names)]
        else:
            lines.append("extendedKeyUsage=clientAuth")
        ext.write_text("\n".join(lines) + "\n")
        run("x509", "-req", "-in", str(csr), "-CA", str(folder / "ca.crt"), "-CAkey", ca_key, "-CAcreateserial",
            "-days", "1", "-sha256", "-extfile", str(ext), "-out", str(folder / f"{stem}.crt"))
        csr.unlink()
        ext.unlink()
    (folder / "ca.srl").unlink(missing_ok=True)
    cnf.unlink()
    run("pkey", "-in", key("sa"), "-pubout", "-out", str(folder / "sa.pub"))
