"""Emulated GPU cluster: N hosts as network+UTS+mount namespaces with their own sshd,
real Slurm (munge + slurmctld + one slurmd per host) and stateful fake hardware.

Names (never shared with the reference recipe in ../shared): netns ``gpurb-<host>``, veth
``gpurbv<i>``, bridge ``gpurb0``, subnet 10.201.0.0/24 (controller .1, hosts .11...),
ip rule priority 101 -> table 201 (unreachable), workdir ``$GPURB_EMU`` or /tmp/gpurb-emu.
Everything started is recorded in pidfiles under the workdir; ``down`` stops only those
PIDs and the processes inside our own namespaces, and is idempotent.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from . import fakehw
from . import scenario as scn

PKG_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(os.path.dirname(PKG_DIR))
SCENARIO_DIR = os.path.join(REPO_DIR, "tests", "scenarios")
DEFAULT_SCENARIO = os.path.join(SCENARIO_DIR, "rack3-epoch35.yml")

NS_PREFIX = "gpurb-"
VETH_PREFIX = "gpurbv"
BRIDGE = "gpurb0"
NET = "10.201.0"
SUBNET = NET + ".0/24"
GUARD_NET = "10.201.0.0/16"
RULE_PRIO = "101"
RULE_TABLE = "201"
CTL_ADDR = NET + ".1"
SLURMCTLD_PORT = 6917
SLURMD_PORT = 6918
OWNER_FILE = "/run/gpurb-emu.json"
MAX_HOSTS = 64
FAKE_TOOLS = ["nvidia-smi", "ibstat", "ibv_devinfo", "perfquery", "dmesg", "journalctl", "systemctl", "modprobe",
              "nvidia-bug-report.sh",
              # the active tier's tests (fakehw.ACTIVE_TOOLS); one listed in the state's active.absent gets no
              # wrapper, so `command -v dcgmi` fails on that host as on a node without DCGM
              "dcgmi", "all_reduce_perf", "nvbandwidth", "ib_write_bw"]
# per host, the kernel between two tool calls: faulty ports keep flapping and counting (fakehw.py live)
LIVE_CMD = "/usr/bin/python3 -S /opt/fakehw/lib/fakehw.py live 0.5"
HOST_PATH = "/opt/fakehw/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def default_workdir():
    return os.environ.get("GPURB_EMU") or "/tmp/gpurb-emu"


def _run(cmd, check=True, input=None, timeout=60, env=None):
    return subprocess.run(cmd, input=input, capture_output=True, text=True, check=check, timeout=timeout, env=env)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def _read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ns_of(pid):
    try:
        return os.readlink("/proc/%d/ns/mnt" % pid)
    except OSError:
        return None


def _procs_of_workdir(wd):
    """PIDs of slurmctld/slurmd/munged/sshd started with a path under our workdir."""
    res = []
    mark = os.path.abspath(wd) + "/"
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        cl = _cmdline(int(d))
        heads = {t.rstrip(":").rsplit("/", 1)[-1] for t in cl.split(" ")[:2]}   # sshd retitles: "sshd: /usr/..."
        if mark in cl and heads & {"slurmctld", "slurmd", "munged", "sshd"}:
            res.append(int(d))
    return res


def our_netns():
    try:
        out = _run(["ip", "netns", "list"], check=False).stdout
    except OSError:
        return []
    return [line.split()[0] for line in out.splitlines() if line.startswith(NS_PREFIX)]


def preflight():
    """-> None when this machine can run the testbed, else a one-line reason."""
    if os.geteuid() != 0:
        return "emulated cluster needs root (network/mount namespaces)"
    for b in ("unshare", "nsenter", "ip", "ssh", "ssh-keygen", "mknod"):
        if not shutil.which(b):
            return "emulated cluster needs `%s` on PATH" % b
    for b in ("/usr/sbin/sshd", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged"):
        if not os.access(b, os.X_OK):
            return "emulated cluster needs %s (apt-get install openssh-server slurmctld slurmd munge)" % b
    for b in ("sbatch", "scontrol", "sinfo"):
        if not shutil.which(b):
            return "emulated cluster needs slurm-client (`%s`)" % b
    try:
        r = _run(["unshare", "--uts", "--mount", "--net", "true"], check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "cannot create namespaces: %s" % e
    if r.returncode != 0:
        return "cannot create namespaces: %s" % (r.stderr.strip().splitlines() or ["unshare failed"])[-1]
    return None


class TestbedError(RuntimeError):
    pass


class Testbed:
    """One emulated cluster. ``Testbed(scenario=..., hosts=None, workdir=None, slurm=True)``."""

    __test__ = False   # not a pytest test class

    def __init__(self, scenario=None, hosts=None, workdir=None, slurm=True):
        self.workdir = os.path.abspath(workdir or default_workdir())
        self.scenario_path = self._resolve_scenario(scenario)
        self.n_hosts = hosts
        self.with_slurm = slurm
        self._meta = None
        if self.scenario_path:
            self.sc = scn.load(self.scenario_path)
        else:
            self.sc = {"name": "healthy", "hosts": "node[01-08]", "rack": "rack1"}
        names = scn.host_names(self.sc, hosts)
        if not 1 <= len(names) <= MAX_HOSTS:
            raise TestbedError("hosts must be 1..%d (got %d)" % (MAX_HOSTS, len(names)))
        self.hosts = names
        self.rack = self.sc.get("rack", "rack1")
        self.addrs = {n: "%s.%d" % (NET, 11 + i) for i, n in enumerate(names)}
        self.job = None
        self.timings = {}

    # ------------------------------------------------------------------ paths
    @staticmethod
    def _resolve_scenario(s):
        if s is None:
            return DEFAULT_SCENARIO if os.path.exists(DEFAULT_SCENARIO) else None
        if os.path.exists(s):
            return os.path.abspath(s)
        for cand in (os.path.join(SCENARIO_DIR, s), os.path.join(SCENARIO_DIR, s + ".yml")):
            if os.path.exists(cand):
                return cand
        raise TestbedError("scenario not found: %s" % s)

    @property
    def cdir(self):
        return os.path.join(self.workdir, "cluster")

    @property
    def sdir(self):
        return os.path.join(self.workdir, "slurm")

    @property
    def mdir(self):
        return os.path.join(self.workdir, "munge")

    @property
    def inventory_path(self):
        return os.path.join(self.cdir, "inventory.ini")

    @property
    def slurm_conf(self):
        return os.path.join(self.sdir, "etc", "slurm.conf")

    @property
    def slurm_env_path(self):
        return os.path.join(self.cdir, "slurm.env")

    @property
    def ssh_key(self):
        return os.path.join(self.cdir, "id_ed25519")

    @property
    def control_path_dir(self):
        return os.path.join(self.cdir, "cp")

    @property
    def jobs_dir(self):
        return os.path.join(self.workdir, "jobs")

    @property
    def job_log_dir(self):
        jid = (self.job or {}).get("id") or (self.sc.get("job") or {}).get("id", 4242)
        return os.path.join(self.jobs_dir, str(jid))

    def host_root(self, name):
        return os.path.join(self.workdir, "hosts", name)

    def host_dir(self, name):
        """Controller-side path of what host ``name`` sees as /opt/fakehw."""
        self._check_host(name)
        return os.path.join(self.host_root(name), "fakehw")

    def netns(self, name):
        return NS_PREFIX + name

    def addr(self, name):
        return self.addrs[name]

    def _check_host(self, name):
        if name not in self.addrs:
            raise KeyError("unknown host %s (have %s..%s)" % (name, self.hosts[0], self.hosts[-1]))

    # ------------------------------------------------------------------ up
    def up(self):
        reason = preflight()
        if reason:
            raise TestbedError(reason)
        t0 = time.monotonic()
        self._claim()
        if any(leftovers().values()):
            self.down()              # leftovers of a crashed run (ours by name)
            self._claim()
        try:
            self._prepare_dirs()
            self._network()
            self._hosts_files()
            self.timings["files_s"] = time.monotonic() - t0
            self._start_hosts()
            self.timings["hosts_s"] = time.monotonic() - t0
            self._write_inventory()
            if self.with_slurm:
                self._slurm_up()
            self.timings["up_s"] = time.monotonic() - t0
            self._save_meta()
        except BaseException:
            try:
                self.down()
            finally:
                pass
            raise
        return self

    def _claim(self):
        os.makedirs(self.workdir, exist_ok=True)
        prev = None
        try:
            with open(OWNER_FILE) as f:
                prev = json.load(f).get("workdir")
        except (OSError, ValueError):
            pass
        if prev and prev != self.workdir and os.path.isdir(prev):
            # a testbed from another workdir is (or was) up: clean it with its own pidfiles
            Testbed.__new__(Testbed)._down_workdir(prev)
        with open(OWNER_FILE, "w") as f:
            json.dump({"workdir": self.workdir, "pid": os.getpid(), "time": time.time()}, f)

    def _prepare_dirs(self):
        c = self.cdir
        os.makedirs(c, exist_ok=True)
        os.makedirs(self.control_path_dir, exist_ok=True)
        if not os.path.exists("/opt/fakehw"):      # mount point only (empty in the root namespace)
            os.makedirs("/opt/fakehw")
            with open(os.path.join(c, "created-opt-fakehw"), "w") as f:
                f.write("1\n")
        os.makedirs("/run/sshd", exist_ok=True)
        if not os.path.exists(self.ssh_key):
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpurb-testbed", "-f", self.ssh_key])
            shutil.copy(self.ssh_key + ".pub", os.path.join(c, "authorized_keys"))
        hk = os.path.join(c, "ssh_host_ed25519_key")
        if not os.path.exists(hk):
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hk])
        with open(os.path.join(c, "resolv.conf"), "w") as f:
            f.write("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        with open(os.path.join(c, "etc-hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n%s ctl\n" % CTL_ADDR)
            for n in self.hosts:
                f.write("%s %s\n" % (self.addrs[n], n))

    def _network(self):
        cmds = ["route replace unreachable %s" % GUARD_NET,
                "link add %s type bridge" % BRIDGE,
                "addr add %s/24 dev %s" % (CTL_ADDR, BRIDGE),
                "link set %s up" % BRIDGE,
                "rule add iif %s priority %s lookup %s" % (BRIDGE, RULE_PRIO, RULE_TABLE),
                "route replace unreachable default table %s" % RULE_TABLE]
        for i, n in enumerate(self.hosts):
            v = "%s%d" % (VETH_PREFIX, i + 1)
            cmds += ["netns add %s" % self.netns(n),
                     "link add %s type veth peer name eth0 netns %s" % (v, self.netns(n)),
                     "link set %s master %s up" % (v, BRIDGE)]
        r = _run(["ip", "-batch", "-"], input="\n".join(cmds) + "\n", check=False)
        if r.returncode != 0:
            raise TestbedError("ip -batch failed: %s" % r.stderr.strip())

    def _build_states(self, now):
        """scn.build + the scenario's ``hardware:`` overlay (fake-hardware knobs per host)."""
        job, states, faults = scn.build(self.sc, self.hosts, self.addrs, now)
        apply_hardware(states, self.sc.get("hardware"))
        return job, states, faults

    def _hosts_files(self):
        now = time.time()
        self.built_at = now
        job, states, faults = self._build_states(now)
        self.job = {k: v for k, v in job.items() if k != "epoch_durations"}
        self.faults = faults
        os.makedirs(self.jobs_dir, exist_ok=True)
        scn.write_job_logs(self.sc, job, states, faults, self.hosts, self.jobs_dir)
        src = os.path.join(PKG_DIR, "fakehw.py")
        for n in self.hosts:
            d = self.host_root(n)
            fh = os.path.join(d, "fakehw")
            for sub in ("bin", "lib", "dev", "services", "sys", "log", "proc"):
                os.makedirs(os.path.join(fh, sub), exist_ok=True)
            os.makedirs(os.path.join(d, "root"), mode=0o700, exist_ok=True)
            os.makedirs(os.path.join(d, "cgroup"), exist_ok=True)
            for rc in (".bashrc", ".profile"):
                with open(os.path.join(d, "root", rc), "w") as f:
                    f.write("export PATH=%s\n" % HOST_PATH)
            shutil.copy(src, os.path.join(fh, "lib", "fakehw.py"))
            write_tool_wrappers(fh, states[n])
            p = os.path.join(fh, "bin", "fakehw-refresh")
            with open(p, "w") as f:
                f.write('#!/bin/sh\nexec /usr/bin/python3 -S /opt/fakehw/lib/fakehw.py refresh "$@"\n')
            os.chmod(p, 0o755)
            for g in range(len(states[n]["gpus"])):
                dev = os.path.join(fh, "dev", "nvidia%d" % g)
                if not os.path.exists(dev):
                    os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))
            with open(os.path.join(fh, "services", "slurmd.start"), "w") as f:
                f.write("SLURM_CONF=%s /usr/sbin/slurmd -f %s\n" % (self.slurm_conf, self.slurm_conf))
            with open(os.path.join(fh, "services", "slurmd.pidfile"), "w") as f:
                f.write(os.path.join(self.sdir, "slurmd-%s.pid" % n) + "\n")
            open(os.path.join(fh, "commands.log"), "w").close()
            fakehw.save(states[n], fh)
            fakehw.render_sysfs(states[n], fh, now)
            with open(os.path.join(d, "sshd_config"), "w") as f:
                f.write(self._sshd_config(n))

    def _sshd_config(self, n):
        c = self.cdir
        d = self.host_root(n)
        return "\n".join([
            "ListenAddress %s:22" % self.addrs[n],
            "HostKey %s/ssh_host_ed25519_key" % c,
            "PidFile %s/sshd.pid" % d,
            "AuthorizedKeysFile %s/authorized_keys" % c,
            "StrictModes no", "PermitRootLogin prohibit-password", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "UsePAM no", "UseDNS no", "PrintMotd no", "PrintLastLog no",
            "MaxStartups 200:30:400", "MaxSessions 100",
            "SetEnv PATH=%s FAKEHW_HOST=%s FAKEHW_ROOT=/opt/fakehw" % (HOST_PATH, n),
            "Subsystem sftp /usr/lib/openssh/sftp-server", ""])

    def _start_hosts(self):
        procs = []
        for n in self.hosts:
            d = self.host_root(n)
            try:
                os.unlink(os.path.join(d, "sshd.pid"))
            except OSError:
                pass
            script = " && ".join([
                "ip addr add %s/24 dev eth0" % self.addrs[n], "ip link set lo up", "ip link set eth0 up",
                "ip route add default via %s" % CTL_ADDR, "hostname %s" % n,
                "mount --rbind /sys/fs/cgroup %s/cgroup" % d, "mount -t sysfs sysfs /sys",
                "mount --move %s/cgroup /sys/fs/cgroup" % d,
                "mount --bind %s/fakehw /opt/fakehw" % d, "mount --bind %s/root /root" % d,
                # own /var/log: kern.log rendered from the host state (the gather module's last fallback)
                "mount --bind %s/fakehw/log /var/log" % d,
                "mount --bind %s/etc-hosts /etc/hosts" % self.cdir,
                "mount --bind %s/resolv.conf /etc/resolv.conf" % self.cdir,
                "(setsid %s </dev/null >/dev/null 2>&1 &)" % LIVE_CMD,
                "exec /usr/sbin/sshd -f %s/sshd_config -E %s/sshd.log" % (d, d)])
            # NB: nsenter + own sysfs mount, not `ip netns exec` (it hides /sys/fs/cgroup)
            procs.append((n, subprocess.Popen(
                ["nsenter", "--net=/run/netns/%s" % self.netns(n), "--", "unshare", "--uts", "--mount",
                 "--propagation", "private", "--", "/bin/sh", "-c", script],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for n, p in procs:
            out, _ = p.communicate(timeout=60)
            if p.returncode != 0:
                raise TestbedError("host %s failed to start: %s" % (n, out.strip()))
        deadline = time.monotonic() + 20
        for n in self.hosts:
            self._wait_sshd(n, deadline)

    def _wait_sshd(self, name, deadline):
        while True:
            try:
                socket.create_connection((self.addrs[name], 22), timeout=0.5).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise TestbedError("sshd of %s not answering on %s:22" % (name, self.addrs[name]))
                time.sleep(0.02)

    def _write_inventory(self):
        lines = ["# written by `python -m tests.testbed up` (scenario %s)" % self.sc.get("name"),
                 "[%s]" % self.rack]
        for n in self.hosts:
            lines.append("%s ansible_host=%s" % (n, self.addrs[n]))
        lines += ["", "[gpu_nodes:children]", self.rack, "", "[gpu_nodes:vars]", "ansible_user=root",
                  "ansible_ssh_private_key_file=%s" % self.ssh_key,
                  "ansible_python_interpreter=/usr/bin/python3",
                  "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                  "-o LogLevel=ERROR'",
                  "gpu_health_sysfs_root=/opt/fakehw/sys",
                  # ib_restart's holder check reads the host's own /proc view, rendered from its state
                  "rung_ib_restart_sysfs_root=/opt/fakehw/sys", "rung_ib_restart_proc_root=/opt/fakehw/proc",
                  "rung_gpu_reset_proc_root=/opt/fakehw/proc", ""]
        with open(self.inventory_path, "w") as f:
            f.write("\n".join(lines))
        with open(self.slurm_env_path, "w") as f:
            f.write("SLURM_CONF=%s\n" % self.slurm_conf)

    # ------------------------------------------------------------------ slurm
    def _slurm_conf_text(self):
        s = self.sdir
        # RebootProgram (scontrol reboot needs one): slurmd runs it inside the host's namespaces. It
        # never reboots anything: it logs the call as a JSON line in the host's own
        # /opt/fakehw/commands.log and then "boots" by restarting only that host's slurmd with -b
        # (reports a fresh boot), so slurmctld ends the reboot (nextstate) in seconds instead of
        # setting the node DOWN "reboot timed out" after ResumeTimeout (default 60 s).
        reboot_prog = os.path.join(s, "etc", "fake-reboot")
        os.makedirs(os.path.dirname(reboot_prog), exist_ok=True)
        with open(reboot_prog, "w") as f:
            f.write("\n".join([
                "#!/usr/bin/python3 -S", "# testbed RebootProgram (tests/testbed/core.py): reboots nothing",
                "import json, os, subprocess, sys, time",
                "host = os.uname().nodename",
                "rec = {'t': round(time.time(), 6), 'time': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),",
                "       'host': host, 'cmd': 'reboot', 'argv': ['reboot'] + sys.argv[1:], 'pid': os.getpid()}",
                "fd = os.open('/opt/fakehw/commands.log', os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)",
                "os.write(fd, (json.dumps(rec) + chr(10)).encode())",
                "os.close(fd)",
                "subprocess.run(['/usr/bin/python3', '-S', '/opt/fakehw/lib/fakehw.py', 'boot'], timeout=30)",
                "pid = '@PIDFILE@' % host",
                "boot = ('sleep 1; p=$(cat ' + pid + '); kill $p; i=0; while kill -0 $p 2>/dev/null && '",
                "        '[ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; '",
                "        'exec env SLURM_CONF=@CONF@ /usr/sbin/slurmd -b -f @CONF@')",
                "subprocess.Popen(['/bin/sh', '-c', boot], start_new_session=True, stdin=subprocess.DEVNULL,",
                "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)", ""]
            ).replace("@PIDFILE@", os.path.join(s, "slurmd-%s.pid")).replace("@CONF@", self.slurm_conf))
        os.chmod(reboot_prog, 0o755)
        lines = [
            "ClusterName=gpurb", "SlurmctldHost=ctl(%s)" % CTL_ADDR, "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge",
            "AuthInfo=socket=%s/munge.socket" % self.mdir,
            "SlurmctldPort=%d" % SLURMCTLD_PORT, "SlurmdPort=%d" % SLURMD_PORT,
            "StateSaveLocation=%s/state" % s, "SlurmdSpoolDir=%s/spool/%%n" % s,
            "SlurmctldPidFile=%s/slurmctld.pid" % s, "SlurmdPidFile=%s/slurmd-%%n.pid" % s,
            "SlurmctldLogFile=%s/log/slurmctld.log" % s, "SlurmdLogFile=%s/log/slurmd-%%n.log" % s,
            "SlurmctldDebug=info", "SlurmdDebug=info", "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none", "MpiDefault=none",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "SlurmdParameters=config_overrides", "ReturnToService=2", "SlurmdTimeout=30",
            "MessageTimeout=10", "KillWait=2", "GresTypes=gpu", "RebootProgram=%s" % reboot_prog]
        for n in self.hosts:
            lines.append("NodeName=%s NodeAddr=%s CPUs=2 RealMemory=1000 Gres=gpu:h100:8 State=UNKNOWN"
                         % (n, self.addrs[n]))
        lines.append("PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        return "\n".join(lines) + "\n"

    @property
    def slurm_environ(self):
        e = dict(os.environ)
        e["SLURM_CONF"] = self.slurm_conf
        return e

    def _slurm_up(self):
        s = self.sdir
        for sub in ("etc", "state", "log"):
            os.makedirs(os.path.join(s, sub), exist_ok=True)
        for n in self.hosts:
            os.makedirs(os.path.join(s, "spool", n), exist_ok=True)
        with open(self.slurm_conf, "w") as f:
            f.write(self._slurm_conf_text())
        with open(os.path.join(s, "etc", "gres.conf"), "w") as f:
            for n in self.hosts:
                f.write("NodeName=%s Name=gpu Type=h100 File=/opt/fakehw/dev/nvidia[0-7]\n" % n)
        try:
            socket.create_connection(("127.0.0.1", SLURMCTLD_PORT), timeout=0.5).close()
            raise TestbedError("port %d is busy (a stale slurmctld?); run `python -m tests.testbed down`"
                               % SLURMCTLD_PORT)
        except OSError:
            pass
        # own munged (own socket/key), never the system one
        m = self.mdir
        os.makedirs(m, exist_ok=True)
        key = os.path.join(m, "munge.key")
        if not os.path.exists(key):
            with open(key, "wb") as f:
                f.write(os.urandom(128))
        os.chmod(m, 0o700)
        os.chmod(key, 0o400)
        # as root (--force): works for any workdir, e.g. a 0700 pytest tmp_path; slurm runs as root too
        r = _run(["/usr/sbin/munged", "--force",
                  "--socket=%s/munge.socket" % m, "--key-file=%s" % key, "--pid-file=%s/munged.pid" % m,
                  "--log-file=%s/munged.log" % m, "--seed-file=%s/munged.seed" % m], check=False)
        if r.returncode != 0:
            raise TestbedError("munged failed: %s" % (r.stderr or r.stdout).strip())
        self.start_slurmctld()
        procs = []
        for n in self.hosts:
            pid = _read_pid(os.path.join(self.host_root(n), "sshd.pid"))
            procs.append((n, subprocess.Popen(
                ["nsenter", "-t", str(pid), "-n", "-u", "-m", "--", "env", "SLURM_CONF=%s" % self.slurm_conf,
                 "/usr/sbin/slurmd", "-f", self.slurm_conf], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True)))
        for n, p in procs:
            out, _ = p.communicate(timeout=60)
            if p.returncode != 0:
                raise TestbedError("slurmd on %s failed: %s" % (n, out.strip()))
        self.wait_nodes(lambda st: st == "idle", timeout=30)

    def start_slurmctld(self):
        env = self.slurm_environ
        # slurmctld insists that its hostname == SlurmctldHost: own UTS namespace with hostname ctl
        r = _run(["unshare", "--uts", "--", "/bin/sh", "-c",
                  "hostname ctl; exec /usr/sbin/slurmctld -i -f %s" % self.slurm_conf], check=False, env=env)
        if r.returncode != 0:
            raise TestbedError("slurmctld failed: %s" % (r.stderr or r.stdout).strip())
        deadline = time.monotonic() + 30
        while "is UP" not in _run(["scontrol", "ping"], check=False, env=env).stdout:
            if time.monotonic() > deadline:
                raise TestbedError("slurmctld not UP; see %s/log/slurmctld.log" % self.sdir)
            time.sleep(0.1)

    # ------------------------------------------------------------------ faults of the cluster itself
    # (tests/cluster/test_cluster_faults.py): real daemons stopped, paused or killed, by their pid.
    def slurmctld_signal(self, sig):
        """Send slurmctld a signal: SIGSTOP/SIGCONT make it slow (clients time out), SIGTERM stops it."""
        pid = _read_pid(os.path.join(self.sdir, "slurmctld.pid"))
        if not pid or not _pid_alive(pid):
            raise TestbedError("slurmctld is not running")
        os.kill(pid, sig)
        return pid

    def stop_slurmctld(self, timeout=30):
        pid = self.slurmctld_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)

    def _host_procs(self, name):
        out = _run(["ip", "netns", "pids", self.netns(name)], check=False).stdout
        return [int(p) for p in out.split()]

    def kill_sshd(self, name):
        """The host's sshd and every session it serves die (SIGKILL), as when a node's sshd crashes:
        ansible's persistent connection to it breaks too. The host's other processes live on."""
        self._check_host(name)
        killed = []
        for pid in self._host_procs(name):
            if _cmdline(pid).split(" ")[0].rstrip(":") in ("sshd", "/usr/sbin/sshd"):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except ProcessLookupError:
                    pass
        return killed

    def start_sshd(self, name):
        """sshd again, in the host's own namespaces (entered through any process still living there)."""
        self._check_host(name)
        mine = os.readlink("/proc/self/ns/mnt")
        inside = [p for p in self._host_procs(name) if _ns_of(p) not in (None, mine)]
        if not inside:
            raise TestbedError("no process left in %s's namespaces to start sshd from" % name)
        d = self.host_root(name)
        _run(["nsenter", "-t", str(inside[0]), "-n", "-u", "-m", "--",
              "/usr/sbin/sshd", "-f", "%s/sshd_config" % d, "-E", "%s/sshd.log" % d])
        self._wait_sshd(name, time.monotonic() + 20)

    def sinfo_states(self):
        out = _run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False, env=self.slurm_environ).stdout
        res = {}
        for line in out.splitlines():
            p = line.split()
            if len(p) == 2:
                res[p[0]] = p[1]
        return res

    def wait_nodes(self, pred, nodes=None, timeout=30):
        nodes = nodes or self.hosts
        deadline = time.monotonic() + timeout
        while True:
            st = self.sinfo_states()
            if all(pred(st.get(n, "")) for n in nodes):
                return st
            if time.monotonic() > deadline:
                raise TestbedError("slurm nodes not ready: %s" % st)
            time.sleep(0.2)

    def slurm(self, *args, check=True, timeout=30):
        return _run(list(args), check=check, env=self.slurm_environ, timeout=timeout)

    def sbatch(self, nodes, wrap="sleep 300", name="gpurb-test", extra=()):
        r = self.slurm("sbatch", "--parsable", "-J", name, "-N", str(len(nodes)), "-w", ",".join(nodes),
                       "-o", "/dev/null", "--chdir", "/tmp", *extra, "--wrap", wrap)
        return int(r.stdout.strip().split(";")[0])

    def scontrol_show(self, kind, name):
        out = self.slurm("scontrol", "show", "-o", kind, str(name)).stdout
        res = {}
        for tok in out.split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                res.setdefault(k, v)
        return res

    # ------------------------------------------------------------------ state & commands
    def state(self, name):
        fh = self.host_dir(name)
        with fakehw.locked(fh):
            st = fakehw.load(fh)
            fakehw.render_sysfs(st, fh)
        now = time.time()
        for h in st["hcas"]:
            h["counters"] = fakehw.counters(h, st, now)
            h["state"], h["phys_state"] = fakehw.port_state(h, st, now)
        return st

    def update_state(self, name, fn):
        fh = self.host_dir(name)
        with fakehw.locked(fh):
            st = fakehw.load(fh)
            fn(st)
            fakehw.save(st, fh)
            fakehw.render_sysfs(st, fh)
            write_tool_wrappers(fh, st)         # active.absent may have changed

    def set_active(self, name, gpus=None, **knobs):
        """Set the active-test knobs of a running host (fakehw.py's module doc): ``knobs`` merge into
        ``state["active"]`` (``absent``/``hang`` lists replace), ``gpus={index: {"dcgm_fail": {...},
        "h2d_gbps": 20}}`` merge into those GPUs; a value None removes the knob. Tool wrappers follow
        ``absent`` at once."""
        def fn(st):
            act = st.setdefault("active", {})
            for k, v in knobs.items():
                if v is None:
                    act.pop(k, None)
                else:
                    act[k] = v
            for idx, over in (gpus or {}).items():
                g = st["gpus"][int(idx)]
                for k, v in over.items():
                    if v is None:
                        g.pop(k, None)
                    else:
                        g[k] = v
        self.update_state(name, fn)

    def set_fault(self, name, type, **kw):
        """Inject a fault of the catalogue into a running host, starting now."""
        self._check_host(name)
        job = self.job or scn.job_params(self.sc, time.time())
        f = dict(kw, type=type)
        f.setdefault("at_minutes", (time.time() - job["incident"]) / 60.0)
        f.setdefault("fatal", False)
        idx = self.hosts.index(name)
        self.update_state(name, lambda st: scn.apply_fault(st, f, job, idx) or st["kernel"].sort(
            key=lambda e: e["t"]))

    def reset_state(self, names=None):
        """Back to the scenario's initial hardware state (same times), clear command logs and kill
        fake tools still hanging on the hosts. Hosts, sshd and Slurm stay up."""
        now = getattr(self, "built_at", None) or time.time()
        _job, states, _faults = self._build_states(now)
        for n in (names or self.hosts):
            out = _run(["ip", "netns", "pids", self.netns(n)], check=False).stdout
            for p in out.split():
                cl = _cmdline(int(p))
                if "/opt/fakehw/lib/fakehw.py" in cl and " live " not in cl + " ":
                    try:
                        os.kill(int(p), signal.SIGKILL)
                    except OSError:
                        pass
            fh = self.host_dir(n)
            with fakehw.locked(fh):
                fakehw.save(states[n], fh)
                fakehw.render_sysfs(states[n], fh)
                write_tool_wrappers(fh, states[n])
            open(os.path.join(fh, "commands.log"), "w").close()

    def break_tool(self, name, tool, message=None, rc=1):
        """Make a fake fail like a missing/forbidden tool; message None restores it."""
        def fn(st):
            b = st.setdefault("broken_tools", {})
            if message is None:
                b.pop(tool, None)
            else:
                b[tool] = {"message": message, "rc": rc}
        self.update_state(name, fn)

    def clear_hang(self, name):
        self.update_state(name, lambda st: st.update(hang=False))

    def set_processes(self, name, gpu, procs=None):
        """procs: list of {"pid", "name", "mem"}; None -> one pt_main_thread; [] -> none."""
        if procs is None:
            procs = [{"pid": 50000 + int(gpu), "name": "pt_main_thread", "mem": 71234}]

        def fn(st):
            g = st["gpus"][int(gpu)]
            g["processes"] = list(procs)
            g["mem_used"] = sum(p["mem"] for p in procs)
        self.update_state(name, fn)

    def refresh(self, name=None):
        for n in ([name] if name else self.hosts):
            fh = self.host_dir(n)
            with fakehw.locked(fh):
                fakehw.render_sysfs(fakehw.load(fh), fh)

    def sysfs(self, name, hca, leaf):
        """Read <sysfs_root>/class/infiniband/<hca>/ports/1/<leaf> as the host sees it (after refresh)."""
        self.refresh(name)
        with open(os.path.join(self.host_dir(name), "sys", "class", "infiniband", hca, "ports", "1", leaf)) as f:
            return f.read().strip()

    def commands(self, name):
        res = []
        try:
            with open(os.path.join(self.host_dir(name), "commands.log")) as f:
                for line in f:
                    if line.strip():
                        res.append(json.loads(line))
        except FileNotFoundError:
            pass
        return res

    def clear_commands(self, name=None):
        for n in ([name] if name else self.hosts):
            open(os.path.join(self.host_dir(n), "commands.log"), "w").close()

    # ------------------------------------------------------------------ access
    def ssh_cmd(self, name):
        return ["ssh", "-i", self.ssh_key, "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-o", "ControlMaster=no", "-o", "ConnectTimeout=5",
                "root@%s" % self.addrs[name]]

    def ssh(self, name, command, timeout=30, check=False):
        self._check_host(name)
        return _run(self.ssh_cmd(name) + [command], check=check, timeout=timeout)

    def ansible_env(self, extra=None):
        env = dict(os.environ)
        cfg = os.path.join(REPO_DIR, "ansible.cfg")
        if os.path.exists(cfg):
            env["ANSIBLE_CONFIG"] = cfg
        else:
            env.update({"ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_PIPELINING": "True",
                        "ANSIBLE_FORKS": "32", "ANSIBLE_GATHERING": "explicit"})
        # masters live where `down` can close them (pitfall 1: no ControlPath in ssh_args)
        env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = self.control_path_dir
        env["SLURM_CONF"] = self.slurm_conf
        env.setdefault("ANSIBLE_NOCOLOR", "1")
        env.update(extra or {})
        return env

    def ansible_bin(self, tool="ansible"):
        cand = os.path.join(os.path.dirname(sys.executable), tool)
        if os.path.exists(cand):
            return cand
        cand = os.path.join(REPO_DIR, ".venv", "bin", tool)
        return cand if os.path.exists(cand) else (shutil.which(tool) or tool)

    def run_ansible(self, *args, tool="ansible", timeout=600, env=None):
        cmd = [self.ansible_bin(tool), "-i", self.inventory_path] + list(args)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.ansible_env(env),
                              cwd=REPO_DIR)

    # ------------------------------------------------------------------ meta / status
    def _save_meta(self):
        meta = {"workdir": self.workdir, "scenario": self.scenario_path, "hosts": self.hosts, "addrs": self.addrs,
                "rack": self.rack, "slurm": self.with_slurm, "job": self.job, "timings": self.timings,
                "up_at": time.time()}
        with open(os.path.join(self.workdir, "testbed.json"), "w") as f:
            json.dump(meta, f, indent=1, default=str)

    def is_up(self):
        return all(os.path.exists("/run/netns/" + self.netns(n)) for n in self.hosts) and \
            os.path.exists(os.path.join(self.workdir, "testbed.json"))

    def started_pids(self):
        """PIDs this testbed started or that live in its namespaces (for leak checks)."""
        pids = set()
        for ns in our_netns():
            out = _run(["ip", "netns", "pids", ns], check=False).stdout
            pids.update(int(p) for p in out.split())
        for pf in self._pidfiles(self.workdir):
            p = _read_pid(pf)
            if p and _pid_alive(p):
                pids.add(p)
        return pids

    # ------------------------------------------------------------------ down
    @staticmethod
    def _pidfiles(workdir):
        s = os.path.join(workdir, "slurm")
        res = []
        if os.path.isdir(s):
            res += [os.path.join(s, f) for f in sorted(os.listdir(s)) if f.startswith("slurmd-") and f.endswith(".pid")]
        res += [os.path.join(s, "slurmctld.pid"), os.path.join(workdir, "munge", "munged.pid")]
        hd = os.path.join(workdir, "hosts")
        if os.path.isdir(hd):
            res += [os.path.join(hd, h, "sshd.pid") for h in sorted(os.listdir(hd))]
        return res

    def down(self):
        wds = [self.workdir]
        try:
            with open(OWNER_FILE) as f:
                o = json.load(f).get("workdir")
            if o and o not in wds:
                wds.append(o)
        except (OSError, ValueError):
            pass
        for wd in wds:
            self._down_workdir(wd)
        try:
            os.unlink(OWNER_FILE)
        except OSError:
            pass
        self.job = None

    def _down_workdir(self, wd):
        expect = {"slurmd": "slurmd", "slurmctld": "slurmctld", "munged": "munged", "sshd": "sshd"}
        # 1. ssh ControlPersist masters (client side) first: they keep `sshd: root@notty` alive
        cp = os.path.join(wd, "cluster", "cp")
        if os.path.isdir(cp):
            closers = [subprocess.Popen(["ssh", "-o", "ControlPath=%s" % os.path.join(cp, s), "-O", "exit", "x"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                       for s in os.listdir(cp)]
            for c in closers:
                try:
                    c.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    c.kill()
                    c.wait()
        # 2. daemons from our pidfiles (only if the pid still runs the expected binary)
        victims = []
        for pf in Testbed._pidfiles(wd):
            p = _read_pid(pf)
            base = os.path.basename(pf).split("-")[0].split(".")[0]
            want = expect.get(base, base)
            if p and _pid_alive(p) and want in _cmdline(p):
                victims.append(p)
        # 2b. our daemons whose pidfile is gone (crashed run): identified by our workdir in their argv
        victims += _procs_of_workdir(wd)
        # 3. everything living in our own network namespaces
        nss = our_netns()
        for ns in nss:
            out = _run(["ip", "netns", "pids", ns], check=False).stdout
            victims += [int(x) for x in out.split()]
        victims = sorted(set(victims))
        for p in victims:
            try:
                os.kill(p, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + 5
        while any(_pid_alive(p) for p in victims) and time.monotonic() < deadline:
            time.sleep(0.05)
        for p in victims:
            if _pid_alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        for ns in nss:
            out = _run(["ip", "netns", "pids", ns], check=False).stdout
            for x in out.split():
                try:
                    os.kill(int(x), signal.SIGKILL)
                except OSError:
                    pass
        # reap zombies of children we spawned ourselves (hang tests etc.)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        # 4. network objects
        cmds = []
        links = os.listdir("/sys/class/net") if os.path.isdir("/sys/class/net") else []
        for l_ in links:
            if l_.startswith(VETH_PREFIX):
                cmds.append("link del %s" % l_)
        for ns in nss:
            cmds.append("netns del %s" % ns)
        if BRIDGE in links:
            cmds.append("link del %s" % BRIDGE)
        if cmds:
            _run(["ip", "-force", "-batch", "-"], input="\n".join(cmds) + "\n", check=False)
        for _ in range(10):
            r = _run(["ip", "rule", "del", "iif", BRIDGE], check=False)
            if r.returncode != 0:
                break
        _run(["ip", "route", "flush", "table", RULE_TABLE], check=False)
        _run(["ip", "route", "del", "unreachable", GUARD_NET], check=False)
        # 5. files (keep nothing: state, logs, keys); the /opt/fakehw mount point only if we made it
        if os.path.exists(os.path.join(wd, "cluster", "created-opt-fakehw")):
            try:
                os.rmdir("/opt/fakehw")
            except OSError:
                pass
        for sub in ("hosts", "cluster", "slurm", "munge", "jobs", "testbed.json"):
            p = os.path.join(wd, sub)
            if os.path.isdir(p):
                shutil.rmtree(p, ignore_errors=True)
            elif os.path.exists(p):
                os.unlink(p)
        try:
            os.rmdir(wd)
        except OSError:
            pass

    # ------------------------------------------------------------------ context manager
    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()
        return False


def _merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = v


def write_tool_wrappers(fh, st):
    """``<fh>/bin/<tool>``: one ``sh`` wrapper per FAKE_TOOLS entry that execs fakehw.py; a tool named in the
    state's ``active.absent`` (fakehw.absent_tools) has none -- an old wrapper is removed -- so the host's
    shell answers ``command not found`` (127) for it, as on a node where it is not installed."""
    absent = set(fakehw.absent_tools(st))
    os.makedirs(os.path.join(fh, "bin"), exist_ok=True)
    for tool in FAKE_TOOLS:
        p = os.path.join(fh, "bin", tool)
        if tool in absent:
            if os.path.lexists(p):
                os.unlink(p)
            continue
        text = '#!/bin/sh\nexec /usr/bin/python3 -S /opt/fakehw/lib/fakehw.py %s "$@"\n' % tool
        try:
            with open(p) as f:
                if f.read() == text:
                    continue
        except OSError:
            pass
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o755)


def apply_hardware(states, hw):
    """A scenario's ``hardware:`` overlay on the built host states (fakehw.py's knobs)::

        hardware:
          all: {reset_refuses_on_persistence: true}           # every host (or a hostlist)
          gpu-r1-n02:
            gpus: {1: {processes: [{pid: 4711, name: python, mem: 1200}]}}    # by GPU index
            hcas: {mlx5_0: {rate: "200 Gb/sec (4X HDR)"}}                    # by HCA name
            ib_holders: [{pid: 5120, comm: ibacm, device: null}]
          gpu-r1-n03:
            active: {dcgm: hostengine_down, absent: [nvbandwidth]}            # active-test knobs
            gpus: {3: {dcgm_fail: {test: memory, error_id: 58}, h2d_gbps: 20}}

    Top-level keys replace, dicts merge (``active`` too: ``all: {active: {seconds: 0.1}}`` and a host's
    ``active: {...}`` combine); a GPU's ``mem_used`` follows its processes. The scenario's own ``active:``
    block (scenario.apply_active) is applied first, by scn.build."""
    for sel, over in (hw or {}).items():
        names = list(states) if sel == "all" else [n for n in scn.expand_hostlist(sel) if n in states]
        for n in names:
            st = states[n]
            for k, v in (over or {}).items():
                if k == "gpus":
                    for idx, g in v.items():
                        gpu = st["gpus"][int(idx)]
                        _merge(gpu, g)
                        if "processes" in g and "mem_used" not in g:
                            gpu["mem_used"] = sum(int(p.get("mem", 0)) for p in gpu["processes"])
                elif k == "hcas":
                    for name, h in v.items():
                        _merge(next(x for x in st["hcas"] if x["name"] == name), h)
                elif k == "active" and isinstance(v, dict):
                    _merge(st.setdefault("active", {}), json.loads(json.dumps(v)))   # a copy per host
                else:
                    st[k] = v


def leftovers():
    """Things a testbed may leave behind (all must be empty after down)."""
    res = {"netns": our_netns(), "links": [], "rules": [], "routes": []}
    if os.path.isdir("/sys/class/net"):
        res["links"] = [x for x in os.listdir("/sys/class/net") if x == BRIDGE or x.startswith(VETH_PREFIX)]
    rules = _run(["ip", "rule"], check=False).stdout
    res["rules"] = [r_ for r_ in rules.splitlines() if BRIDGE in r_ or "lookup %s" % RULE_TABLE in r_]
    routes = _run(["ip", "route", "show", "table", RULE_TABLE], check=False).stdout.strip()
    main = _run(["ip", "route"], check=False).stdout
    res["routes"] = ([routes] if routes else []) + [r_ for r_ in main.splitlines() if "10.201." in r_]
    return res


def status(workdir=None):
    wd = os.path.abspath(workdir or default_workdir())
    meta = None
    try:
        with open(os.path.join(wd, "testbed.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        pass
    res = {"workdir": wd, "up": bool(meta) and bool(our_netns()), "netns": len(our_netns()), "leftovers": leftovers()}
    if meta:
        res.update({"scenario": meta.get("scenario"), "hosts": meta.get("hosts"), "slurm": meta.get("slurm"),
                    "inventory": os.path.join(wd, "cluster", "inventory.ini"),
                    "slurm_conf": os.path.join(wd, "slurm", "etc", "slurm.conf"),
                    "job_log_dir": os.path.join(wd, "jobs", str((meta.get("job") or {}).get("id")))})
        alive = {}
        for h in meta.get("hosts", []):
            p = _read_pid(os.path.join(wd, "hosts", h, "sshd.pid"))
            alive[h] = bool(p and _pid_alive(p))
        res["sshd_alive"] = sum(alive.values())
        if meta.get("slurm"):
            e = dict(os.environ, SLURM_CONF=res["slurm_conf"])
            r = _run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False, env=e, timeout=15)
            res["slurm_nodes"] = dict(line.split() for line in r.stdout.splitlines() if len(line.split()) == 2)
    return res
