"""library/ib_restart.py through the real ``ansible`` ad-hoc command on the local connection,
with the testbed's fake systemctl / modprobe (tests/testbed/fakehw.py: its own state file, command
log, sysfs and /proc trees) on PATH. Nothing of Ansible is mocked; only the IB stack is fake.
A background ``fakehw.py refresh --loop`` keeps the fake sysfs live, as the kernel does."""

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO, run_module
from tests.testbed import fakehw
from tests.testbed import scenario as scn

FAKEHW = os.path.join(REPO, "tests", "testbed", "fakehw.py")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
ALL_PORTS = ["mlx5_%d/1" % i for i in range(8)]


class Node(object):
    """One emulated node on this machine: fakehw state dir (sys/, proc/) + systemctl/modprobe on PATH."""

    def __init__(self, tmp_path, scenario, host):
        sc = scn.load(os.path.join(REPO, "tests", "scenarios", scenario + ".yml"))
        names = scn.host_names(sc)
        _job, states, _faults = scn.build(sc, names, {n: "10.201.0.%d" % (10 + i) for i, n in enumerate(names)})
        self.root = tmp_path / "fakehw"
        self.bin = tmp_path / "bin"
        for d in (self.root, self.bin, self.root / "sys", self.root / "proc"):
            d.mkdir()
        st = states[host]
        st["modules"] = list(fakehw.DEFAULT_MODULES)
        now = time.time()
        for h in st["hcas"]:      # the flap cycle starts now: every port is up for the next 16 s
            if h.get("fault_start") is not None:
                h["fault_start"] = now - 10 * fakehw.FLAP_PERIOD
        fakehw.save(st, str(self.root))
        fakehw.render_sysfs(st, str(self.root))
        open(self.root / "commands.log", "w").close()
        for tool in ("systemctl", "modprobe"):
            self.tool(tool, 'FAKEHW_ROOT=%s exec %s -S %s %s "$@"\n' % (self.root, PY, FAKEHW, tool))
        self.tmp = tmp_path
        self.refresher = None

    def tool(self, name, body):
        p = self.bin / name
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)

    def live(self, seconds=120):
        """Re-render sysfs every 0.2 s in the background (the kernel's live counters)."""
        env = dict(os.environ, FAKEHW_ROOT=str(self.root))
        self.refresher = subprocess.Popen([PY, "-S", FAKEHW, "refresh", "--loop", str(seconds)], env=env)

    def stop(self):
        if self.refresher is not None and self.refresher.poll() is None:
            os.kill(self.refresher.pid, signal.SIGTERM)
            self.refresher.wait(10)

    def state(self):
        return fakehw.load(str(self.root))

    def hca(self, name):
        return next(h for h in self.state()["hcas"] if h["name"] == name)

    def update(self, fn):
        st = fakehw.load(str(self.root))
        fn(st)
        fakehw.save(st, str(self.root))
        fakehw.render_sysfs(st, str(self.root))

    def calls(self):
        with open(self.root / "commands.log") as fh:
            return [json.loads(line)["argv"] for line in fh if line.strip()]

    def acting_calls(self):
        """systemctl / modprobe calls that change something (status reads are not counted)."""
        return [a for a in self.calls() if a[0] == "modprobe" or (a[0] == "systemctl" and a[1] != "status")]

    def restarts(self):
        return self.state()["services"]["openibd"].get("restarts", 0)

    def module(self, check=False, **args):
        """Run ib_restart on this 'node'; -> (result dict, CompletedProcess)."""
        args.setdefault("sysfs_root", str(self.root / "sys"))
        args.setdefault("proc_root", str(self.root / "proc"))
        res, proc = run_module(self.tmp, "ib_restart", args, check=check,
                               env={"PATH": "%s:%s" % (self.bin, os.environ["PATH"])})
        failed = "node-live | FAILED!" in proc.stdout
        assert failed == (proc.returncode != 0), proc.stdout[-2000:]
        res["failed"] = failed
        return res, proc


@pytest.fixture
def flapping(tmp_path):
    node = Node(tmp_path, "ib-flapping", "gpu-r1-n03")     # mlx5_6 flaps; openibd restart fixes it
    yield node
    node.stop()


