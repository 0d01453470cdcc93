"""The one-node Kubernetes' files, without starting anything: the OCI archive ``ctr images import`` loads,
the certificates, containerd's and the kubelet's configuration, and the one-line refusal before a build."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import tarfile
from pathlib import Path

import pytest
import tomllib
from cryptography import x509
from cryptography.x509.oid import NameOID

from pytest_streamchaos.stack.k8s import build, cluster, config, images, pki


def test_the_image_archive_is_a_consistent_reproducible_oci_layout(tmp_path: Path) -> None:
    first, second = tmp_path / "a.tar", tmp_path / "b.tar"
    for path in (first, second):
        images.write_archive(path, "streamchaos.local/x:1", {"x": b"\x7fELF binary"}, entrypoint=["/x"])
    assert first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]

    def blob(descriptor: dict) -> bytes:
        data = files[f"blobs/sha256/{descriptor['digest'].split(':')[1]}"]
        assert len(data) == descriptor["size"] and "sha256:" + hashlib.sha256(data).hexdigest() == descriptor["digest"]
        return data

    (entry,) = json.loads(files["index.json"])["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == "streamchaos.local/x:1"
    manifest = json.loads(blob(entry))
    conf, layer = json.loads(blob(manifest["config"])), blob(manifest["layers"][0])
    assert conf["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]
    assert conf["config"]["Entrypoint"] == ["/x"]
    with tarfile.open(fileobj=__import__("io").BytesIO(layer)) as tar:
        (member,) = tar.getmembers()
        assert member.name == "x" and member.mode == 0o755


@pytest.mark.parametrize("tool", ["cryptography", "openssl"])
def test_the_certificates_chain_to_the_ca_and_name_the_api_servers_addresses(tmp_path: Path, tool: str) -> None:
    pki.make(tmp_path, node="n1", addresses=["127.0.0.1", "10.244.0.1"], service_ip="10.96.0.1", tool=tool)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{s}.{e}" for s in ("ca", "apiserver", "admin", "kubelet") for e in ("crt", "key")) + ["sa.key", "sa.pub"]
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    certs = {s: x509.load_pem_x509_certificate((tmp_path / f"{s}.crt").read_bytes())
             for s in ("apiserver", "admin", "kubelet")}
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for cert in certs.values():
        cert.verify_directly_issued_by(ca)
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    sans = certs["apiserver"].extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.IPAddress)) == {ipaddress.ip_address(a) for a in
                                                             ("127.0.0.1", "10.244.0.1", "10.96.0.1")}
    assert "kubernetes.default.svc" in sans.get_values_for_type(x509.DNSName)
    kubelet = certs["kubelet"].subject
    assert kubelet.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:n1"
    assert kubelet.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:nodes"
    assert (tmp_path / "sa.key").stat().st_mode & 0o077 == 0


def test_containerd_and_the_kubelet_keep_to_the_run_folder_and_cgroupfs(tmp_path: Path) -> None:
    lay = config.Layout(tmp_path)
    toml = tomllib.loads(config.containerd_toml(lay))
    cri = toml["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == images.PAUSE_IMAGE and cri["netns_mounts_under_state_dir"] is True
    runc = cri["containerd"]["runtimes"]["runc"]["options"]
    assert runc["SystemdCgroup"] is False and cri["restrict_oom_score_adj"] is False
    for path in (toml["root"], toml["state"], toml["grpc"]["address"], toml["ttrpc"]["address"], runc["Root"],
                 cri["cni"]["conf_dir"], toml["plugins"]["io.containerd.internal.v1.opt"]["path"]):
        assert Path(path).is_relative_to(tmp_path), path
    kubelet = json.loads(config.kubelet_config(lay, address="10.244.0.1", port=1, healthz_port=2))
    assert (kubelet["cgroupDriver"], kubelet["failCgroupV1"], kubelet["failSwapOn"]) == ("cgroupfs", False, False)
    assert kubelet["containerRuntimeEndpoint"] == f"unix://{lay.containerd_socket}"
    net = json.loads(config.cni_conflist(lay, "br0", "10.244.0.0/24", "10.244.0.1"))["plugins"][0]
    assert (net["bridge"], net["ipMasq"]) == ("br0", False)


def test_a_host_that_may_not_lower_oom_scores_gets_them_restricted(tmp_path: Path) -> None:
    """Without CAP_SYS_RESOURCE runc's init dies writing the kubelet's -998 for a sandbox: containerd must
    raise them to its own, and the kubelet must not ask for -999 for itself."""
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapEff:\t000001fffeffffff\nCapBnd:\t000001ffffffffff\n")  # all but bit 24
    assert not config.lowers_oom_scores(str(status))
    status.write_text("CapEff:\t000001ffffffffff\n")
    assert config.lowers_oom_scores(str(status))
    lay = config.Layout(tmp_path)
    toml = tomllib.loads(config.containerd_toml(lay, restrict_oom_score_adj=True))
    assert toml["plugins"]["io.containerd.grpc.v1.cri"]["restrict_oom_score_adj"] is True
    kubelet = json.loads(config.kubelet_config(lay, address="10.244.0.1", port=1, healthz_port=2, oom_score_adj=0))
    assert kubelet["oomScoreAdj"] == 0


def test_a_cluster_before_the_build_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "is_built", lambda names=(): False)
    why = cluster.missing()
    assert why is not None and "\n" not in why and "prepare --for k8s" in why
