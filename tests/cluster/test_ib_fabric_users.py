"""The IB restart refuses while something rides the fabric, on the emulated cluster: real
ansible-playbook (remediate.yml) over real SSH, real Slurm, fake HCAs (tests/scenarios/ipoib-nfs.yml).
n01 has /home over NFS through ib0, n02 is reached by SSH on an IPoIB interface named eth0; both
flap on mlx5_6. Neither is restarted, both stay drained, the refusal names the mount / address;
with the mount gone, the same module's pre-check lets the restart through."""

import json
import os

import pytest

from tests.cluster.test_ladder_e2e import INCIDENT, WIDE, acting_calls, node, remediate
from tests.cluster.test_rung_hw import mod

SCN = "ipoib-nfs"
N1, N2 = "gpu-r7-n01", "gpu-r7-n02"


def _audit(work, host):
    lines = [json.loads(x) for x in open(os.path.join(work, "state", "audit.jsonl"))]
    return [a for a in lines if a.get("host") == host and a["rung"] == "ib_restart"]


@pytest.mark.slow  # the full tier: reading the fabric's users and refusing the restart for them are unit-tested in the fast tier
def test_ipoib_nfs_mount_and_ssh_over_ipoib_refuse_the_ib_restart_and_the_nodes_stay_drained(
        cluster_factory, tmp_path):
    tb = cluster_factory(SCN, hosts=5, slurm=True)   # 2 sick of 5: under the correlated-failure share
    # the host's own view: the mount table and the route out of ib0
    r = tb.ssh(N1, "grep ' /home ' /opt/fakehw/proc/mounts; cat /opt/fakehw/sys/class/net/ib0/type")
    assert "10.0.0.5:/export/home /home nfs4" in r.stdout and r.stdout.split()[-1] == "32", r
    work = str(tmp_path)
    run = remediate(tb, work, "act", *(WIDE + ["-e", "confirm=yes"]))
    assert run.proc.returncode == 0, run.text[-6000:]
    for h in (N1, N2):
        assert run.host_plan(h)["decision"] == "act", run.host_plan(h)
        assert not [c for c in acting_calls(tb, h) if len(c) > 2 and c[1] == "restart"], acting_calls(tb, h)
        assert not [c for c in acting_calls(tb, h) if c[0].endswith("modprobe")], acting_calls(tb, h)
        assert "DRAIN" in node(tb, h)["state"], node(tb, h)
        assert tb.state(h)["hcas"][6]["fault"] == "flapping"          # nothing was restarted
    [a1] = _audit(work, N1)
    assert a1["result"] == "refused", a1
    assert ("NFS mount /home (10.0.0.5:/export/home, proto=tcp, clientaddr=10.0.0.21) from 10.0.0.5 over IPoIB "
            "interface ib0 (route 10.0.0.0/24 dev ib0)") in a1["message"], a1
    [a2] = _audit(work, N2)
    assert a2["result"] == "refused", a2
    assert "the controller's SSH address %s is on IPoIB interface eth0" % tb.addr(N2) in a2["message"], a2
    assert INCIDENT in node(tb, N1)["reason"]

    # the same node with the mount gone: the pre-check lets the restart through, and it mends the port
    tb.update_state(N1, lambda st: st.update(mounts=[]))
    _p, res = mod(tb, tmp_path, N1, "ib_restart", {"node_drained": True, "expected_ports": ["mlx5_6"],
                                                    "sysfs_root": "/opt/fakehw/sys", "proc_root": "/opt/fakehw/proc",
                                                    "wait": 30, "soak": 2})
    assert not res["failed"] and res["fabric"]["blockers"] == [] and res["verified"], res
    assert res["fabric"]["ib_interfaces"] == ["ib0"] and res["fabric"]["network_mounts"] == []
    assert [c for c in acting_calls(tb, N1) if len(c) > 2 and c[1] == "restart"] == [["systemctl", "restart",
                                                                                      "openibd"]]