@pytest.fixture
def bad_cable(tmp_path):
    node = Node(tmp_path, "bad-cable", "gpu-r1-n04")        # mlx5_0 has a bad cable; a restart does not help
    yield node
    node.stop()


def _holder(pid=4711, comm="python", device="uverbs0"):
    return {"pid": pid, "comm": comm, "device": device}


def test_refused_when_the_node_is_not_drained(flapping):
    res, _ = flapping.module(node_drained=False)
    assert res["failed"] and not res["changed"] and res["blocked_by"] == ["node_not_drained"]
    assert "not drained" in res["msg"]
    assert flapping.calls() == [] and flapping.restarts() == 0
    assert flapping.hca("mlx5_6")["fault"] == "flapping"


def test_refused_naming_the_dev_infiniband_holder_and_openibd_never_called(flapping):
    flapping.update(lambda st: st.update(ib_holders=[_holder(), _holder(4712, "ib_write_bw", "uverbs6")]))
    res, _ = flapping.module(node_drained=True)
    assert res["failed"] and not res["changed"] and res["blocked_by"] == ["dev_infiniband_held"]
    assert "/dev/infiniband is held by python (pid 4711) on uverbs0, ib_write_bw (pid 4712) on uverbs6" in res["msg"]
    assert [(h["pid"], h["comm"], h["devices"]) for h in res["holders"]] == [(4711, "python", ["uverbs0"]),
                                                                            (4712, "ib_write_bw", ["uverbs6"])]
    assert flapping.acting_calls() == [] and flapping.restarts() == 0
    assert "nvidia_peermem" in flapping.state()["modules"]


def test_fake_openibd_refuses_like_the_real_one_while_dev_infiniband_is_held(flapping):
    """The fake behaves as openibd's stop() does (mlnx-ofa_kernel ofed_scripts/openibd)."""
    flapping.update(lambda st: st.update(ib_holders=[_holder()]))
    env = dict(os.environ, PATH="%s:%s" % (flapping.bin, os.environ["PATH"]))
    p = subprocess.run(["systemctl", "restart", "openibd"], env=env, capture_output=True, text=True)
    assert p.returncode == 1 and "Job for openibd.service failed" in p.stderr
    s = subprocess.run(["systemctl", "status", "openibd"], env=env, capture_output=True, text=True)
    assert "Please stop the following applications still using Infiniband devices:" in s.stdout
    assert "python(4711) user root is using device uverbs0" in s.stdout
    assert "Error: Cannot unload the Infiniband driver stack due to the above issue(s)!" in s.stdout
    assert flapping.restarts() == 0 and flapping.hca("mlx5_6")["fault"] == "flapping"
    flapping.update(lambda st: st.update(ib_holders=[], modules=[m for m in st["modules"] if m != "nvidia_peermem"]))
    p = subprocess.run(["systemctl", "restart", "openibd"], env=env, capture_output=True, text=True)
    assert p.returncode == 0 and flapping.restarts() == 1 and flapping.hca("mlx5_6")["fault"] is None


@pytest.mark.parametrize("module,blocked,words", [
    ("ko2iblnd", "lustre_o2ib", "Lustre"), ("rpcrdma", "nfs_rdma", "NFS over RDMA"),
    ("nvmet_rdma", "nvme_rdma", "NVMe over RDMA target"), ("ib_srpt", "iser_srp_target", "SRP target")])
def test_storage_over_rdma_loaded_is_refused(flapping, module, blocked, words):
    flapping.update(lambda st: st["modules"].append(module))
    res, _ = flapping.module(node_drained=True)
    assert res["failed"] and res["blocked_by"] == [blocked] and res["modules"] == [module]
    assert "module %s is loaded" % module in res["msg"] and words in res["msg"]
    assert flapping.acting_calls() == [] and flapping.restarts() == 0


def test_every_blocker_is_named_at_once(flapping):
    flapping.update(lambda st: (st["modules"].append("ko2iblnd"),
                                st.update(ib_holders=[_holder(1632, "opensm", "umad0"), _holder(77, "ibacm", None)])))
    res, _ = flapping.module(node_drained=True)
    assert res["blocked_by"] == ["ib_daemons", "dev_infiniband_held", "lustre_o2ib"]
    assert "opensm (pid 1632)" in res["msg"] and "ibacm (pid 77)" in res["msg"]
    assert [h["pid"] for h in res["holders"]] == [1632]         # ibacm runs but holds nothing
    assert flapping.acting_calls() == []


