"""Fixtures for tests that need the emulated GPU cluster (tests/testbed).

* ``cluster``          session-scoped Testbed: 8 hosts, scenario rack3-epoch35, real Slurm.
* ``fresh_cluster``    the same cluster, hardware state reset to the scenario after the test.
* ``cluster_factory``  bring up another scenario: ``tb = cluster_factory("ib-flapping", hosts=2)``.
                       Only one testbed can be up at a time (fixed bridge/subnet), so the factory
                       takes the session cluster down first and brings it back afterwards.

When the machine cannot run the testbed (not root, no namespaces, no sshd/Slurm binaries) the
tests skip with a one-line reason -- except with ``CI=true``, where that is a failure.
Every test collected under tests/cluster gets the ``cluster`` marker.
"""
import contextlib
import os

import pytest

from tests.testbed import Testbed, preflight

_SESSION = {}


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.fspath).startswith(here + os.sep):
            item.add_marker(pytest.mark.cluster)


def require_testbed():
    reason = preflight()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("emulated cluster required on CI: %s" % reason, pytrace=False)
        pytest.skip(reason)


@contextlib.contextmanager
def own_testbed(scenario, hosts, slurm=True):
    """A module's own testbed: the session cluster down while it is up (one testbed at a time),
    back after; the testbed is torn down whatever happens."""
    require_testbed()
    sess = _SESSION.get("tb")
    restore = sess is not None and sess.is_up()
    if restore:
        sess.down()
    tb = Testbed(scenario=scenario, hosts=hosts, slurm=slurm)
    try:
        tb.up()
        yield tb
    finally:
        tb.down()
        if restore:
            sess.up()


@pytest.fixture(scope="session")
def cluster():
    require_testbed()
    tb = Testbed(scenario="rack3-epoch35", hosts=8, slurm=True)
    _SESSION["tb"] = tb
    try:
        tb.up()
        yield tb
    finally:
        _SESSION.pop("tb", None)
        tb.down()


@pytest.fixture
def fresh_cluster(cluster):
    """The session cluster, put back to the scenario's initial hardware state after the test
    (for tests that reset GPUs, restart openibd, inject faults...)."""
    try:
        yield cluster
    finally:
        if cluster.is_up():
            cluster.reset_state()


@pytest.fixture
def cluster_factory():
    require_testbed()
    made = []
    restore = []

    def make(scenario, hosts=None, slurm=False):
        sess = _SESSION.get("tb")
        if sess is not None and not restore and sess.is_up():
            restore.append(sess)
            sess.down()
        for old in made:
            old.down()
        tb = Testbed(scenario=scenario, hosts=hosts, slurm=slurm)
        made.append(tb)
        tb.up()
        return tb

    try:
        yield make
    finally:
        for tb in made:
            tb.down()
        for sess in restore:
            sess.up()
