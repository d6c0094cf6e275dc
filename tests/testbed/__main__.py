"""CLI: python -m tests.testbed up|down|status|refresh [options]"""
import argparse
import json
import sys

from .core import Testbed, TestbedError, status


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.testbed", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="bring the emulated cluster up")
    u.add_argument("--hosts", type=int, default=None, help="number of hosts (1..64; default: the scenario's)")
    u.add_argument("--scenario", default=None, help="scenario YAML (path or name in tests/scenarios)")
    u.add_argument("--no-slurm", action="store_true", help="skip munge/slurmctld/slurmd")
    u.add_argument("--workdir", default=None, help="default $GPURB_EMU or /tmp/gpurb-emu")
    d = sub.add_parser("down", help="tear everything down (idempotent)")
    d.add_argument("--workdir", default=None)
    s = sub.add_parser("status", help="show what is up")
    s.add_argument("--workdir", default=None)
    r = sub.add_parser("refresh", help="re-render every host's sysfs tree from its state")
    r.add_argument("--workdir", default=None)
    a = ap.parse_args(argv)
    try:
        if a.cmd == "up":
            tb = Testbed(scenario=a.scenario, hosts=a.hosts, workdir=a.workdir, slurm=not a.no_slurm)
            tb.up()
            print("up: %d hosts (%s..%s) in %.2fs" % (len(tb.hosts), tb.hosts[0], tb.hosts[-1], tb.timings["up_s"]))
            print("inventory:   %s" % tb.inventory_path)
            if tb.with_slurm:
                print("SLURM_CONF:  %s   (also in %s)" % (tb.slurm_conf, tb.slurm_env_path))
            print("job logs:    %s" % tb.job_log_dir)
        elif a.cmd == "down":
            tb = Testbed.__new__(Testbed)
            import os
            from .core import default_workdir
            tb.workdir = os.path.abspath(a.workdir or default_workdir())
            tb.job = None
            tb.down()
            print("down")
        elif a.cmd == "status":
            print(json.dumps(status(a.workdir), indent=1))
        elif a.cmd == "refresh":
            st = status(a.workdir)
            if not st.get("hosts"):
                print("not up", file=sys.stderr)
                return 1
            from . import fakehw
            import os
            for h in st["hosts"]:
                fakehw.refresh(os.path.join(st["workdir"], "hosts", h, "fakehw"))
            print("refreshed %d hosts" % len(st["hosts"]))
    except TestbedError as e:
        print("testbed: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