def test_flapping_port_fixed_by_the_restart_is_verified(flapping):
    flapping.update(lambda st: st.update(ib_link_up_delay=3))
    flapping.live()
    res, _ = flapping.module(node_drained=True, wait=30, soak=2, expected_rate=400)
    assert not res["failed"] and res["changed"], res["msg"]
    assert res["verified"] is True and "verified" in res["msg"]
    assert res["expected_ports"] == ALL_PORTS
    assert all(v == {"state": "Active", "phys_state": "LinkUp", "rate_gbps": 400.0} for v in res["after"].values())
    assert res["still_rising"] == {} and "escalate" not in res
    assert res["waited_s"] >= 1                                  # the ports trained before they were Active
    assert res["peermem"] == {"loaded_before": True, "unloaded": True, "reloaded": True}
    # on the node, in order: peermem out, restart, peermem in
    assert flapping.acting_calls() == [["modprobe", "-r", "nvidia_peermem"], ["systemctl", "restart", "openibd"],
                                       ["modprobe", "nvidia_peermem"]]
    assert [a[-1] for a in res["commands"]] == ["nvidia_peermem", "openibd", "nvidia_peermem"]
    h = flapping.hca("mlx5_6")
    assert h["fault"] is None and h["fixed_by"] == "openibd restart" and flapping.restarts() == 1
    assert "nvidia_peermem" in flapping.state()["modules"]


def test_bad_cable_keeps_rising_after_the_restart_and_escalates_to_the_cable(bad_cable):
    bad_cable.live()
    res, _ = bad_cable.module(node_drained=True, wait=30, soak=2)
    assert not res["failed"] and res["changed"], res["msg"]
    assert bad_cable.restarts() == 1 and bad_cable.hca("mlx5_0")["fault"] == "bad_cable"
    assert res["after"]["mlx5_0/1"]["state"] == "Active"          # it came back ...
    assert res["verified"] is False and res["escalate"] == "cable"  # ... and kept erroring
    assert list(res["still_rising"]) == ["mlx5_0/1"]
    assert res["still_rising"]["mlx5_0/1"]["symbol_error"] > 0
    assert "NOT verified" in res["msg"] and "still rising" in res["msg"] and "cable" in res["msg"]


def test_check_mode_runs_nothing(flapping):
    before = flapping.state()
    res, _ = flapping.module(check=True, node_drained=True)
    assert not res["failed"] and not res["changed"], res["msg"]
    assert [a[1:] for a in res["would_run"]] == [["-r", "nvidia_peermem"], ["restart", "openibd"],
                                                ["nvidia_peermem"]]
    assert os.path.basename(res["would_run"][1][0]) == "systemctl"
    assert flapping.calls() == [] and flapping.state() == before


def test_check_mode_still_names_the_blockers(flapping):
    flapping.update(lambda st: st.update(ib_holders=[_holder()]))
    res, _ = flapping.module(check=True, node_drained=True)
    assert res["failed"] and res["blocked_by"] == ["dev_infiniband_held"] and "python (pid 4711)" in res["msg"]
    assert flapping.calls() == []


def test_without_peermem_reload_the_restart_breaks_half_way_and_escalates(flapping):
    """Why nvidia_peermem goes first: it holds ib_core, and openibd fails with the HCA modules gone."""
    res, _ = flapping.module(node_drained=True, reload_peermem=False, wait=5, soak=0)
    assert res["failed"] and res["blocked_by"] == ["restart_failed"] and res["changed"]
    assert "ib_core is in use by: nvidia_peermem" in res["msg"]
    assert res["escalate"] == "reboot" and set(res["not_back"]) == set(ALL_PORTS)
    assert flapping.acting_calls() == [["systemctl", "restart", "openibd"]]


def test_garbage_sysfs_is_a_clear_refusal(flapping):
    (flapping.root / "sys/class/infiniband/mlx5_3/ports/1/state").write_text("banana\x01\n")
    res, proc = flapping.module(node_drained=True)
    assert res["failed"] and res["blocked_by"] == ["ib_state_unreadable"], res["msg"]
    assert "mlx5_3/1" in res["msg"] and "banana" in res["msg"] and "not restarting on doubt" in res["msg"]
    assert flapping.calls() == []


