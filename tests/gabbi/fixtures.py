"""The fixtures upstream's gabbi files name, made over HTTP.

Each class has the name a YAML file uses.  Where upstream's fixture builds
its world in-process, these empty allotment's database and write the same
providers, inventories, traits, aggregates and allocations through the API
(:mod:`tests.gabbi.builder`), and set the same environment variables the
YAML files read (``$ENVIRON['RP_UUID']`` ...).  Which server a file runs
against (policy, CORS) is chosen by the runner from these names
(:data:`CONFIG_OF`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

from gabbi import fixture

from tests.gabbi.builder import Builder


class Target:
    """The server the file being run talks to, and how to empty its database."""

    url: str = ""
    clean: Callable[[], None] = staticmethod(lambda: None)


TARGET = Target()

# Fixture name -> the server configuration it needs (default otherwise).
CONFIG_OF = {"OpenPolicyFixture": "open", "SecureRBACPolicyFixture": "secure",
             "CORSFixture": "cors"}

_RANDOM_IDS = ("RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2",
               "PROJECT_ID", "ADMIN_PROJECT_ID", "SERVICE_PROJECT_ID", "USER_ID",
               "PROJECT_ID_ALT", "USER_ID_ALT", "INSTANCE_UUID", "MIGRATION_UUID",
               "CONSUMER_UUID", "PARENT_PROVIDER_UUID", "ALT_PARENT_PROVIDER_UUID")


def _new() -> str:
    return str(uuid.uuid4())


class APIFixture(fixture.GabbiFixture):
    """An empty service, and the names every file may use."""

    def start_fixture(self) -> None:
        TARGET.clean()
        for name in _RANDOM_IDS:
            os.environ[name] = _new()
        for suffix in ("", "1", "2"):
            os.environ[f"CUSTOM_RES_CLASS{suffix}"] = f"CUSTOM_IRON_NFV{suffix}"
        self.build = Builder(TARGET.url)
        self.make()

    def make(self) -> None:
        """What a fixture writes beyond the empty service."""

    def stop_fixture(self) -> None:
        pass


class OpenPolicyFixture(APIFixture):
    """Runs against a server whose policy lets anyone do anything."""


class SecureRBACPolicyFixture(APIFixture):
    """Runs against a server enforcing the new policy defaults."""


class LegacyRBACPolicyFixture(APIFixture):
    """Runs against a server enforcing the deprecated defaults."""


class CORSFixture(APIFixture):
    """Runs against a server with CORS on for http://valid.example.com."""


class AllocationFixture(APIFixture):
    """One provider (VCPU 10, DISK_GB 2048 in steps of 10) and three
    consumers' allocations on it, two users of one project."""

    def make(self) -> None:
        b = self.build
        os.environ["ALT_USER_ID"] = _new()
        project, user, alt_user = (os.environ[k] for k in ("PROJECT_ID", "USER_ID",
                                                           "ALT_USER_ID"))
        rp = os.environ["RP_UUID"]
        b._call("POST", "/resource_providers", {"name": os.environ["RP_NAME"], "uuid": rp},
                version="1.20")
        b.inventory(rp, "DISK_GB", 2048, step_size=10, min_unit=10, max_unit=1000)
        b.inventory(rp, "VCPU", 10, max_unit=10)
        for env, who, resources in (("CONSUMER_0", user, {"DISK_GB": 1000}),
                                    ("CONSUMER_ID", user, {"VCPU": 6}),
                                    ("ALT_CONSUMER_ID", alt_user, {"DISK_GB": 20, "VCPU": 1})):
            os.environ[env] = _new()
            b.allocate(rp, os.environ[env], who, project, resources)
        os.environ["ALT_RP_UUID"] = _new()
        os.environ["ALT_RP_NAME"] = _new()


