"""The files that configure the cluster's parts, all in its run folder: containerd's config (its own root,
state and sockets, the CRI plugin with the local pause image, cgroupfs), the CNI network (a local bridge,
no masquerading), the kubeconfigs and the kubelet's configuration. Written as JSON where YAML is read
(JSON is YAML), so no YAML writer is needed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.stack.k8s.images import PAUSE_IMAGE

#: Debian's containernetworking-plugins
CNI_BIN = "/usr/lib/cni"
NETWORK = "streamchaos"
#: the capability a process needs to lower an ``oom_score_adj`` (``CAP_SYS_RESOURCE``)
CAP_SYS_RESOURCE = 24


def lowers_oom_scores(status: str = "/proc/self/status") -> bool:
    """Whether this process (and so the containerd and kubelet it starts) may lower an ``oom_score_adj``:
    whether ``CAP_SYS_RESOURCE`` is among its effective capabilities. A sandboxed machine may drop it from
    the bounding set even for root; the kubelet then asks for -998 for each pod's sandbox and -997 for a
    Guaranteed pod's containers, and runc's init dies writing them (``can't get final child's PID from
    pipe: EOF``)."""
    with open(status) as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    return False


@dataclass(frozen=True)
class Layout:
    """Where each part keeps its files under the cluster's run folder ``run``."""

    run: Path

    @property
    def pki(self) -> Path:
        return self.run / "pki"

    @property
    def logs(self) -> Path:
        return self.run / "logs"

    @property
    def containerd(self) -> Path:
        return self.run / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd / "containerd.sock"

    @property
    def kubelet(self) -> Path:
        return self.run / "kubelet"

    @property
    def cni_conf(self) -> Path:
        return self.run / "cni" / "net.d"

    @property
    def etcd(self) -> Path:
        return self.run / "etcd"

    def kubeconfig(self, who: str) -> Path:
        return self.run / f"{who}.kubeconfig"


def containerd_toml(layout: Layout, *, restrict_oom_score_adj: bool = False) -> str:
    """containerd 1.6's config (version 2): everything of its own under the run folder (root, state, sockets,
    runc's state, the network namespaces' mounts, the opt plugin), the CRI plugin's sandbox the imported
    pause image, runc with cgroupfs (no systemd here). ``restrict_oom_score_adj``: raise the kubelet's
    negative OOM score adjustments to containerd's own (on a host that may not lower them, see
    :func:`lowers_oom_scores`)."""
    c = layout.containerd
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{c / 'root'}"
state = "{c / 'state'}"
disabled_plugins = ["io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "{layout.containerd_socket}"

[ttrpc]
  address = "{layout.containerd_socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{c / 'opt'}"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  restrict_oom_score_adj = {str(restrict_oom_score_adj).lower()}

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{c / 'runc'}"

[{cri}.cni]
  bin_dir = "{CNI_BIN}"
  conf_dir = "{layout.cni_conf}"
  max_conf_num = 1
"""


def cni_conflist(layout: Layout, bridge: str, subnet: str, gateway: str) -> str:
    """One bridge network: pods on ``bridge`` in ``subnet``, the bridge their gateway at ``gateway``; no
    masquerading (their traffic stays on the machine; the cluster's own FORWARD rules drop the rest); the
    addresses handed out recorded in the run folder."""
    return json.dumps({"cniVersion": "0.4.0", "name": NETWORK, "plugins": [
        {"type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": False, "hairpinMode": True,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": subnet, "gateway": gateway}]],
                  "dataDir": str(layout.run / "cni" / "ipam")}},
    ]}, indent=1)


def kubeconfig(server: str, ca: Path, cert: Path, key: Path, user: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "streamchaos", "preferences": {},
        "clusters": [{"name": "streamchaos", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "streamchaos", "context": {"cluster": "streamchaos", "user": user}}],
    }, indent=1)


def kubelet_config(layout: Layout, *, address: str, port: int, healthz_port: int, oom_score_adj: int = -999) -> str:
    """The kubelet's configuration: cgroupfs, cgroup v1 allowed, swap allowed, no static pods, served on the
    node's bridge address; image garbage collection and disk-pressure eviction off in effect (a test machine's
    disk is often fuller than a node's: the locally imported images must stay). ``oom_score_adj``: the
    kubelet's own (its default -999; 0 where it may not be lowered)."""
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": address, "port": port, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": healthz_port,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(layout.pki / "ca.crt")}},
        "authorization": {"mode": "Webhook"}, "oomScoreAdj": oom_score_adj,
        "cgroupDriver": "cgroupfs", "failCgroupV1": False, "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "podLogsDir": str(layout.run / "pod-logs"),
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "serializeImagePulls": False, "registerNode": True, "rotateCertificates": False,
        "clusterDomain": "cluster.local", "resolvConf": "/etc/resolv.conf",
        "nodeStatusUpdateFrequency": "2s", "syncFrequency": "5s", "fileCheckFrequency": "5s",
    }, indent=1)