def test_no_ib_devices_and_unknown_ports_are_clear_refusals(flapping, tmp_path):
    (tmp_path / "empty").mkdir()
    res, _ = flapping.module(node_drained=True, sysfs_root=str(tmp_path / "empty"))
    assert res["blocked_by"] == ["no_ib_devices"] and "no InfiniBand device" in res["msg"]
    res, _ = flapping.module(node_drained=True, expected_ports=["mlx5_9/1"])
    assert res["blocked_by"] == ["unknown_port"] and "mlx5_9/1" in res["msg"]
    res, _ = flapping.module(node_drained=True, expected_ports=["mlx5_0/1; reboot"])
    assert res["blocked_by"] == ["bad_expected_ports"]
    assert flapping.calls() == []


@pytest.mark.parametrize("args,blocked,words", [
    ({"unit": "openibd; reboot"}, "bad_parameter", "systemd unit name"),
    ({"wait": -1}, "bad_parameter", "between 0 and 3600"),
])
def test_bad_input_is_a_clear_message(flapping, args, blocked, words):
    res, _ = flapping.module(node_drained=True, **args)
    assert res["failed"] and res["blocked_by"] == [blocked] and words in res["msg"]
    assert flapping.calls() == []


# --------------------------------------------------------------------------- method=modules / auto
# An inbox rdma-core stack: no openibd unit ("ib_stack": "inbox"); the fake modprobe keeps kmod's
# dependency handling (modprobe -r also takes out dependencies nothing uses any more) and refusals.

RELOAD = [["modprobe", "-r", "nvidia_peermem"], ["modprobe", "-r", "mlx5_fwctl"], ["modprobe", "-r", "mlx5_ib"],
          ["modprobe", "mlx5_core"], ["modprobe", "mlx5_ib"], ["modprobe", "mlx5_fwctl"],
          ["modprobe", "nvidia_peermem"]]


def _inbox(node, *extra):
    node.update(lambda st: (st.update(ib_stack="inbox"), st["modules"].extend(extra)))
    return node


def _proc_modules(node):
    with open(node.root / "proc" / "modules") as fh:
        return {ln.split()[0]: ln.split()[2:4] for ln in fh if ln.strip()}


def _reloads(node):
    return node.state()["services"].get("openibd", {}).get("reloads", 0)


def test_auto_on_an_inbox_stack_reloads_the_driver_users_first_and_the_flapping_port_is_verified(flapping):
    _inbox(flapping, "mlx5_fwctl")
    assert _proc_modules(flapping)["mlx5_core"] == ["2", "mlx5_ib,mlx5_fwctl,"]
    flapping.update(lambda st: st.update(ib_link_up_delay=3))
    flapping.live()
    res, _ = flapping.module(node_drained=True, method="auto", wait=30, soak=2, expected_rate=400)
    assert not res["failed"] and res["changed"] and res["verified"] is True, res["msg"]
    assert res["method"] == "modules" and "no openibd unit" in res["method_reason"]
    assert "mlx5 driver (mlx5_fwctl, mlx5_ib, mlx5_core) reloaded; verified" in res["msg"]
    # systemctl was only asked whether openibd exists; modprobe -r mlx5_ib took mlx5_core along (unused)
    assert [a for a in flapping.calls() if a[0] == "systemctl"] == [["systemctl", "cat", "--no-pager", "openibd"]]
    assert [a for a in flapping.calls() if a[0] == "modprobe"] == RELOAD
    assert res["reload"] == {"unload": ["mlx5_fwctl", "mlx5_ib", "mlx5_core"], "unloaded": ["mlx5_fwctl", "mlx5_ib"],
                             "gone_with_others": ["mlx5_core"], "loaded": ["mlx5_core", "mlx5_ib", "mlx5_fwctl"],
                             "restored": [], "missing": []}
    assert res["peermem"] == {"loaded_before": True, "unloaded": True, "reloaded": True}
    assert all(v == {"state": "Active", "phys_state": "LinkUp", "rate_gbps": 400.0} for v in res["after"].values())
    assert res["waited_s"] >= 1                                  # the ports trained after the reload
    h = flapping.hca("mlx5_6")
    assert h["fault"] is None and h["fixed_by"] == "mlx5 driver reload"
    assert _reloads(flapping) == 1 and flapping.restarts() == 0
    mods = _proc_modules(flapping)
    assert {"mlx5_core", "mlx5_ib", "mlx5_fwctl", "mlxfw", "nvidia_peermem"} <= set(mods)
    assert mods["mlx5_core"][1] in ("mlx5_ib,mlx5_fwctl,", "mlx5_fwctl,mlx5_ib,")