class SharedStorageFixture(APIFixture):
    """Two compute nodes (two NUMA nodes with a PF each) and two sharing
    disk pools, all in one aggregate."""

    def make(self) -> None:
        b = self.build
        agg = os.environ["AGG_UUID"] = _new()
        made = {name: b.provider(name, agg) for name in ("cn1", "cn2", "ss", "ss2")}
        for host in ("1", "2"):
            for numa in ("1", "2"):
                made[f"numa{host}_{numa}"] = b.provider(f"numa{host}_{numa}",
                                                        parent=made[f"cn{host}"])
        for host in ("1", "2"):
            for numa in ("1", "2"):
                made[f"pf{host}_{numa}"] = b.provider(f"pf{host}_{numa}",
                                                      parent=made[f"numa{host}_{numa}"])
        for name, rp in made.items():
            os.environ[f"{name.upper()}_UUID"] = rp
        for cn in ("cn1", "cn2"):
            b.inventory(made[cn], "VCPU", 24, allocation_ratio=16.0)
            b.inventory(made[cn], "MEMORY_MB", 128 * 1024, allocation_ratio=1.5)
        b.traits(made["cn1"], "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
        b.inventory(made["cn2"], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
        for ss in ("ss", "ss2"):
            b.inventory(made[ss], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            b.traits(made[ss], "MISC_SHARES_VIA_AGGREGATE")
        for pf in ("pf1_1", "pf1_2", "pf2_1", "pf2_2"):
            b.inventory(made[pf], "SRIOV_NET_VF", 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    """Two resourceless compute nodes with two 24-VCPU NUMA nodes each; a
    disk pool shared with both hosts (aggregate A), another with one NUMA
    node (aggregate C); the second host also in aggregate B."""

    def make(self) -> None:
        b = self.build
        a, bb, c = (_new() for _ in range(3))
        os.environ.update(AGGA_UUID=a, AGGB_UUID=bb, AGGC_UUID=c)
        cn1, cn2 = b.provider("cn1", a), b.provider("cn2", a, bb)
        ss1, ss2 = b.provider("ss1", a), b.provider("ss2", c)
        numas = [b.provider("numa1_1", c, parent=cn1), b.provider("numa1_2", parent=cn1),
                 b.provider("numa2_1", parent=cn2), b.provider("numa2_2", parent=cn2)]
        os.environ.update(CN1_UUID=cn1, CN2_UUID=cn2, SS1_UUID=ss1, SS2_UUID=ss2)
        for name, rp in zip(("NUMA1_1", "NUMA1_2", "NUMA2_1", "NUMA2_2"), numas, strict=True):
            os.environ[f"{name}_UUID"] = rp
        for rp in numas:
            b.inventory(rp, "VCPU", 24, allocation_ratio=16.0)
        for ss in (ss1, ss2):
            b.inventory(ss, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            b.traits(ss, "MISC_SHARES_VIA_AGGREGATE")


class NonSharedStorageFixture(APIFixture):
    """Three compute nodes with local disk, no sharing."""

    def make(self) -> None:
        b = self.build
        for name in ("AGGA_UUID", "AGGB_UUID", "AGGC_UUID"):
            os.environ[name] = _new()
        nodes = [b.provider(f"cn{i}") for i in (1, 2, 3)]
        for i, rp in enumerate(nodes, 1):
            os.environ[f"CN{i}_UUID"] = rp
        for rp in nodes:
            b.inventory(rp, "VCPU", 24)
            b.inventory(rp, "MEMORY_MB", 128 * 1024)
            b.inventory(rp, "DISK_GB", 2000)


class GranularFixture(APIFixture):
    """Three compute nodes of different capabilities, two sharing disk pools
    and a sharing network pool, over aggregates A, B and C."""

    def make(self) -> None:
        b = self.build
        b.resource_class("CUSTOM_NET_MBPS")
        a, bb, c = (_new() for _ in range(3))
        os.environ.update(AGGA=a, AGGB=bb, AGGC=c)
        left = os.environ["CN_LEFT"] = b.provider("cn_left", a)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500), ("VGPU", 8),
                          ("SRIOV_NET_VF", 8), ("CUSTOM_NET_MBPS", 4000)):
            b.inventory(left, rc, total)
        b.traits(left, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA",
                 "HW_NIC_DCB_PFC", "CUSTOM_FOO")
        middle = os.environ["CN_MIDDLE"] = b.provider("cn_middle", a, bb)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("SRIOV_NET_VF", 8),
                          ("CUSTOM_NET_MBPS", 4000)):
            b.inventory(middle, rc, total)
        b.traits(middle, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE",
                 "HW_NIC_ACCEL_TLS")
        right = os.environ["CN_RIGHT"] = b.provider("cn_right", bb, c)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500)):
            b.inventory(right, rc, total)
        b.inventory(right, "VGPU", 8, max_unit=2)
        b.traits(right, "HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD")
        disk1 = os.environ["SHR_DISK_1"] = b.provider("shr_disk_1", a)
        b.inventory(disk1, "DISK_GB", 1000)
        b.traits(disk1, "MISC_SHARES_VIA_AGGREGATE", "CUSTOM_DISK_SSD")
        disk2 = os.environ["SHR_DISK_2"] = b.provider("shr_disk_2", a, bb)
        b.inventory(disk2, "DISK_GB", 1000)
        b.traits(disk2, "MISC_SHARES_VIA_AGGREGATE")
        net = os.environ["SHR_NET"] = b.provider("shr_net", c)
        b.inventory(net, "SRIOV_NET_VF", 16)
        b.inventory(net, "CUSTOM_NET_MBPS", 40000)
        b.traits(net, "MISC_SHARES_VIA_AGGREGATE")


