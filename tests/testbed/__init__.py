"""Emulated GPU cluster testbed (network/UTS/mount namespaces + sshd + real Slurm + fake GPU/IB tools).

    python -m tests.testbed up --hosts 8 --scenario tests/scenarios/rack3-epoch35.yml
    python -m tests.testbed status
    python -m tests.testbed down

    from tests.testbed import Testbed
    with Testbed(scenario="rack3-epoch35") as tb:
        tb.run_ansible("gpu_nodes", "-m", "command", "-a", "hostname")
"""
from .core import Testbed, TestbedError, leftovers, our_netns, preflight, status  # noqa: F401

__all__ = ["Testbed", "TestbedError", "leftovers", "our_netns", "preflight", "status"]