def test_modules_method_does_not_mend_a_bad_cable(bad_cable):
    _inbox(bad_cable)
    bad_cable.live()
    res, _ = bad_cable.module(node_drained=True, method="modules", wait=30, soak=2)
    assert not res["failed"] and res["changed"], res["msg"]
    assert _reloads(bad_cable) == 1 and bad_cable.hca("mlx5_0")["fault"] == "bad_cable"
    assert res["after"]["mlx5_0/1"]["state"] == "Active"
    assert res["verified"] is False and res["escalate"] == "cable"
    assert list(res["still_rising"]) == ["mlx5_0/1"] and "NOT verified" in res["msg"]
    assert [a for a in bad_cable.calls() if a[0] == "systemctl"] == []


def test_fake_modprobe_refuses_like_kmod_and_a_reload_mends_a_flap(flapping):
    _inbox(flapping)
    env = dict(os.environ, PATH="%s:%s" % (flapping.bin, os.environ["PATH"]))

    def modprobe(*a):
        return subprocess.run(["modprobe"] + list(a), env=env, capture_output=True, text=True)
    p = modprobe("-r", "mlx5_core")
    assert p.returncode == 1 and p.stderr.strip() == "modprobe: FATAL: Module mlx5_core is in use."
    flapping.update(lambda st: st.update(ib_holders=[_holder()]))
    p = modprobe("-r", "mlx5_ib")
    assert p.returncode == 1 and "Module mlx5_ib is in use." in p.stderr
    assert {"mlx5_ib", "mlx5_core"} <= set(flapping.state()["modules"]) and _reloads(flapping) == 0
    flapping.update(lambda st: st.update(ib_holders=[]))
    assert modprobe("-r", "mlx5_ib").returncode == 0
    mods = flapping.state()["modules"]
    assert "mlx5_ib" not in mods and "mlx5_core" not in mods and "mlxfw" not in mods    # unused deps too
    assert "ib_uverbs" in mods and "ib_core" in mods                                       # rdma_ucm uses them
    assert (flapping.root / "sys/class/infiniband/mlx5_6/ports/1/state").read_text() == "1: DOWN\n"
    assert modprobe("-a", "mlx5_core", "mlx5_ib").returncode == 0
    assert _reloads(flapping) == 1 and flapping.hca("mlx5_6")["fault"] is None
    assert _proc_modules(flapping)["mlx5_core"] == ["1", "mlx5_ib,"]
    s = subprocess.run(["systemctl", "cat", "openibd"], env=env, capture_output=True, text=True)
    assert s.returncode == 1 and s.stderr.strip() == "No files found for openibd.service."


@pytest.mark.parametrize("change,blocked,words", [
    (lambda st: st.update(ib_holders=[_holder()]), ["dev_infiniband_held"], "python (pid 4711) on uverbs0"),
    (lambda st: st["modules"].append("ko2iblnd"), ["lustre_o2ib"], "Lustre"),
    (lambda st: (st["modules"].append("acme_nic_mon"), st.update(module_deps={"acme_nic_mon": ["mlx5_core"]})),
     ["mlx5_users"], "module(s) acme_nic_mon use mlx5_core"),
    (lambda st: st["modules"].append("mlx5_vdpa"), ["mlx5_users"], "module(s) mlx5_vdpa use mlx5_core"),
    (lambda st: st.update(module_refcount={"mlx5_ib": 1}), ["module_in_use"],
     "mlx5_ib (1 reference(s) no module accounts for)"),
    (lambda st: st.update(modules=[m for m in st["modules"] if m not in ("mlx5_core", "mlx5_ib")]),
     ["mlx5_not_loaded"], "mlx5_core is not a loaded module"),
])
def test_modules_method_refusals_are_named_and_nothing_is_unloaded(flapping, change, blocked, words):
    _inbox(flapping)
    flapping.update(change)
    res, _ = flapping.module(node_drained=True, method="modules")
    assert res["failed"] and not res["changed"] and res["blocked_by"] == blocked, res["msg"]
    assert words in res["msg"]
    assert flapping.calls() == [] and _reloads(flapping) == 0
    assert flapping.hca("mlx5_6")["fault"] == "flapping"