class NUMANetworkFixture(APIFixture):
    """A resourceless host with NUMA nodes, devices and network agents, and
    a plain host with NICs and PFs on two physical networks, both served by
    a sharing disk pool (see upstream's fixture of the same name)."""

    def hosts(self) -> tuple[str | None, str | None]:
        """The two compute nodes, if they are made before the rest."""
        return None, None

    def make(self) -> None:
        b = self.build
        agg = os.environ["AGGA_UUID"] = _new()
        ss1 = os.environ["SS1_UUID"] = b.provider("ss1", agg)
        b.traits(ss1, "MISC_SHARES_VIA_AGGREGATE")
        b.inventory(ss1, "DISK_GB", 2000)
        cn1, cn2 = self.hosts()
        cn1 = cn1 or b.provider("cn1", agg)
        b.aggregates(cn1, agg)
        b.traits(cn1, "COMPUTE_VOLUME_MULTI_ATTACH")
        os.environ["CN1_UUID"] = cn1
        numas = []
        for i in (0, 1):
            numa = b.provider(f"numa{i}", parent=cn1)
            b.traits(numa, "HW_NUMA_ROOT", *(["CUSTOM_FOO"] if i else []))
            b.inventory(numa, "VCPU", 4)
            numas.append(numa)
            os.environ[f"NUMA{i}_UUID"] = numa
        b.inventory(numas[0], "MEMORY_MB", 2048, min_unit=512, step_size=256)
        b.inventory(numas[1], "MEMORY_MB", 2048, min_unit=256, max_unit=1024)
        user, project = "numafx-user", "numafx-project"
        b.allocate(numas[0], _new(), user, project, {"VCPU": 2})
        fpga = os.environ["FPGA0_UUID"] = b.provider("fpga0", parent=numas[0])
        b.inventory(fpga, "FPGA", 1)
        pgpu = os.environ["PGPU0_UUID"] = b.provider("pgpu0", parent=numas[0])
        b.inventory(pgpu, "VGPU", 8)
        for i in (0, 1):
            fpga = os.environ[f"FPGA1_{i}_UUID"] = b.provider(f"fpga1_{i}", parent=numas[1])
            b.inventory(fpga, "FPGA", 1)
        agent = os.environ["SRIOV_AGENT_UUID"] = b.provider("sriov_agent", parent=cn1)
        b.traits(agent, "CUSTOM_VNIC_TYPE_DIRECT")
        for i in (1, 2):
            dev = os.environ[f"ESN{i}_UUID"] = b.provider(f"esn{i}", parent=agent)
            b.traits(dev, f"CUSTOM_PHYSNET{i}")
            b.inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 10000 * i)
        agent = os.environ["OVS_AGENT_UUID"] = b.provider("ovs_agent", parent=cn1)
        b.traits(agent, "CUSTOM_VNIC_TYPE_NORMAL")
        dev = os.environ["BR_INT_UUID"] = b.provider("br_int", parent=agent)
        b.traits(dev, "CUSTOM_PHYSNET0")
        b.inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)

        cn2 = cn2 or b.provider("cn2")
        b.aggregates(cn2, agg)
        b.inventory(cn2, "VCPU", 8)
        b.allocate(cn2, _new(), user, project, {"VCPU": 3})
        b.inventory(cn2, "MEMORY_MB", 2048, min_unit=1024, step_size=128)
        b.inventory(cn2, "DISK_GB", 1000)
        b.traits(cn2, "CUSTOM_FOO")
        os.environ["CN2_UUID"] = cn2
        nics = []
        for i in (1, 2, 3):
            nic = os.environ[f"NIC{i}_UUID"] = b.provider(f"nic{i}", parent=cn2)
            b.traits(nic, "CUSTOM_HW_NIC_ROOT")
            nics.append(nic)
        # (NIC, PF suffix, physical network, VFs)
        pfs = [(0, "1_1", 1, 4), (0, "1_2", 2, 4),
               (1, "2_1", 1, 2), (1, "2_2", 2, 2), (1, "2_3", 1, 2), (1, "2_4", 2, 2),
               (2, "3_1", 1, 8)]
        for nic, suffix, net, vfs in pfs:
            pf = os.environ[f"PF{suffix}_UUID"] = b.provider(f"pf{suffix}", parent=nics[nic])
            b.traits(pf, f"CUSTOM_PHYSNET{net}")
            b.inventory(pf, "CUSTOM_VF", vfs)