def test_a_reload_that_fails_half_way_loads_back_what_it_took_out(flapping):
    """A job grabs /dev/infiniband after the pre-check: modprobe -r mlx5_ib is refused; mlx5_fwctl, already
    out, is loaded back, nvidia_peermem too, and the failing step is named."""
    _inbox(flapping, "mlx5_fwctl")
    st = flapping.state()
    st["ib_holders"] = [_holder(5150, "torchrun", "uverbs6")]
    fakehw.save(st, str(flapping.root))                 # /proc not re-rendered: the scan does not see it
    res, _ = flapping.module(node_drained=True, method="modules", wait=2, soak=0)
    assert res["failed"] and res["changed"] and res["blocked_by"] == ["restart_failed"]
    assert "modprobe -r mlx5_ib failed (exit 1): modprobe: FATAL: Module mlx5_ib is in use." in res["msg"]
    assert "loaded back: mlx5_fwctl" in res["msg"]
    assert flapping.acting_calls() == [["modprobe", "-r", "nvidia_peermem"], ["modprobe", "-r", "mlx5_fwctl"],
                                       ["modprobe", "-r", "mlx5_ib"], ["modprobe", "mlx5_fwctl"],
                                       ["modprobe", "nvidia_peermem"]]
    assert res["peermem"]["reloaded"] is True and res["reload"]["loaded"] == ["mlx5_fwctl"]
    assert {"mlx5_fwctl", "mlx5_ib", "mlx5_core", "nvidia_peermem"} <= set(flapping.state()["modules"])
    assert _reloads(flapping) == 0 and flapping.hca("mlx5_6")["fault"] == "flapping"


def test_check_mode_of_the_modules_method_runs_nothing(flapping):
    _inbox(flapping, "mlx5_fwctl")
    before = flapping.state()
    res, _ = flapping.module(check=True, node_drained=True, method="modules")
    assert not res["failed"] and not res["changed"], res["msg"]
    assert [a[1:] for a in res["would_run"]] == [
        ["-r", "nvidia_peermem"], ["-r", "mlx5_fwctl"], ["-r", "mlx5_ib"], ["-r", "mlx5_core"],
        ["mlx5_core"], ["mlx5_ib"], ["mlx5_fwctl"], ["nvidia_peermem"]]
    assert all(os.path.basename(a[0]) == "modprobe" for a in res["would_run"])
    assert res["method"] == "modules" and "would reload the mlx5 driver" in res["msg"]
    assert flapping.calls() == [] and flapping.state() == before


def test_auto_picks_service_when_openibd_exists_and_runs_only_systemctl_cat_in_check_mode(flapping):
    res, _ = flapping.module(check=True, node_drained=True, method="auto")
    assert not res["failed"] and res["method"] == "service", res["msg"]
    assert "found the unit" in res["method_reason"]
    assert [a[1:] for a in res["would_run"]] == [["-r", "nvidia_peermem"], ["restart", "openibd"],
                                                ["nvidia_peermem"]]
    assert flapping.calls() == [["systemctl", "cat", "--no-pager", "openibd"]]


def test_auto_refuses_when_systemctl_cannot_tell(flapping):
    flapping.update(lambda st: st.update(broken_tools={"systemctl": {
        "message": "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
                   "Failed to connect to bus: Host is down", "rc": 1}}))
    res, _ = flapping.module(node_drained=True, method="auto")
    assert res["failed"] and res["blocked_by"] == ["method_undecided"] and "Failed to connect to bus" in res["msg"]
    assert "set method=service or method=modules" in res["msg"]
    assert [a for a in flapping.calls() if a[0] == "modprobe"] == [] and flapping.restarts() == 0