class DeepNUMANetworkFixture(NUMANetworkFixture):
    """The same, with the two compute nodes under two parents of one
    grandparent, all without resources."""

    def hosts(self) -> tuple[str | None, str | None]:
        b = self.build
        grandparent = b.provider("gp1")
        p1, p2 = b.provider("p1", parent=grandparent), b.provider("p2", parent=grandparent)
        return b.provider("cn1", parent=p1), b.provider("cn2", parent=p2)


_VNIC_SRIOV = ("CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
               "CUSTOM_VNIC_TYPE_MACVTAP")


class NeutronQoSMultiSegmentFixture(APIFixture):
    """Four compute trees as Neutron reports them with minimum bandwidth and
    packet rate on multi-segment networks: an OVS agent with bridges and an
    SR-IOV agent with PFs under each host."""

    # host -> ([(bridge, bandwidth, physnet)], [(pf, bandwidth, physnet)])
    HOSTS = {
        "compute0": ([("br-ex", 5000, "OTHER")], [("enp129s0f0", 10000, "OTHER")]),
        "compute1": ([("br-ex", 5000, "MSN_S1")], [("enp129s0f0", 10000, "MSN_S1")]),
        "compute2": ([("br-ex", 5000, "MSN_S2")], [("enp129s0f0", 10000, "MSN_S2")]),
        "compute3": ([("br-ex", 1000, "MSN_S1"), ("br-ex2", 1000, "MSN_S2")],
                     [("enp129s0f0", 1000, "MSN_S1"), ("enp129s0f1", 1000, "MSN_S2")]),
    }

    def make(self) -> None:
        b = self.build
        sriov_agents = {}
        for host, (bridges, pfs) in self.HOSTS.items():
            cn = os.environ[host] = b.provider(host)
            for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500)):
                b.inventory(cn, rc, total)
            ovs = os.environ[f"{host}:ovs_agent"] = b.provider(
                f"{host}:Open vSwitch agent", parent=cn)
            b.inventory(ovs, "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000)
            b.traits(ovs, "CUSTOM_VNIC_TYPE_NORMAL")
            for bridge, bandwidth, physnet in bridges:
                br = os.environ[f"{host}:{bridge.replace('-', '_')}"] = b.provider(
                    f"{host}:Open vSwitch agent:{bridge}", parent=ovs)
                b.inventory(br, "NET_BW_EGR_KILOBIT_PER_SEC", bandwidth)
                b.inventory(br, "NET_BW_IGR_KILOBIT_PER_SEC", bandwidth)
                b.traits(br, "CUSTOM_VNIC_TYPE_NORMAL", f"CUSTOM_PHYSNET_{physnet}")
            sriov = sriov_agents[host] = b.provider(f"{host}:NIC Switch agent", parent=cn)
            b.traits(sriov, *_VNIC_SRIOV)
            for n, (pf_name, bandwidth, physnet) in enumerate(pfs):
                pf = os.environ[f"{host}:pf{n}"] = b.provider(
                    f"{host}:NIC Switch agent:{pf_name}", parent=sriov)
                b.inventory(pf, "NET_BW_EGR_KILOBIT_PER_SEC", bandwidth)
                b.inventory(pf, "NET_BW_IGR_KILOBIT_PER_SEC", bandwidth)
                b.traits(pf, *_VNIC_SRIOV, f"CUSTOM_PHYSNET_{physnet}")
            os.environ[f"{host}:sriov_agent"] = sriov_agents[host]
        # Upstream's fixture names compute2's agent for compute3 too; its
        # files rely on that name as it is.
        os.environ["compute3:sriov_agent"] = sriov_agents["compute2"]  # noqa: SIM112
